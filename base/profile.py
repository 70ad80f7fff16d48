"""Calibration profiles: the versioned JSON record ``gacost calibrate`` writes.

Schema ``gacost-profile`` version 3 (documented in README.md, "Profile format"):
top-level ``schema``, ``version``, ``created_at``, ``source``, ``provenance``,
``gpu`` {name, raw_name, memory_gib, count}, ``host`` and ``software`` (free-form
string maps), ``workload`` (the fields of :class:`Workload`), ``fingerprint``,
``gpu_seconds`` and ``splits`` (a list of :class:`SplitResult`, each with an optional
``trace``: :class:`SplitTrace`), and where a recorded run saved checkpoints,
``checkpoint_saves`` (a list of {seconds, bytes}, optional in version 3). Version 2 added
``trace``, version 3 ``pass_seconds`` and ``precision``; version-1 and -2 files still load.

This module is pure Python so that ``recommend`` can read profiles without torch.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from gacost.base.atomic import write_atomic
from gacost.base.errors import DataError
from gacost.base.inputfile import clip, parse_json, read_text
from gacost.base.models import model_key
from gacost.base.split import Split

SCHEMA = "gacost-profile"
VERSION = 3  # written; 2 added splits[].trace, 3 splits[].pass_seconds and .precision
READABLE_VERSIONS = (1, 2, 3)
SplitStatus = Literal["ok", "oom", "dropped", "skipped", "error"]
STATUSES = ("ok", "oom", "dropped", "skipped", "error")
TIMED = ("ok", "dropped")  # statuses that carry a measured seconds_per_update
RECORDED_SOURCE = "recorded run (GacostCallback)"  # a profile of the user's own run
# said in a calibration's provenance when each split ran in a fresh process (as a user's run)
OWN_PROCESS = "each split in its own process"
# the host fact ``calibrate`` records: mean ms per task of gacost.calibration.host_probe
# (the mean of the probes before and after its splits, each also recorded)
HOST_PROBE_KEY = "probe_ms"
HOST_PROBE_BEFORE_KEY = "probe_before_ms"
HOST_PROBE_AFTER_KEY = "probe_after_ms"
# Machinery options of a workload (they change time and memory), with their defaults.
WORKLOAD_OPTION_DEFAULTS: dict[str, bool | float] = {
    "torch_compile": False, "liger": False, "prepare_for_kbit": False, "lora_dropout": 0.0,
}


@dataclass(frozen=True)
class Workload:
    """What was trained: everything that changes time or memory, except m, k and work size."""

    model: str
    method: str
    lora_r: int
    lora_alpha: float
    target_modules: str
    sequence_length: int
    precision: str
    gradient_checkpointing: bool
    effective_batch: int
    torch_compile: bool = False
    liger: bool = False
    prepare_for_kbit: bool = False
    lora_dropout: float = 0.0  # PEFT's dropout on the adapters' input (profiles before: 0)

    def fingerprint(self) -> str:
        """Short hash of the fields that must match for a profile to apply (not the batch).

        Option fields at their defaults are left out, so profiles written before the
        options existed keep their fingerprint."""
        payload = asdict(self)
        payload.pop("effective_batch")
        for name, default in WORKLOAD_OPTION_DEFAULTS.items():
            if payload[name] == default:
                payload.pop(name)
        payload["model"] = model_key(payload["model"])
        text = json.dumps(payload, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class SplitTrace:
    """Where the time of one split goes: a few extra updates under torch.profiler (and NVML
    samples of the timed ones). Written by ``gacost.calibration.trace``; GPU fields are
    ``None`` on the CPU or when the profiler saw no GPU activity.

    ``kernels_per_microstep``: GPU kernels launched per micro-step (forward, loss and
    backward), memcpy/memset not counted (``copies_per_microstep``); ``ops_per_microstep``:
    host operator events per micro-step (nested ones included; on the CPU too);
    ``gpu_ms_per_microstep_by_class``: GPU time per micro-step by kernel class (``gemm``,
    ``attention``, ``dequant``, ``other``, ``memcpy``); ``busy_fraction``: union of GPU
    activity over the wall time of the profiled updates (a lower bound: the profiler slows
    the host); ``gemm_tflops``: profiler FLOPs of the mm-family ops over GEMM kernel time;
    ``host_us_per_kernel``: the (unprofiled) median update time over the GPU kernels and
    copies launched per update; ``nvml_util_mean``: NVML GPU utilisation (%) averaged over
    the timed updates; ``wall_seconds``: wall time the trace added (profiled updates and
    analysis); ``note``: why a field is missing, or why the trace was skipped.
    """

    profiled_updates: int = 0
    profiled_microsteps: int = 0
    wall_seconds: float | None = None
    ops_per_microstep: float | None = None
    kernels_per_microstep: float | None = None
    copies_per_microstep: float | None = None
    gpu_ms_per_microstep_by_class: dict[str, float] | None = field(default=None, hash=False)
    busy_fraction: float | None = None
    gemm_tflops: float | None = None
    host_us_per_kernel: float | None = None
    nvml_util_mean: float | None = None
    note: str = ""


@dataclass(frozen=True)
class SplitResult:
    """One m x k split as measured (or its failure).

    ``ok``: timed until stable; ``dropped``: timed briefly, clearly slower than the best;
    ``oom``: ran out of memory; ``skipped``: not run, m above an ``oom`` split;
    ``error``: failed otherwise (see ``note``).
    """

    micro_batch: int
    grad_accum: int
    status: SplitStatus
    seconds_per_update: float | None = None
    iqr_seconds: float | None = None
    ci_low_s: float | None = None
    ci_high_s: float | None = None
    update_times: tuple[float, ...] = ()
    peak_allocated_gib: float | None = None
    peak_reserved_gib: float | None = None
    tokens_per_s: float | None = None
    warmup_updates: int = 0
    timed_updates: int = 0
    wall_seconds: float | None = None
    compile_seconds: float | None = None  # torch.compile: warm-up time beyond the median
    note: str = ""
    trace: SplitTrace | None = None
    pass_seconds: tuple[float, ...] = ()  # each timed pass's estimate (calibrate's 2 passes)
    precision: float | None = None  # relative half-width of the estimate's 95% interval

    @property
    def split(self) -> Split:
        """The ``m x k`` this result measured."""
        return Split(self.micro_batch, self.grad_accum)

    @property
    def rel_precision(self) -> float | None:
        """How precise ``seconds_per_update`` is, as a fraction: the stored ``precision``,
        else the half-width of the 95% CI relative to the median (None when unknown)."""
        if self.precision is not None:
            return self.precision
        if self.seconds_per_update and self.ci_low_s and self.ci_high_s:
            return (self.ci_high_s - self.ci_low_s) / 2 / self.seconds_per_update
        return None


@dataclass(frozen=True)
class Profile:
    """A calibration of one workload on one GPU."""

    gpu: str
    gpu_memory_gib: float
    workload: Workload
    splits: tuple[SplitResult, ...]
    source: str
    provenance: str = ""
    raw_gpu_name: str = ""
    gpu_count: int = 1
    host: dict[str, str] = field(default_factory=dict)
    software: dict[str, str] = field(default_factory=dict)
    gpu_seconds: float | None = None
    vram_limit_gib: float | None = None
    created_at: str = ""
    # (seconds, bytes) of each checkpoint a recorded run saved (``GacostCallback``)
    checkpoint_saves: tuple[tuple[float, float], ...] = ()

    @property
    def save_seconds_per_gb(self) -> float | None:
        """This machine's measured seconds per 1e9 bytes of checkpoint (the median over the
        recorded saves), or None when the profile recorded none."""
        rates = [sec / (nbytes / 1e9) for sec, nbytes in self.checkpoint_saves
                 if sec > 0 and nbytes > 0]
        return float(statistics.median(rates)) if rates else None

    @property
    def host_probe_ms(self) -> float | None:
        """The host's speed ``calibrate`` recorded: mean ms per task of
        :mod:`gacost.calibration.host_probe` (None: not recorded, or not a positive number)."""
        try:
            value = float(self.host.get(HOST_PROBE_KEY, ""))
        except ValueError:
            return None
        return value if math.isfinite(value) and value > 0 else None

    def host_probes(self) -> tuple[float, float] | None:
        """The host probes ``calibrate`` took before and after its splits (ms per task), or
        None where the profile records no pair."""
        try:
            pair = (float(self.host[HOST_PROBE_BEFORE_KEY]), float(self.host[HOST_PROBE_AFTER_KEY]))
        except (KeyError, ValueError):
            return None
        return pair if all(math.isfinite(v) and v > 0 for v in pair) else None

    def with_host_probes(self, before_ms: float, after_ms: float) -> Profile:
        """This profile with the host probes before and after its splits, and their mean as
        the machine's speed (``host_probe_ms``): the host's speed can move over minutes
        (bench/MODEL.md, "A probe for a machine nobody calibrated")."""
        return replace(self, host={
            **self.host, HOST_PROBE_KEY: f"{(before_ms + after_ms) / 2:.2f}",
            HOST_PROBE_BEFORE_KEY: f"{before_ms:.2f}", HOST_PROBE_AFTER_KEY: f"{after_ms:.2f}"})

    @property
    def fingerprint(self) -> str:
        """The workload fingerprint."""
        return self.workload.fingerprint()

    @property
    def machine(self) -> str:
        """The machine the profile ran on, as the model's host term keys it: the GPU kind and
        what was recorded of the host (system vendor and product from DMI, CPU model and
        count, hypervisor); a published row without such facts, its runtime (``platform``)
        or else its source. Kernel version, driver and library versions are left out: they
        change on the same machine."""
        keys = ("system_vendor", "system_product", "cpu", "cpu_count", "hypervisor")
        facts = [self.host[k] for k in keys if self.host.get(k)]
        if not facts:
            facts = [self.host.get("platform") or self.source or "unknown host"]
        return f"{self.gpu} on " + ", ".join(facts)

    def split(self, micro_batch: int, grad_accum: int) -> SplitResult | None:
        """The result for one split, if the profile has it."""
        wanted = Split(micro_batch, grad_accum)
        for s in self.splits:
            if s.split == wanted:
                return s
        return None

    def with_split(self, result: SplitResult) -> Profile:
        """A copy with ``result`` added or replacing the same split."""
        kept = tuple(s for s in self.splits if s.split != result.split)
        ordered = sorted((*kept, result), key=lambda s: s.split)
        return replace(self, splits=tuple(ordered))


def profile_to_dict(p: Profile) -> dict[str, Any]:
    """The JSON-ready form of a profile."""
    return {
        "schema": SCHEMA,
        "version": VERSION,
        "created_at": p.created_at,
        "source": p.source,
        "provenance": p.provenance,
        "gpu": {
            "name": p.gpu,
            "raw_name": p.raw_gpu_name,
            "memory_gib": p.gpu_memory_gib,
            "count": p.gpu_count,
        },
        "host": dict(p.host),
        "software": dict(p.software),
        "workload": asdict(p.workload),
        "fingerprint": p.fingerprint,
        "gpu_seconds": p.gpu_seconds,
        "vram_limit_gib": p.vram_limit_gib,
        "splits": [_split_to_dict(s) for s in p.splits],
        **({"checkpoint_saves": [{"seconds": sec, "bytes": nbytes}
                                 for sec, nbytes in p.checkpoint_saves]}
           if p.checkpoint_saves else {}),
    }


def _split_to_dict(s: SplitResult) -> dict[str, Any]:
    """One split's JSON form; ``trace`` only when the split has one."""
    out = {**asdict(s), "update_times": list(s.update_times),
           "pass_seconds": list(s.pass_seconds)}
    if s.trace is None:
        out.pop("trace")
    return out


