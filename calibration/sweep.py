"""The calibration sweep: train candidate splits briefly with TRL and time them.

This module measures the splits it is given in one process: one model load, every split
restarting from the same trainable weights (the adapters; for a full fine-tune every
weight, restored from a CPU copy) and a fresh optimizer (each split has its own trainer).
By default on a GPU :mod:`gacost.calibration.run` gives it one split per process, so each
split runs as the user's own script would (a fresh process, one trainer). Splits run
largest micro-batch first (usually the fastest, so the slower ones can be dropped early).
Per split: ``warmup`` untimed updates, then timed updates until the median's 95% CI is
within ``rel_tol``, or ``max_seconds`` of timed updates (at least ``min_timed``) or
``max_timed`` updates have passed, or the split is clearly slower than the best one so
far (``dropped``). An out-of-memory split is a result (``oom``); micro-batches above it
are not run (``skipped``). The profile is rewritten atomically after every split.

The estimate is the median of the timed updates (:func:`stats.estimate`): a user's bill
pays for bursts of host interference too; updates above the outlier fence are counted in
the split's note. With ``passes = 2`` every ``ok`` split is timed again after all splits
have run, in reverse order, one warm-up update each, and both passes are pooled;
``pass_seconds`` keeps each pass's estimate and ``precision`` the larger of the CI
half-width and half the gap between the passes. The profiled updates of the trace come
after all timing. The trainer's configuration is :func:`gacost.calibration.protocol.sft_config`
(TRL's defaults for the optimizer, as in a user's script).
"""

from __future__ import annotations

import gc
import math
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

import torch
from datasets import Dataset
from peft import PeftModel
from transformers import PreTrainedModel, PreTrainedTokenizerBase, TrainerCallback
from transformers.trainer_callback import PrinterCallback, ProgressCallback
from trl import SFTTrainer

from gacost.base.clock import utc_timestamp
from gacost.base.errors import CalibrationError
from gacost.base.profile import Profile, SplitResult, SplitTrace, Workload, write_profile
from gacost.base.records import GIB
from gacost.calibration import passes, protocol, ranks, stats, trace
from gacost.calibration.builder import restore_trainable, trainable_state
from gacost.calibration.env import Environment
from gacost.calibration.oom import is_oom
from gacost.calibration.request import CalibrationInterrupted, SweepOptions


class UpdateTimer(TrainerCallback):
    """Times each optimizer update (``on_step_end`` to ``on_step_end``, data fetch included)
    with a device synchronisation at each boundary, and ends the timing when told to or after
    ``limit`` updates. ``on_timed_start`` runs when the ``warmup`` updates are done;
    ``on_timed_end(step)`` when the timing ends: training stops unless it returns True (a
    trace follows; its updates are not timed here)."""

    def __init__(
        self,
        sync: Callable[[], None],
        should_stop: Callable[[list[float]], bool],
        bar: Any = None,
        limit: int | None = None,
        warmup: int = 0,
        on_timed_start: Callable[[], None] | None = None,
        on_timed_end: Callable[[int], bool] | None = None,
    ) -> None:
        self.sync, self.should_stop, self.bar = sync, should_stop, bar
        self.limit, self.warmup = limit, warmup
        self.on_timed_start, self.on_timed_end = on_timed_start, on_timed_end
        self.times: list[float] = []
        self.last = 0.0
        self.finished = False  # the timing has ended

    def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self.sync()
        if self.warmup == 0 and self.on_timed_start is not None:
            self.on_timed_start()
        self.last = time.perf_counter()

    def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        if self.finished:
            return
        self.sync()
        now = time.perf_counter()
        self.times.append(now - self.last)
        self.last = now
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix_str(f"{self.times[-1]:.3f} s/update")
        if len(self.times) == self.warmup and self.on_timed_start is not None:
            self.on_timed_start()
        if self.should_stop(self.times) or (
            self.limit is not None and len(self.times) >= self.limit
        ):
            self.finished = True
            go_on = self.on_timed_end is not None and self.on_timed_end(state.global_step)
            if not go_on:
                control.should_training_stop = True


