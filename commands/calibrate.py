"""``gacost calibrate --job F``: measure the job's splits on the attached GPU (or CPU);
with ``--sky``, on rented GPUs through SkyPilot (:mod:`gacost.commands.calibrate_sky`)."""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path

from tabulate import tabulate

from gacost.base import models
from gacost.base.errors import CalibrationError
from gacost.base.inputfile import clip
from gacost.base.interrupts import deferred_interrupt
from gacost.base.job import Job
from gacost.base.profile import Profile, SplitTrace, write_profile
from gacost.calibration import ranks
from gacost.calibration.host_probe import DEFAULT_SECONDS as DEFAULT_PROBE_SECONDS
from gacost.calibration.host_probe import checked_seconds, default_seconds, probe
from gacost.commands.calibrate_sky import add_sky_calibrate_flags, check_sky_flags, run_sky
from gacost.commands.inputs import add_job_flags, load_job_args, trl_notes

INSTALL_HINT = "calibration needs the extra: pip install 'gacost[calibrate]'"
# Upper bounds of the protocol flags: far above the defaults (2 warm-up updates, 40 timed,
# 8 s), low enough that a typo does not hold a GPU for days.
MAX_WARMUP = 1000
MAX_UPDATES = 100_000
MAX_SECONDS = 86_400.0


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of ``gacost calibrate`` (its parser made by :mod:`gacost.commands.cli`)."""
    add_job_flags(p, work=False)
    p.add_argument("--out", type=Path, help="profile to write (default: <gpu>--<model>--<id>.json)")
    p.add_argument("--splits", help="splits to measure, e.g. 1x4,2x2,4x1 (default: all)")
    p.add_argument("--device", default="auto", help="auto (default), cuda, cuda:N or cpu")
    p.add_argument(
        "--vram-limit",
        metavar="SIZE",
        help="cap GPU memory (e.g. 16GiB) to find a smaller card's OOM boundary",
    )
    p.add_argument("--resume", action="store_true", help="keep the splits already in --out")
    p.add_argument("--weights", help="load real weights from a local folder or Hub id")
    p.add_argument("--data", help="a local JSONL or Parquet file to train on (default synthetic)")
    p.add_argument("--tokenizer", help="tokenizer for --data (default: --weights or the model)")
    p.add_argument("--warmup", type=int, default=3, help="untimed updates per split (default 3)")
    p.add_argument(
        "--max-updates", type=int, default=40, help="most timed updates per split (default 40)"
    )
    p.add_argument(
        "--max-seconds",
        type=float,
        default=12.0,
        help="stop timing a split after this many seconds of timed updates, once it "
        "has 5 (default 12; shared by the passes)",
    )
    p.add_argument(
        "--passes",
        type=int,
        choices=(1, 2),
        default=1,
        help="timed passes over the splits: 2 times every kept split again, in reverse "
        "order and in the same process (default 1)",
    )
    p.add_argument(
        "--isolation",
        choices=("auto", "process", "shared"),
        default="auto",
        help="process: each split in a fresh process, as your own run is (a model load per "
        "split); shared: all splits in this process (faster to run, read 10-31%% fast on "
        "host-bound splits on an H200); auto (default): process on a GPU, shared on the CPU",
    )
    p.add_argument(
        "--tolerance",
        type=float,
        default=0.02,
        help="stop timing when the median's 95%% CI is within this (default 0.02)",
    )
    p.add_argument(
        "--nproc",
        type=int,
        help="data-parallel processes, one per GPU, launched with torchrun (default: the "
        "job's gpus_per_run, or 1); splits are per GPU: m x k x N = effective_batch",
    )
    p.add_argument("--compile", action="store_true",
                   help="measure with torch.compile on (TRL torch_compile=True); the compile "
                        "time is stored apart from the time per update")
    p.add_argument("--liger", action="store_true",
                   help="measure with Liger kernels on (TRL use_liger_kernel=True; needs "
                        "liger-kernel)")
    p.add_argument("--force", action="store_true",
                   help="overwrite --out (or the default path) even if it is not a profile "
                        "of this workload")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument(
        "--probe-seconds",
        type=float,
        metavar="S",
        help="time a fixed Python task this long before and after the splits and record the "
        f"host's speed in the profile, for `gacost probe` on another instance (default "
        f"{DEFAULT_PROBE_SECONDS:g}; 0, and the default with --device cpu: none)",
    )
    add_sky_calibrate_flags(p)
    p.add_argument(
        "--no-trace",
        dest="trace",
        action="store_false",
        help="do not profile 1-2 extra updates of the first split (kernels, GPU busy, GEMM "
        "rate) nor sample NVML utilisation",
    )
    p.add_argument(
        "--trace-all",
        action="store_true",
        help="profile every split, not only the first one measured (adds 6-15 s per split "
        "on an H200 host)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> str:
    """Run the calibration and summarise it. Every flag is checked before torch, TRL and
    the rest of the calibration stack are imported (that import takes seconds)."""
    from gacost.calibration.request import (  # pure: no torch
        ONE_COMPILED_SPLIT,
        CalibrateRequest,
        SweepOptions,
        parse_size_gib,
        parse_splits,
    )

    check_device(args.device)
    if (
        not 0 <= args.warmup <= MAX_WARMUP
        or not 1 <= args.max_updates <= MAX_UPDATES
        or not 0 < args.max_seconds <= MAX_SECONDS  # also false for NaN
        or not (0 < args.tolerance < 1)
    ):
        raise CalibrationError(
            f"give --warmup >= 0 (at most {MAX_WARMUP}), --max-updates >= 1 (at most "
            f"{MAX_UPDATES}), --max-seconds > 0 (at most {MAX_SECONDS:g}) and "
            "0 < --tolerance < 1"
        )
    check_sky_flags(args)
    if args.sky is not None:  # on rented GPUs through SkyPilot (commands/calibrate_sky.py)
        return run_sky(args)
    nproc = args.nproc
    launched = ranks.world_size()  # already under torchrun / accelerate launch
    # with --trl-config the per-device batch times the GPU count is the effective batch
    hint = nproc if nproc is not None and nproc > 0 else (launched if launched > 1 else None)
    job, trl = load_job_args(args, need_work=False, gpus_per_run=hint)
    if args.compile:
        job = job.model_copy(update={"torch_compile": True})
    if args.liger:
        job = job.model_copy(update={"liger": True})
    if job.liger is True and importlib.util.find_spec("liger_kernel") is None:
        raise CalibrationError("liger: Liger kernels need `pip install liger-kernel`")
    if launched > 1 and nproc not in (None, launched):
        raise CalibrationError(
            f"--nproc: {nproc} given, but this process was launched as one of {launched}; "
            "leave --nproc out under torchrun"
        )
    if nproc is None:
        nproc = launched if launched > 1 else (
            job.gpus_per_run if isinstance(job.gpus_per_run, int) else 1
        )
    if nproc < 1:
        raise CalibrationError("--nproc: give 1 or more processes (one per GPU)")
    if job.effective_batch % nproc:
        raise CalibrationError(
            f"--nproc: effective_batch {job.effective_batch} is not divisible by {nproc} "
            "processes"
        )
    check_files(args, job, nproc)
    if args.device == "cpu" and job.precision == "fp16":  # known before torch is imported
        raise CalibrationError(
            "precision: fp16 mixed precision needs a CUDA GPU; use fp32 or bf16 on the CPU"
        )
    splits = (
        parse_splits(args.splits, job.effective_batch, nproc) if args.splits is not None
        else job.splits(nproc)
    )
    probe_seconds = (default_seconds(args.device != "cpu") if args.probe_seconds is None
                     else checked_seconds(args.probe_seconds, "--probe-seconds"))
    req = CalibrateRequest(
        job=job,
        out=args.out,
        options=SweepOptions(
            splits=splits,
            vram_limit_gib=parse_size_gib(args.vram_limit) if args.vram_limit else None,
            warmup=args.warmup,
            max_timed=args.max_updates,
            max_seconds=args.max_seconds,
            rel_tol=args.tolerance,
            progress=not args.quiet,
            trace=args.trace,
            trace_all=args.trace_all,
            passes=args.passes,
            isolation=args.isolation,
        ),
        device=args.device,
        resume=args.resume,
        weights=args.weights,
        data=args.data,
        tokenizer=args.tokenizer,
        nproc=nproc,
        force=args.force,
        host_probe_ms=probe_host(probe_seconds, quiet=args.quiet),
    )
    try:
        with deferred_interrupt():  # Ctrl-C inside torch's import would abort or be lost
            from gacost.calibration.run import calibrate
    except ImportError as exc:
        raise CalibrationError(f"{INSTALL_HINT} ({exc.name} is missing)") from None
    profile, out = calibrate(req)
    pending = [str(split) for split in req.options.splits if profile.split(*split) is None]
    if launched > 1 and not ranks.is_main():
        return ""  # under an outside launcher only rank 0 reports (and wrote the profile)
    if req.host_probe_ms is not None:  # again after the splits: the host's speed moves
        after = probe_host(probe_seconds, quiet=args.quiet)
        assert after is not None
        profile = profile.with_host_probes(req.host_probe_ms, after)
        write_profile(out, profile)
    notes = trl_notes(trl)
    if pending and profile.workload.torch_compile:
        notes.append(f"not measured yet: {', '.join(pending)}. {ONE_COMPILED_SPLIT}")
    return "\n".join([summary(profile, out), *notes])


DEVICE = re.compile(r"auto|cpu|cuda(:\d{1,3})?")


def check_device(name: str) -> None:
    """``--device`` is one gacost calibrates on (checked before torch is imported)."""
    if not DEVICE.fullmatch(name):
        raise CalibrationError(
            f"--device: {clip(name)} is not supported; calibrate runs on auto, cuda, cuda:N "
            "or cpu (TRL's CUDA timing and memory counters are what it measures)"
        )


def check_files(args: argparse.Namespace, job: Job, nproc: int = 1) -> None:
    """``--out``, ``--data`` and ``--weights`` before anything is imported or measured.

    ``--out`` (or, on the CPU, the default path) may be a new file, or a profile of this
    job's workload; anything else is overwritten only with ``--force``
    (:func:`~gacost.calibration.request.check_out`; on a GPU the default path, named after
    the GPU, is checked once torch has found it)."""
    if args.data is not None:
        data = Path(args.data)
        if not data.is_file():
            raise CalibrationError(f"--data: no file at {clip(args.data)[1:-1]}")
        if data.suffix.lower() not in (".jsonl", ".json", ".parquet"):
            raise CalibrationError(f"--data: {clip(args.data)} must be .jsonl or .parquet")
    if args.weights is not None and args.weights.startswith((".", "/", "~")) and not Path(
            args.weights).expanduser().is_dir():
        raise CalibrationError(f"--weights: {clip(args.weights)} is not a folder")
    from gacost.calibration.request import check_out, default_out  # pure: no torch

    out: Path | None = args.out
    if out is None and args.device != "cpu":
        return  # named after the GPU: checked once torch has found it
    if out is not None and (args.force or not out.exists()):
        check_out(out, job.workload(), args.force)  # a new file: the model is not read
        return
    model_name = models.load_model_config(job.model)[0]  # a Hub id's config: transformers
    workload = job.workload(model_name)
    if out is None:  # on the CPU the default path is known before torch: the CPU's name
        check_out(default_out("CPU", model_name, workload.fingerprint(), nproc), workload,
                  args.force, default=True)
    else:
        check_out(out, workload, args.force)


def probe_host(seconds: float, quiet: bool = False) -> float | None:
    """The host's speed (mean ms per probe task) over ``seconds``, measured before torch is
    imported; None for 0 seconds."""
    if seconds <= 0:
        return None
    if not quiet:
        print(f"timing the host's CPU ({seconds:g} s)...", file=sys.stderr, flush=True)
    return round(probe(seconds).mean_ms, 2)


def summary(profile: Profile, out: Path) -> str:
    """The end-of-run table."""
    rows = [
        [
            str(s.split),
            s.status,
            "" if s.seconds_per_update is None else f"{s.seconds_per_update:.4f}",
            ""
            if s.ci_low_s is None or s.ci_high_s is None
            else f"{s.ci_low_s:.4f}-{s.ci_high_s:.4f}",
            "" if s.rel_precision is None else f"{s.rel_precision:.1%}",
            s.timed_updates or "",
            "" if s.tokens_per_s is None else f"{s.tokens_per_s:.0f}",
            "" if s.peak_reserved_gib is None else f"{s.peak_reserved_gib:.2f}",
        ]
        for s in profile.splits
    ]
    table = tabulate(
        rows,
        headers=[
            "m x k",
            "status",
            "s/update",
            "95% CI s",
            "+-",
            "timed",
            "tokens/s",
            "peak reserved GiB",
        ],
        disable_numparse=True,
    )
    traces = [
        f"  {s.split}: {trace_line(s.trace)}"
        for s in profile.splits
        if s.trace is not None
    ]
    if traces:
        table += "\n\nWhere the time goes (profiled updates):\n" + "\n".join(traces)
    gpus = f"{profile.gpu_count} x " if profile.gpu_count > 1 else ""
    link = profile.host.get("interconnect")
    link_text = f", interconnect {link}" if profile.gpu_count > 1 and link else ""
    return (
        f"{table}\n\nGPU: {gpus}{profile.gpu} ({profile.raw_gpu_name}, "
        f"{profile.gpu_memory_gib} GiB{link_text})"
        f"; device time used: {profile.gpu_seconds or 0:.1f} s{probe_note(profile)}"
        f"\nprofile written to {out}; "
        f"use it with: gacost recommend --job JOB --profile {out}"
    )


# the probes before and after the splits further apart than this: the host's speed moved
# while it calibrated (the probe's own error carrying a machine is 15 %, PROBE_LOG_SD)
HOST_MOVED = 1.25


def probe_note(profile: Profile) -> str:
    """The host probe's line, or "" when none was recorded."""
    ms = profile.host_probe_ms
    if ms is None:
        return ""
    line = f"\nhost probe: {ms:.1f} ms per task"
    pair = profile.host_probes()
    if pair is not None:
        before, after = pair
        line += f" ({before:.1f} before the splits, {after:.1f} after)"
        if max(pair) / min(pair) > HOST_MOVED:
            line += ("; the host's speed moved while it calibrated, so these times are one "
                     "draw of it: calibrate again to see the spread")
    return (f"{line}\n  `gacost probe --profile PROFILE` on another instance says how its CPU "
            "compares")