# Plausible ranges (see README "Profile format"). An optimizer update of a LoRA fine-tune
# launches hundreds of kernels at least (the H200 traces count thousands per micro-step,
# bench/H200-SWEEP.md) at microseconds each, so below 0.1 ms is not a measurement; above a
# day per update no fine-tune is planned.
MIN_SECONDS_PER_UPDATE = 1e-4
MAX_SECONDS_PER_UPDATE = 86_400.0
MAX_MEMORY_GIB = 100_000.0  # per device, far above any accelerator's memory
MAX_GPU_COUNT = 1024
MAX_SPLITS = 10_000
MAX_TIMES = 1_000_000
MAX_BYTES = 16 << 20  # a profile holds every update time: a few hundred kB in practice


class _Bad(ValueError):
    """One malformed field; the message names it."""


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _number(v: Any, where: str, low: float = 0.0, high: float = 1e12,
            optional: bool = True) -> float | None:
    """A finite number in [low, high] (None allowed when ``optional``)."""
    if v is None and optional:
        return None
    if not _is_number(v) or not low <= v <= high or not math.isfinite(float(v)):
        raise _Bad(f"{where} must be a finite number from {low:g} to {high:g}, got {clip(v)}")
    return float(v)


def _integer(v: Any, where: str, low: int, high: int) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or not low <= v <= high:
        raise _Bad(f"{where} must be an integer from {low} to {high}, got {clip(v)}")
    return v