class TraceHooks(TrainerCallback):
    """Drives a :class:`trace.Capture` from the trainer's optimizer and step callbacks."""

    def __init__(self, capture: trace.Capture) -> None:
        self.capture = capture

    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self.capture.pre_optimizer()

    def on_optimizer_step(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self.capture.post_optimizer()

    def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        if self.capture.step_end(state.global_step):
            control.should_training_stop = True


def _sync_for(device: torch.device) -> Callable[[], None]:
    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


def _free(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


@dataclass
class _Split:
    """What the measurement of one split needs."""

    model: torch.nn.Module
    tokenizer: PreTrainedTokenizerBase
    dataset: Dataset
    device: torch.device
    workload: Workload
    options: SweepOptions


def measure_split(
    ctx: _Split,
    m: int,
    k: int,
    best: float | None,
    prior: Sequence[float] = (),
    profiler: bool = False,
) -> SplitResult:
    """Train split m x k until its time per update is known; OOM becomes a result. With
    ``options.trace``, NVML utilisation is sampled over the timed updates and 1-2 more updates
    run under the profiler (:mod:`gacost.calibration.trace`); a failing trace is a note in
    ``SplitResult.trace``, never a failed split; ``profiler=False`` keeps the NVML samples
    and skips the profiled updates. ``prior``: timed updates of an earlier pass of this
    split, pooled into the stopping rule (the result holds this pass's only)."""
    o, device = ctx.options, ctx.device
    _free(device)
    state = {"dropped": False}

    def should_stop(times: list[float]) -> bool:
        stop = decide(times)
        # every rank follows rank 0, also in whether the split counts as dropped (the passes
        # and the trace that follow must run the same splits on every rank)
        state["dropped"] = ranks.agree(state["dropped"])
        return ranks.agree(stop)

    def decide(times: list[float]) -> bool:
        own = times[o.warmup :]
        if prior and len(own) < MIN_SECOND_PASS:
            return False
        timed = [*prior, *own]
        if stats.is_stable(timed, o.rel_tol, o.min_timed):
            return True
        if len(timed) >= o.min_timed and sum(timed) >= o.max_seconds:
            return True
        if stats.clearly_slower(timed, best, o.drop_margin, o.min_timed_for_drop):
            state["dropped"] = True
            return True
        return False

    bar = None
    if o.progress and ranks.is_main():
        from tqdm.auto import tqdm

        bar = tqdm(total=o.warmup + o.max_timed, desc=f"split {m}x{k}", unit="update", leave=True)
    capture = (
        trace.Capture(_sync_for(device), device.type == "cuda", trace.updates_for(k), k)
        if o.trace and profiler
        else None
    )
    reader = trace.nvml_reader(device) if o.trace else None
    sampler = trace.UtilisationSampler(reader) if reader is not None else None
    at_timed_end: dict[str, Any] = {}

    def timed_start() -> None:
        if sampler is not None:
            sampler.start()

    def timed_end(step: int) -> bool:
        """Keep the unprofiled facts, then start the trace (True: keep training)."""
        at_timed_end["nvml"] = sampler.stop() if sampler is not None else None
        at_timed_end["peak"] = _peak(device)
        if capture is None or not capture.begin(step):
            return False
        if bar is not None:
            bar.set_postfix_str(f"profiling {capture.updates} update(s)")
        return True

    timer = UpdateTimer(
        _sync_for(device),
        should_stop,
        bar,
        limit=o.warmup + o.max_timed,
        warmup=o.warmup,
        on_timed_start=timed_start,
        on_timed_end=timed_end,
    )
    started = time.perf_counter()
    trace_failure = ""
    try:
        with tempfile.TemporaryDirectory(prefix="gacost-calib-") as out:
            args = protocol.sft_config(
                out,
                micro_batch=m,
                grad_accum=k,
                steps=o.warmup + o.max_timed + (capture.updates if capture is not None else 0),
                seq_len=ctx.workload.sequence_length,
                precision=ctx.workload.precision,
                checkpointing=ctx.workload.gradient_checkpointing,
                seed=o.seed,
                use_cpu=device.type != "cuda",
                torch_compile=ctx.workload.torch_compile,
                liger=ctx.workload.liger,
            )
            trainer = SFTTrainer(
                model=cast("PreTrainedModel | PeftModel", ctx.model),  # full: no adapters
                args=args,
                train_dataset=ctx.dataset,
                processing_class=ctx.tokenizer,
                callbacks=[timer] if capture is None else [timer, TraceHooks(capture)],
            )
            for quiet in (PrinterCallback, ProgressCallback):
                trainer.remove_callback(quiet)
            if capture is not None:
                capture.install(trainer)
            try:
                trainer.train()
            except Exception as exc:  # noqa: BLE001 - after the timing, a failure is the trace's
                if not (timer.finished and capture is not None):
                    raise
                what = "out of memory" if is_oom(exc) else "failed"
                trace_failure = f"{what} in the profiled updates ({trace.brief(exc)})"
            del trainer
    except Exception as exc:  # noqa: BLE001 - every failure of a split is recorded
        wall = time.perf_counter() - started
        if not is_oom(exc):
            raise CalibrationError(f"split {m}x{k} failed: {type(exc).__name__}: {exc}") from exc
        peak = _peak(device)
        _free(device)
        return SplitResult(
            m,
            k,
            "oom",
            peak_allocated_gib=peak[0],
            peak_reserved_gib=peak[1],
            wall_seconds=round(wall, 3),
            note=f"out of memory: {str(exc).splitlines()[0][:160]}",
        )
    finally:
        if bar is not None:
            bar.close()
        if sampler is not None:
            sampler.stop()
        if capture is not None:
            capture.abort(trace_failure or "training stopped during the profiled updates")
    if trace_failure:
        _free(device)
    peak = at_timed_end.get("peak") or _peak(device)
    timed = timer.times[o.warmup :]
    if not timed:
        raise CalibrationError(
            f"split {m}x{k}: no timed update (dataset too small for warmup {o.warmup})"
        )
    med = stats.estimate(timed)
    lo, hi = stats.median_ci(timed)
    lo, hi = min(lo, med), max(hi, med)
    split_trace: SplitTrace | None = None
    if capture is not None:
        split_trace = capture.result(med, at_timed_end.get("nvml"))
    elif o.trace:
        split_trace = SplitTrace(nvml_util_mean=at_timed_end.get("nvml"),
                                 note=NOT_PROFILED)
    wall = time.perf_counter() - started
    return SplitResult(
        m,
        k,
        "dropped" if state["dropped"] else "ok",
        seconds_per_update=round(med, 6),
        iqr_seconds=round(stats.iqr(timed), 6),
        ci_low_s=round(lo, 6),
        ci_high_s=round(hi, 6),
        update_times=tuple(round(t, 6) for t in timer.times),
        peak_allocated_gib=peak[0],
        peak_reserved_gib=peak[1],
        tokens_per_s=round(m * k * ranks.world_size() * ctx.workload.sequence_length / med,
                           1),
        warmup_updates=min(o.warmup, len(timer.times)),
        timed_updates=len(timed),
        wall_seconds=round(wall, 3),
        note=_note(state["dropped"], stats.slow_outliers(timed), len(timed)),
        trace=split_trace,
    )


def _note(dropped: bool, slow: int, timed: int) -> str:
    """What the split's note says: dropped early, and slow updates kept in the median."""
    parts = ["clearly slower than the best split; timed briefly"] if dropped else []
    if slow:
        parts.append(f"{slow} of {timed} timed updates were slow outliers (kept in the median)")
    return "; ".join(parts)


def _peak(device: torch.device) -> tuple[float | None, float | None]:
    if device.type != "cuda":
        return None, None
    return (
        round(torch.cuda.max_memory_allocated(device) / GIB, 3),
        round(torch.cuda.max_memory_reserved(device) / GIB, 3),
    )


def new_profile(workload: Workload, env: Environment, options: SweepOptions) -> Profile:
    """An empty profile for this run."""
    host = dict(env.host)
    return Profile(
        gpu=env.gpu,
        gpu_memory_gib=env.memory_gib,
        raw_gpu_name=env.raw_gpu_name,
        workload=workload,
        splits=(),
        source="measured by gacost calibrate",
        provenance=(
            f"median of the timed updates; warm-up {options.warmup} updates, then "
            f"timed until the median's 95% CI "
            f"is within +-{options.rel_tol:.0%} or {options.max_seconds:g} s of timed "
            f"updates (min {options.min_timed}, max {options.max_timed} updates); "
            f"splits clearly slower (>{options.drop_margin:.0%}) than the best dropped; "
            f"{options.passes} pass(es), the second in reverse order; seed {options.seed}"
        ),
        host=host,
        software=dict(env.software),
        gpu_seconds=0.0,
        vram_limit_gib=options.vram_limit_gib,
        created_at=utc_timestamp(),
    )


def apply_vram_limit(device: torch.device, limit_gib: float | None) -> None:
    """Cap this process's GPU memory (before the model is built) to mimic a smaller card."""
    if limit_gib is None:
        return
    if device.type != "cuda":
        raise CalibrationError("--vram-limit: needs a CUDA GPU")
    total = torch.cuda.get_device_properties(device).total_memory / GIB
    if limit_gib >= total:
        raise CalibrationError(
            f"--vram-limit: {limit_gib:g} GiB is not below this GPU's {total:.1f} GiB"
        )
    torch.cuda.set_per_process_memory_fraction(limit_gib / total, device)


def run_sweep(
    model: torch.nn.Module,
    tokenizer: PreTrainedTokenizerBase,
    dataset: Dataset,
    device: torch.device,
    profile: Profile,
    options: SweepOptions,
    out: Path,
    setup_seconds: float = 0.0,
) -> Profile:
    """Measure every split not yet in ``profile`` (and, with ``options.passes >= 2``, time
    every ``ok`` split of one pass again, in reverse order); rewrite ``out`` after each."""
    compiled = profile.workload.torch_compile
    if compiled:  # ONE_COMPILED_SPLIT: one split, one pass, traced in its own trainer
        options = replace(options, passes=1)
    two = options.passes >= 2
    first_pass = options
    if two:
        first_pass = replace(options, max_seconds=options.max_seconds / 2,
                             max_timed=max(options.min_timed, options.max_timed // 2))
    ctx = _Split(model, tokenizer, dataset, device, profile.workload, first_pass)
    initial = _starting_state(model, profile.workload)
    gpu_seconds = (profile.gpu_seconds or 0.0) + setup_seconds
    profile = replace(profile, gpu_seconds=round(gpu_seconds, 3))
    save_profile(out, profile)
    oom_at: int | None = min(
        (s.micro_batch for s in profile.splits if s.status == "oom"), default=None
    )
    try:
        measured_here = 0
        for m, k in sorted(options.splits, reverse=True):
            done = profile.split(m, k)
            if done is not None and done.status != "error":
                continue
            if compiled and measured_here:
                break  # the next process (--resume) measures the next split
            measured_here += 1
            if oom_at is not None and m > oom_at:  # only with --resume after an OOM
                result = SplitResult(
                    m, k, "skipped", note=f"not run: micro-batch {oom_at} ran out of memory"
                )
            else:
                restore_trainable(model, initial)
                result = _measure_with_levers(ctx, m, k, _best(profile.splits),
                                              profiler=compiled and options.trace)
                if result.status == "oom":
                    oom_at = m if oom_at is None else min(oom_at, m)
            gpu_seconds += result.wall_seconds or 0.0
            profile = replace(profile.with_split(result), gpu_seconds=round(gpu_seconds, 3))
            save_profile(out, profile)
        again = [s for s in profile.splits if s.status == "ok" and not s.pass_seconds]
        for first in sorted(again, key=lambda s: s.micro_batch) if two else ():
            restore_trainable(model, initial)
            pooled = _second_pass(replace(ctx, options=options), first)
            gpu_seconds += (pooled.wall_seconds or 0.0) - (first.wall_seconds or 0.0)
            profile = replace(profile.with_split(pooled), gpu_seconds=round(gpu_seconds, 3))
            save_profile(out, profile)
        for timed in _to_profile(profile.splits, options) if options.trace and not compiled else ():
            restore_trainable(model, initial)
            traced, wall = _profile_split(ctx, timed)
            gpu_seconds += wall
            profile = replace(profile.with_split(traced), gpu_seconds=round(gpu_seconds, 3))
            save_profile(out, profile)
    except KeyboardInterrupt:
        kept = len(profile.splits)
        raise CalibrationInterrupted(
            f"interrupted: {kept} split(s) kept in {out}; run again with --resume to finish"
        ) from None
    return profile


def _starting_state(model: torch.nn.Module, workload: Workload) -> dict[str, torch.Tensor]:
    """The weights every split starts from. A full fine-tune trains (and changes) every base
    weight: their copy is kept on the CPU, so that the device holds no second copy of the
    model during the splits (it would count in their peaks). Restoring it costs one
    host-to-device copy of the weights per split, less than building the model again (a
    load from ``--weights``, or a random initialisation of every weight)."""
    on = torch.device("cpu") if workload.method == "full" else None
    return trainable_state(model, on)


def _to_profile(splits: Sequence[SplitResult], options: SweepOptions) -> list[SplitResult]:
    """The splits to profile after the timing: every timed one with ``trace_all``, else the
    fastest ``ok`` split (none when one already has a trace)."""
    timed = [s for s in splits if s.status in ("ok", "dropped")]
    todo = [s for s in timed if s.trace is None or not s.trace.profiled_updates]
    if options.trace_all:
        return todo
    if any(s.trace is not None and s.trace.profiled_updates for s in timed):
        return []
    ok = sorted((s for s in todo if s.status == "ok"), key=lambda s: s.micro_batch)
    fastest = min(ok, key=lambda s: s.seconds_per_update or math.inf) if ok else None
    return [s for s in ok if ranks.agree(s is fastest)]  # rank 0's fastest on every rank


def _profile_split(ctx: _Split, timed: SplitResult) -> tuple[SplitResult, float]:
    """Run ``timed``'s split once more (one warm-up, one update) and then 1-2 updates under
    the profiler; return the split with that trace, and the seconds it took. The profiler
    runs after every timed update of the calibration on purpose: CUPTI can stay subscribed
    after profiling and slow a host-bound process by 10-20% (pytorch/pytorch#144455), which
    would otherwise bias every split timed later. The trace's host time per kernel is taken
    against the calibrated median, its NVML utilisation from the timed updates."""
    m, k = timed.micro_batch, timed.grad_accum
    once = replace(ctx.options, warmup=1, min_timed=1, max_timed=1, trace=True)
    started = time.perf_counter()
    try:
        run = measure_split(replace(ctx, options=once), m, k, None, profiler=True)
        got = run.trace
        note = "" if got is not None else f"trace not run: {run.status} {run.note}".strip()
    except CalibrationError as exc:
        got, note = None, f"trace failed: {exc}"[:200]
    wall = time.perf_counter() - started
    nvml = timed.trace.nvml_util_mean if timed.trace is not None else None
    if got is None:
        return replace(timed, trace=SplitTrace(nvml_util_mean=nvml, note=note)), wall
    host_us = got.host_us_per_kernel
    if host_us and run.seconds_per_update and timed.seconds_per_update:
        host_us = round(host_us * timed.seconds_per_update / run.seconds_per_update, 2)
    got = replace(got, nvml_util_mean=nvml, host_us_per_kernel=host_us)
    return replace(timed, trace=got), wall


def _measure_with_levers(
    ctx: _Split, m: int, k: int, best: float | None, profiler: bool = False
) -> SplitResult:
    """:func:`measure_split`, plus what the machinery options need: with torch.compile the
    compile time (the warm-up updates' excess over the median) is kept apart from the time
    per update; a compile or Liger failure is recorded as the split's result, like an OOM."""
    levers = [name for name, on in (("torch.compile", ctx.workload.torch_compile),
                                    ("Liger kernels", ctx.workload.liger)) if on]
    try:
        result = measure_split(ctx, m, k, best, profiler=profiler)
    except CalibrationError as exc:
        if not levers:
            raise
        return SplitResult(m, k, "error", note=f"{' + '.join(levers)} failed: {exc}"[:300])
    if ctx.workload.torch_compile and result.seconds_per_update and result.warmup_updates:
        warm = result.update_times[: result.warmup_updates]
        excess = sum(warm) - len(warm) * result.seconds_per_update
        result = replace(result, compile_seconds=round(max(0.0, excess), 3))
    return result


MIN_SECOND_PASS = 3  # timed updates of a split's second pass, at least

NOT_PROFILED = "not profiled: only the fastest split is (--trace-all for every split)"


def _second_pass(ctx: _Split, first: SplitResult) -> SplitResult:
    """Time ``first``'s split again (one warm-up, no trace, no dropping) and pool both
    passes (:func:`gacost.calibration.passes.pool_passes`). A failure in the second pass
    keeps the first as it was, with a note."""
    m, k, o = first.micro_batch, first.grad_accum, ctx.options
    prior = first.update_times[first.warmup_updates :]
    budget = replace(o, warmup=1, trace=False,
                     max_timed=max(MIN_SECOND_PASS, o.max_timed - len(prior)))
    try:
        again = measure_split(replace(ctx, options=budget), m, k, None, prior, profiler=False)
    except CalibrationError as exc:
        return replace(first, note=f"{first.note}; second pass failed: {exc}"[:300].lstrip("; "))
    if again.status != "ok" or not again.seconds_per_update:
        return replace(first, note=(f"{first.note}; second pass {again.status}: "
                                    f"{again.note}")[:300].lstrip("; "))
    return passes.pool_passes(first, again, ctx.workload.sequence_length, ranks.world_size())


def save_profile(out: Path, profile: Profile) -> None:
    """Write the profile atomically; under torchrun only rank 0 writes."""
    if ranks.is_main():
        write_profile(out, profile)


def _best(splits: Sequence[SplitResult]) -> float | None:
    times = [s.seconds_per_update for s in splits if s.status == "ok" and s.seconds_per_update]
    return min(times) if times else None