HOST_BOUND = 0.4  # GPU busy below this: the host (launches, Python) sets the pace
GPU_BOUND = 0.8  # at or above this: the GPU does


def trace_line(t: SplitTrace) -> str:
    """One line per split: ``GPU busy 18%: host-bound; 10853 kernels/micro-step, ...``."""
    parts: list[str] = []
    if t.busy_fraction is not None:
        verdict = (
            "host-bound" if t.busy_fraction < HOST_BOUND
            else "GPU-bound" if t.busy_fraction >= GPU_BOUND
            else "host and GPU both matter"
        )
        nvml = f" (NVML {t.nvml_util_mean:.0f}% unprofiled)" if t.nvml_util_mean is not None else ""
        parts.append(f"GPU busy {t.busy_fraction:.0%}{nvml}: {verdict}")
    elif t.nvml_util_mean is not None:
        parts.append(f"NVML utilisation {t.nvml_util_mean:.0f}%")
    if t.kernels_per_microstep is not None:
        parts.append(f"{t.kernels_per_microstep:.0f} kernels/micro-step")
    elif t.ops_per_microstep is not None:
        parts.append(f"{t.ops_per_microstep:.0f} host ops/micro-step")
    if t.gpu_ms_per_microstep_by_class:
        ms = t.gpu_ms_per_microstep_by_class
        shown = ", ".join(f"{c} {v:.1f}" for c, v in ms.items() if v > 0)
        parts.append(f"GPU ms/micro-step {sum(ms.values()):.1f} ({shown})")
    if t.gemm_tflops is not None:
        parts.append(f"GEMM {t.gemm_tflops:.0f} TFLOP/s")
    if t.host_us_per_kernel is not None:
        parts.append(f"{t.host_us_per_kernel:.1f} us/kernel")
    if t.note:
        parts.append(t.note)
    return "; ".join(parts) if parts else "no trace"