def _text(v: Any, where: str, max_len: int = 10_000, empty: bool = True,
          name: bool = False) -> str:
    """A string; ``name``: one printed in messages and tables, so no control characters."""
    if (not isinstance(v, str) or len(v) > max_len or (not empty and not v)
            or (name and not v.isprintable())):
        what = "a string" if empty else "a non-empty string"
        plain = " without control characters" if name else ""
        raise _Bad(f"{where} must be {what}{plain} of at most {max_len} characters, "
                   f"got {clip(v)}")
    return v


def _flag(v: Any, where: str) -> bool:
    if not isinstance(v, bool):
        raise _Bad(f"{where} must be true or false, got {clip(v)}")
    return v


def _mapping(v: Any, where: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise _Bad(f"{where} must be an object, got {clip(v)}")
    return v


def _strings(v: Any, where: str) -> dict[str, str]:
    """A free-form string map (host, software): values shown as text, cut to 1000."""
    return {str(k)[:200]: str(x)[:1000] for k, x in _mapping(v, where).items()}


def _known(d: dict[str, Any], names: set[str], where: str) -> None:
    unknown = set(d) - names
    if unknown:
        raise _Bad(f"{where}{clip(sorted(unknown)[0])[1:-1]}: unknown key")


def _split_from_dict(s: Any, where: str) -> SplitResult:
    """Parse and validate one split (``where`` names it in messages, e.g. ``splits[0]``)."""
    s = _mapping(s, where)
    _known(s, {f.name for f in fields(SplitResult)}, f"{where}.")
    for key in ("micro_batch", "grad_accum", "status"):
        if key not in s:
            raise _Bad(f"{where}.{key}: required key is missing")
    status = s["status"]
    if status not in STATUSES:
        raise _Bad(f"{where}.status must be one of {', '.join(STATUSES)}, got {clip(status)}")
    times = s.get("update_times", ())
    if not isinstance(times, (list, tuple)) or len(times) > MAX_TIMES:
        raise _Bad(f"{where}.update_times must be a list of seconds, got {clip(times)}")
    seconds = _number(s.get("seconds_per_update"), f"{where}.seconds_per_update",
                      MIN_SECONDS_PER_UPDATE, MAX_SECONDS_PER_UPDATE)
    if status in TIMED and seconds is None:
        raise _Bad(f"{where}.seconds_per_update: required for a split of status {status}")
    mem = {k: _number(s.get(k), f"{where}.{k}", 0.0, MAX_MEMORY_GIB)
           for k in ("peak_allocated_gib", "peak_reserved_gib")}
    other = {k: _number(s.get(k), f"{where}.{k}")
             for k in ("iqr_seconds", "ci_low_s", "ci_high_s", "tokens_per_s", "wall_seconds",
                       "compile_seconds", "precision")}
    passes = s.get("pass_seconds", ())
    if not isinstance(passes, (list, tuple)) or len(passes) > 8:
        raise _Bad(f"{where}.pass_seconds must be a list of seconds, got {clip(passes)}")
    trace = s.get("trace")
    return SplitResult(
        micro_batch=_integer(s["micro_batch"], f"{where}.micro_batch", 1, 1 << 20),
        grad_accum=_integer(s["grad_accum"], f"{where}.grad_accum", 1, 1 << 20),
        status=status,
        seconds_per_update=seconds,
        update_times=tuple(_number(t, f"{where}.update_times[{i}]", 0.0, 1e9, False) or 0.0
                           for i, t in enumerate(times)),
        warmup_updates=_integer(s.get("warmup_updates", 0), f"{where}.warmup_updates", 0,
                                MAX_TIMES),
        timed_updates=_integer(s.get("timed_updates", 0), f"{where}.timed_updates", 0,
                               MAX_TIMES),
        note=_text(s.get("note", ""), f"{where}.note"),
        trace=None if trace is None else _trace_from_dict(trace, f"{where}.trace"),
        pass_seconds=tuple(_number(t, f"{where}.pass_seconds[{i}]", MIN_SECONDS_PER_UPDATE,
                                   MAX_SECONDS_PER_UPDATE, False) or 0.0
                           for i, t in enumerate(passes)),
        **mem,
        **other,
    )


def _trace_from_dict(t: Any, where: str) -> SplitTrace:
    t = _mapping(t, where)
    _known(t, {f.name for f in fields(SplitTrace)}, f"{where}.")
    by_class = t.get("gpu_ms_per_microstep_by_class")
    if by_class is not None:
        by_class = {
            str(k)[:100]: _number(v, f"{where}.gpu_ms_per_microstep_by_class.{k}", 0.0,
                                  optional=False) or 0.0
            for k, v in _mapping(by_class, f"{where}.gpu_ms_per_microstep_by_class").items()
        }
    values: dict[str, Any] = {}
    for name, value in t.items():
        if name in ("profiled_updates", "profiled_microsteps"):
            values[name] = _integer(value, f"{where}.{name}", 0, MAX_TIMES)
        elif name == "note":
            values[name] = _text(value, f"{where}.note")
        elif name != "gpu_ms_per_microstep_by_class":
            values[name] = _number(value, f"{where}.{name}")
    return SplitTrace(**values, gpu_ms_per_microstep_by_class=by_class)


def _saves(v: Any) -> tuple[tuple[float, float], ...]:
    """``checkpoint_saves``: a list of ``{"seconds": s, "bytes": b}``."""
    if not isinstance(v, list) or len(v) > MAX_TIMES:
        raise _Bad(f"checkpoint_saves must be a list of at most {MAX_TIMES} saves")
    out = []
    for i, item in enumerate(v):
        where = f"checkpoint_saves[{i}]"
        save = _mapping(item, where)
        _known(save, {"seconds", "bytes"}, where)
        out.append((_number(_require(save, "seconds", f"{where}."), f"{where}.seconds",
                            0.0, MAX_SECONDS_PER_UPDATE, False) or 0.0,
                    _number(_require(save, "bytes", f"{where}."), f"{where}.bytes",
                            0.0, 1e15, False) or 0.0))
    return tuple(out)


def _require(d: dict[str, Any], key: str, where: str) -> Any:
    if key not in d:
        raise _Bad(f"{where}{key}: required key is missing")
    return d[key]


def _workload(wl: Any) -> Workload:
    wl = _mapping(wl, "workload")
    _known(wl, {f.name for f in fields(Workload)}, "workload.")

    def get(key: str) -> Any:
        return _require(wl, key, "workload.")

    method = get("method")
    if method not in ("lora", "qlora", "full"):
        raise _Bad(f"workload.method must be lora, qlora or full, got {clip(method)}")
    precision = get("precision")
    if precision not in ("fp16", "bf16", "fp32"):
        raise _Bad(f"workload.precision must be fp16, bf16 or fp32, got {clip(precision)}")
    return Workload(
        model=_text(get("model"), "workload.model", 1024, empty=False, name=True),
        method=method,
        lora_r=_integer(get("lora_r"), "workload.lora_r", 0, 4096),
        lora_alpha=_number(get("lora_alpha"), "workload.lora_alpha", 0.0, 1e6, False) or 0.0,
        target_modules=_text(get("target_modules"), "workload.target_modules", name=True),
        sequence_length=_integer(get("sequence_length"), "workload.sequence_length", 1,
                                 1 << 20),
        precision=precision,
        gradient_checkpointing=_flag(get("gradient_checkpointing"),
                                     "workload.gradient_checkpointing"),
        effective_batch=_integer(get("effective_batch"), "workload.effective_batch", 1, 65_536),
        **{k: _flag(wl.get(k, False), f"workload.{k}")
           for k, v in WORKLOAD_OPTION_DEFAULTS.items() if isinstance(v, bool)},
        lora_dropout=_dropout(wl.get("lora_dropout", 0.0)),
    )


def _dropout(v: Any) -> float:
    """``workload.lora_dropout``: a number >= 0 and < 1 (absent in older profiles: 0)."""
    value = _number(v, "workload.lora_dropout", 0.0, 1.0, False) or 0.0
    if value >= 1.0:
        raise _Bad(f"workload.lora_dropout must be a number >= 0 and < 1, got {clip(v)}")
    return value


def profile_from_dict(d: dict[str, Any], origin: str = "profile") -> Profile:
    """Parse and validate a profile dict; anything malformed is a ``DataError`` naming the
    field: typed fields, finite and plausible numbers, splits that multiply to the
    effective batch (``micro_batch x grad_accum x gpu.count``)."""
    if not isinstance(d, dict) or d.get("schema") != SCHEMA:
        raise DataError(f'{origin}: not a gacost profile (missing "schema": "{SCHEMA}")')
    if d.get("version") not in READABLE_VERSIONS or isinstance(d.get("version"), bool):
        raise DataError(
            f"{origin}: profile version {clip(d.get('version'))} is not supported "
            f"(this gacost reads versions {', '.join(map(str, READABLE_VERSIONS))}); "
            "re-run `gacost calibrate`"
        )
    try:
        gpu = _mapping(_require(d, "gpu", ""), "gpu")
        workload = _workload(_require(d, "workload", ""))
        count = _integer(gpu.get("count", 1), "gpu.count", 1, MAX_GPU_COUNT)
        raw_splits = _require(d, "splits", "")
        if not isinstance(raw_splits, list) or len(raw_splits) > MAX_SPLITS:
            raise _Bad(f"splits must be a list of at most {MAX_SPLITS} splits")
        splits = [_split_from_dict(s, f"splits[{i}]") for i, s in enumerate(raw_splits)]
        seen: set[Split] = set()
        for i, sp in enumerate(splits):
            if sp.split.effective_batch * count != workload.effective_batch:
                world = f" x {count} GPUs" if count > 1 else ""
                raise _Bad(
                    f"splits[{i}]: {sp.split}{world} does not make the "
                    f"effective batch {workload.effective_batch}"
                )
            if sp.split in seen:
                raise _Bad(f"splits[{i}]: {sp.split} appears twice")
            seen.add(sp.split)
        return Profile(
            gpu=_text(_require(gpu, "name", "gpu."), "gpu.name", 100, empty=False,
                      name=True),
            gpu_memory_gib=_number(_require(gpu, "memory_gib", "gpu."), "gpu.memory_gib",
                                   0.0, MAX_MEMORY_GIB, False) or 0.0,
            raw_gpu_name=_text(gpu.get("raw_name", ""), "gpu.raw_name", 1000),
            gpu_count=count,
            workload=workload,
            splits=tuple(splits),
            source=_text(d.get("source", ""), "source", 1000),
            provenance=_text(d.get("provenance", ""), "provenance"),
            host=_strings(d.get("host", {}), "host"),
            software=_strings(d.get("software", {}), "software"),
            gpu_seconds=_number(d.get("gpu_seconds"), "gpu_seconds"),
            vram_limit_gib=_number(d.get("vram_limit_gib"), "vram_limit_gib", 0.0,
                                   MAX_MEMORY_GIB),
            created_at=_text(d.get("created_at", ""), "created_at", 100),
            checkpoint_saves=_saves(d.get("checkpoint_saves", [])),
        )
    except _Bad as exc:
        raise DataError(f"{origin}: {exc}; re-run `gacost calibrate` or fix the file") from None


def loads_profile(text: str, origin: str = "profile") -> Profile:
    """Parse profile JSON text."""
    data = parse_json(text, origin, DataError)
    return profile_from_dict(data, origin)


def read_profile(path: str | Path) -> Profile:
    """Read a profile file (a regular UTF-8 file of at most 16 MiB)."""
    p = Path(path)
    text = read_text(p, "--profile", DataError, MAX_BYTES)
    return loads_profile(text, origin=str(p))


def write_profile(path: str | Path, profile: Profile) -> None:
    """Write a profile atomically."""
    write_atomic(
        path, json.dumps(profile_to_dict(profile), indent=2) + "\n", make_parents=True
    )
