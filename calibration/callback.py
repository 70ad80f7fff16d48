"""``GacostCallback``: record a real ``transformers``/TRL fine-tune as a gacost profile.

    from gacost.calibration.callback import GacostCallback
    trainer.add_callback(GacostCallback("run-profile.json"))
    trainer.train()
    # gacost recommend --job job.yaml --profile run-profile.json

The callback times every optimizer update from ``on_step_end`` to ``on_step_end`` with one
device synchronisation per update (as the calibration sweep does), and writes a profile with
one split, the run's ``per_device_train_batch_size`` x ``gradient_accumulation_steps``, every
``every_n_updates`` updates (while those writes take under 0.5% of the wall-clock, see
:data:`WRITE_BUDGET`) and at the end of training (atomically, rank 0 only). The first
``warmup`` updates are kept in ``update_times`` but not in the median. Evaluation,
checkpoint saves and the callback's own writes are left out of the update they follow; each
checkpoint's seconds and bytes are kept in the profile's ``checkpoint_saves``, the
machine's save rate that ``recommend`` charges that GPU's runs. The host probe runs for
``probe_seconds`` (default 5 on a GPU, none on the CPU) before the first update and again
after the last; their mean is recorded as ``host.probe_ms`` (each beside it), so the
recorded machine can be carried to another instance (``gacost probe``, ``recommend
--host-probe-ms``).

The workload is read from the trainer and the model: the model identity (see
:func:`gacost.calibration.record.model_identity`), LoRA rank, alpha and targets from the
PEFT config, the method (``qlora`` when the base model is quantised, ``full`` without an
adapter), precision, gradient checkpointing, and the sequence length of the first
micro-batch's ``input_ids`` (or ``sequence_length=``). A file that already holds a profile
of the same workload on the same GPU(s) gets this run's split added (or replaced for the same
m x k); a file of anything else is never overwritten: training stops with a
``CalibrationError`` before its first update.

The package root does not import this module (it needs torch and transformers).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback

from gacost.base.clock import utc_timestamp
from gacost.base.errors import CalibrationError
from gacost.base.profile import Profile, SplitResult, Workload, write_profile
from gacost.base.records import GIB
from gacost.calibration import ranks, record
from gacost.calibration.env import Environment, describe
from gacost.calibration.host_probe import checked_seconds, default_seconds, probe

__all__ = ["GacostCallback"]

# Periodic writes take at most this fraction of the training wall-clock (the default of the
# ``write_budget`` option): a write holds every update time so far, so its cost grows with
# the run; past the budget, a periodic write is put off to the next multiple of
# ``every_n_updates`` that fits. The write at the end of training always runs.
WRITE_BUDGET = 0.005


def _sync_for(device: torch.device) -> Callable[[], None]:
    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    if device.type == "mps" and hasattr(torch, "mps"):
        return torch.mps.synchronize
    return lambda: None


def _unwrap(model: Any) -> Any:
    """The module under DDP/compile wrappers (``module``, ``_orig_mod``)."""
    while True:
        inner = getattr(model, "_orig_mod", None) or getattr(model, "module", None)
        if not isinstance(inner, torch.nn.Module):
            return model
        model = inner


def _checkpointing(args: Any, model: Any) -> bool:
    """Activation (gradient) checkpointing, from the trainer's flag or the model itself
    (transformers 5 renamed both; the old names still read, with a warning)."""
    flag = getattr(args, "activation_checkpointing", None)
    if flag is None:
        flag = getattr(args, "gradient_checkpointing", False)
    if flag:
        return True
    new = hasattr(type(model), "is_activation_checkpointing")
    return bool(getattr(model, "is_activation_checkpointing" if new else
                        "is_gradient_checkpointing", False))


def _check_count(option: str, value: Any, low: int, want: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise CalibrationError(f"{record.WHO}: {option}: give {want}, got {value!r}")


def _flag(value: Any) -> str:
    return "true" if value else "false"


class GacostCallback(TrainerCallback):
    """Record this training run's seconds per update, peak memory and workload as a profile.

    ``path``: the profile file (created, or merged into when it holds the same workload on
    the same GPU). ``every_n_updates``: rewrite the file every N updates (0: only at the
    end). ``warmup``: updates left out of the median. ``model_name``: the model string to
    record (default: found from the model, see the module docstring); give the job's
    ``model:`` when a job should match a model that is not shipped. ``sequence_length``:
    the tokens per sequence to record (default: the first micro-batch's padded length).
    ``write_budget``: the fraction of the training wall-clock periodic writes may take
    (default 0.005); past it a periodic write waits for a later multiple of N.
    """

    def __init__(
        self,
        path: str | Path,
        every_n_updates: int = 20,
        warmup: int = 2,
        *,
        model_name: str | None = None,
        sequence_length: int | None = None,
        write_budget: float = WRITE_BUDGET,
        probe_seconds: float | None = None,
    ) -> None:
        _check_count("every_n_updates", every_n_updates, 0, "a whole number >= 0 (0: at the end)")
        self.probe_seconds = (None if probe_seconds is None
                              else checked_seconds(probe_seconds, f"{record.WHO}: probe_seconds"))
        _check_count("warmup", warmup, 0, "a whole number of updates >= 0")
        if sequence_length is not None:
            _check_count("sequence_length", sequence_length, 1, "the tokens per sequence (> 0)")
        if not 0.0 <= write_budget <= 1.0:
            raise CalibrationError(
                f"{record.WHO}: write_budget: give a fraction from 0 to 1, got {write_budget!r}"
            )
        self.write_budget = write_budget
        self.path = Path(path)
        self.every_n_updates = every_n_updates
        self.warmup = warmup
        self.model_name = model_name
        self.sequence_length = sequence_length
        record.read_existing(self.path)  # a file that is not a profile fails here, at once
        self.times: list[float] = []
        self.profile: Profile | None = None  # the last profile written
        self._hook: Any = None  # the forward pre-hook's handle while it is registered
        self._reset()

    def _unhook(self) -> None:
        if self._hook is not None:
            self._hook.remove()
            self._hook = None

    def _reset(self) -> None:
        self._unhook()
        self.times = []
        self.saves: list[tuple[float, float]] = []
        self._last = 0.0
        self._started = 0.0
        self._write_seconds = 0.0
        self._sync: Callable[[], None] = lambda: None
        self._device = torch.device("cpu")
        self._main = True
        self._seq: int | None = None
        self._seq_from = ""
        self._seq_low = self._seq_high = 0
        self._base: Profile | None = None
        self._facts: dict[str, Any] = {}
        self._env: Environment | None = None
        self._probe_seconds = 0.0  # the host probe's length at the start (0: none taken)

    # -- what the run is ----------------------------------------------------------------

    def _read_run(self, args: Any, model: Any) -> None:
        """Everything about the run but its sequence length, at the start of training."""
        top = _unwrap(model)
        base = top.get_base_model() if hasattr(top, "get_base_model") else top
        config = getattr(base, "config", None)
        cfg = config.to_dict() if config is not None and hasattr(config, "to_dict") else {}
        name_or_path = str(getattr(config, "name_or_path", "") or "")
        name, how = record.model_identity(name_or_path, cfg, self.model_name)
        if how.startswith("no name_or_path"):
            warnings.warn(
                f"{record.WHO}: the model has no name_or_path and is not a shipped "
                f"architecture; it is recorded as {name!r}, which no job matches: pass "
                "GacostCallback(..., model_name=<the job's model:>)",
                UserWarning,
                stacklevel=2,
            )
        peft = getattr(top, "peft_config", None) or getattr(base, "peft_config", None)
        lora = None
        if isinstance(peft, dict) and peft:
            active = getattr(top, "active_adapter", None)
            lora = peft[active] if isinstance(active, str) and active in peft else next(
                iter(peft.values())
            )
        quantised = bool(
            getattr(config, "quantization_config", None)
            or getattr(base, "is_loaded_in_4bit", False)
            or getattr(base, "is_loaded_in_8bit", False)
            or getattr(base, "hf_quantizer", None) is not None
        )
        method = "full" if lora is None else ("qlora" if quantised else "lora")
        m = int(args.per_device_train_batch_size)
        k = int(args.gradient_accumulation_steps)
        world = int(getattr(args, "world_size", 1) or 1)
        self._facts = {
            "model": name,
            "model_how": how,
            "name_or_path": name_or_path,
            "method": method,
            "lora_r": int(getattr(lora, "r", 0)) if lora is not None else 0,
            "lora_alpha": float(getattr(lora, "lora_alpha", 0)) if lora is not None else 0.0,
            "lora_dropout": float(getattr(lora, "lora_dropout", 0) or 0)
            if lora is not None else 0.0,
            "target_modules": record.targets_label(getattr(lora, "target_modules", None))
            if lora is not None
            else "",
            "precision": record.precision_label(
                bool(args.bf16), bool(args.fp16), str(getattr(base, "dtype", ""))
            ),
            "gradient_checkpointing": _checkpointing(args, base),
            "m": m,
            "k": k,
            "world": world,
            "torch_compile": bool(getattr(args, "torch_compile", False)),
            "use_liger_kernel": bool(getattr(args, "use_liger_kernel", False)),
            "max_length": getattr(args, "max_length", None) or getattr(
                args, "max_seq_length", None
            ),
        }

    def _fix_workload(self, length: int | None, source: str) -> None:
        """Settle the sequence length, hence the workload, and check the file (may raise)."""
        f = self._facts
        if length is None:
            length, source = f["max_length"], "the trainer's max_length"
        if not length:
            raise CalibrationError(
                f"{record.WHO}: sequence_length: cannot tell the tokens per sequence of this "
                "run; pass GacostCallback(..., sequence_length=N)"
            )
        self._seq, self._seq_from = int(length), source
        self._seq_low = self._seq_high = int(length)
        workload = Workload(
            model=f["model"],
            method=f["method"],
            lora_r=f["lora_r"],
            lora_alpha=f["lora_alpha"],
            target_modules=f["target_modules"],
            sequence_length=int(length),
            precision=f["precision"],
            gradient_checkpointing=f["gradient_checkpointing"],
            effective_batch=f["m"] * f["k"] * f["world"],
            torch_compile=f["torch_compile"],
            liger=f["use_liger_kernel"],
            prepare_for_kbit=False,  # not visible from the trainer: the default recipe
            lora_dropout=f["lora_dropout"],
        )
        env = self._env
        assert env is not None
        host = dict(env.host)
        if f["world"] > 1:
            host["interconnect"] = ranks.interconnect()
        new = Profile(
            gpu=env.gpu,
            gpu_memory_gib=env.memory_gib,
            raw_gpu_name=env.raw_gpu_name,
            gpu_count=f["world"],
            workload=workload,
            splits=(),
            source=record.SOURCE,
            provenance=(
                "recorded from a training run by gacost.calibration.callback.GacostCallback: "
                "seconds per update from on_step_end to on_step_end with a device sync, the "
                "median after the warm-up updates; evaluation, checkpoint saves and the "
                "profile writes are left out"
            ),
            host=host,
            software={
                **env.software,
                "torch_compile": _flag(f["torch_compile"]),
                "use_liger_kernel": _flag(f["use_liger_kernel"]),
            },
            gpu_seconds=0.0,
            created_at=utc_timestamp(),
        )
        self._base = record.merge_base(record.read_existing(self.path), new, self.path)

    def _on_forward(self, module: Any, args: Any, kwargs: dict[str, Any]) -> None:
        """Forward pre-hook: the first training micro-batch settles the sequence length; later
        ones only widen the range seen (two comparisons, no allocation). Evaluation forwards
        (the module in eval mode) are not looked at."""
        if not module.training:
            return
        ids = kwargs.get("input_ids")
        if ids is None and args:
            ids = args[0]
        if not isinstance(ids, torch.Tensor) or ids.dim() < 1:
            return
        n = ids.shape[-1]
        if self._seq is None:
            try:
                self._fix_workload(int(n), "the first micro-batch's input_ids")
            except BaseException:
                self._unhook()  # the run stops here; leave the model as it was
                raise
        elif n < self._seq_low:
            self._seq_low = n
        elif n > self._seq_high:
            self._seq_high = n

    # -- the trainer's events -----------------------------------------------------------

    def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self._reset()
        self._device = torch.device(args.device)
        self._sync = _sync_for(self._device)
        self._main = bool(getattr(state, "is_world_process_zero", True))
        self._env = self._probed(describe(self._device))
        model = kw.get("model")
        self._read_run(args, model)
        if self._device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self._device)
        if self.sequence_length is not None:
            self._fix_workload(self.sequence_length, "given as sequence_length")
        elif self._facts["torch_compile"] or model is None:
            self._fix_workload(None, "")  # no hook under torch.compile
        else:
            self._hook = _unwrap(model).register_forward_pre_hook(
                self._on_forward, with_kwargs=True
            )
        self._sync()
        self._started = self._last = time.perf_counter()

    def _probed(self, env: Environment) -> Environment:
        """``env`` with the host probe (:mod:`gacost.calibration.host_probe`) on the main
        process: ``probe_seconds`` of it, by default 5 on a GPU and none on the CPU."""
        seconds = self.probe_seconds
        if seconds is None:
            seconds = default_seconds(self._device.type == "cuda")
        if seconds <= 0 or not self._main:
            return env
        self._probe_seconds = seconds
        return env.with_host_probe(probe(seconds).mean_ms)

    def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self._sync()
        now = time.perf_counter()
        self.times.append(now - self._last)
        self._last = now
        n = self.every_n_updates
        if n and self._main and len(self.times) % n == 0 and len(self.times) > self.warmup:
            if self._write_seconds <= self.write_budget * (now - self._started):
                self._write()
                self._last = time.perf_counter()  # the write is not the next update's time
                self._write_seconds += self._last - now

    def on_evaluate(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self._restart_clock()

    def on_save(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        """The checkpoint just written: its seconds since the update (or evaluation) before
        it, and its bytes (the Trainer's ``checkpoint-STEP`` folder), for the machine's save
        rate; then the next update's clock starts."""
        if self._started:
            self._sync()
            seconds = time.perf_counter() - self._last
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if folder.is_dir():
                nbytes = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
                if nbytes:
                    self.saves.append((round(seconds, 4), float(nbytes)))
        self._restart_clock()

    def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self._unhook()
        if not self._main:
            return
        if len(self.times) <= self.warmup:
            warnings.warn(
                f"{record.WHO}: {len(self.times)} update(s), none after the {self.warmup} "
                f"warm-up update(s): nothing recorded in {self.path}",
                UserWarning,
                stacklevel=2,
            )
            return
        before = None if self._base is None else self._base.host_probe_ms
        if self._probe_seconds > 0 and self._base is not None and before is not None:
            # again after the run, as calibrate does: the host's speed moves over minutes
            after = probe(self._probe_seconds).mean_ms
            self._base = self._base.with_host_probes(before, after)
        self._write()

    def _restart_clock(self) -> None:
        if self._started:
            self._sync()
            self._last = time.perf_counter()

    # -- the profile --------------------------------------------------------------------

    def split(self) -> SplitResult | None:
        """This run's split result so far (None before the first timed update)."""
        f = self._facts
        if self._seq is None:
            self._fix_workload(None, "")
        assert self._seq is not None
        note = (
            f"{record.SOURCE}: {len(self.times)} updates; model {f['name_or_path']!r} "
            f"recorded as {f['model']!r} ({f['model_how']}); sequence length {self._seq} "
            f"from {self._seq_from}"
        )
        if self._seq_low != self._seq_high:
            note += (
                f"; micro-batches of {self._seq_low}-{self._seq_high} tokens (dynamic "
                "padding): pass sequence_length= the length your job plans for"
            )
        if f["torch_compile"] or f["use_liger_kernel"]:
            note += (
                f"; torch_compile {_flag(f['torch_compile'])}, use_liger_kernel "
                f"{_flag(f['use_liger_kernel'])}"
            )
        return record.run_split(
            self.times,
            self.warmup,
            f["m"],
            f["k"],
            f["world"],
            self._seq,
            self._peaks(),
            time.perf_counter() - self._started,
            note,
        )

    def _peaks(self) -> tuple[float | None, float | None]:
        if self._device.type != "cuda":
            return None, None
        return (
            round(torch.cuda.max_memory_allocated(self._device) / GIB, 3),
            round(torch.cuda.max_memory_reserved(self._device) / GIB, 3),
        )

    def _write(self) -> None:
        result = self.split()
        if result is None:
            return
        assert self._base is not None
        profile = record.with_run(self._base, result, result.wall_seconds or 0.0)
        if self.saves:
            profile = replace(profile, checkpoint_saves=(*self._base.checkpoint_saves,
                                                         *self.saves))
        write_profile(self.path, profile)
        self.profile = profile
