"""Calibration profiles: the versioned JSON record ``gacost calibrate`` writes.

Schema ``gacost-profile`` version 3 (documented in README.md, "Profile format"):
top-level ``schema``, ``version``, ``created_at``, ``source``, ``provenance``,
``gpu`` {name, raw_name, memory_gib, count}, ``host`` and ``software`` (free-form
string maps), ``workload`` (the fields of :class:`Workload`), ``fingerprint``,
``gpu_seconds`` and ``splits`` (a list of :class:`SplitResult`, each with an optional
``trace``: :class:`SplitTrace`). Version 2 added ``trace``, version 3 ``pass_seconds`` and
``precision``; version-1 and -2 files still load.

This module is pure Python so that ``recommend`` can read profiles without torch.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from gacost.base.atomic import write_atomic
from gacost.base.errors import DataError

SCHEMA = "gacost-profile"
VERSION = 3  # written; 2 added splits[].trace, 3 splits[].pass_seconds and .precision
READABLE_VERSIONS = (1, 2, 3)
SplitStatus = Literal["ok", "oom", "dropped", "skipped", "error"]
STATUSES = ("ok", "oom", "dropped", "skipped", "error")
TIMED = ("ok", "dropped")  # statuses that carry a measured seconds_per_update
# Machinery options of a workload (they change time and memory), with their defaults.
WORKLOAD_OPTION_DEFAULTS = {"torch_compile": False, "liger": False, "prepare_for_kbit": False}


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

    def fingerprint(self) -> str:
        """Short hash of the fields that must match for a profile to apply (not the batch).

        Option fields at their defaults are left out, so profiles written before the
        options existed keep their fingerprint."""
        payload = asdict(self)
        payload.pop("effective_batch")
        for name, default in WORKLOAD_OPTION_DEFAULTS.items():
            if payload[name] == default:
                payload.pop(name)
        payload["model"] = payload["model"].lower()
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

    @property
    def fingerprint(self) -> str:
        """The workload fingerprint."""
        return self.workload.fingerprint()

    def split(self, micro_batch: int, grad_accum: int) -> SplitResult | None:
        """The result for one split, if the profile has it."""
        for s in self.splits:
            if s.micro_batch == micro_batch and s.grad_accum == grad_accum:
                return s
        return None

    def with_split(self, result: SplitResult) -> Profile:
        """A copy with ``result`` added or replacing the same split."""
        kept = tuple(
            s
            for s in self.splits
            if (s.micro_batch, s.grad_accum) != (result.micro_batch, result.grad_accum)
        )
        ordered = sorted((*kept, result), key=lambda s: (s.micro_batch, s.grad_accum))
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
    }


def _split_to_dict(s: SplitResult) -> dict[str, Any]:
    """One split's JSON form; ``trace`` only when the split has one."""
    out = {**asdict(s), "update_times": list(s.update_times),
           "pass_seconds": list(s.pass_seconds)}
    if s.trace is None:
        out.pop("trace")
    return out


def _split_from_dict(s: dict[str, Any], where: str) -> SplitResult:
    """Parse and validate one split (``where`` names it in messages, e.g. ``splits[0]``)."""
    unknown = set(s) - {f.name for f in fields(SplitResult)}
    if unknown:
        raise KeyError(f"{where}.{sorted(unknown)[0]} (unknown key)")
    item = {**s, "update_times": tuple(float(t) for t in s.get("update_times", ())),
            "pass_seconds": tuple(float(t) for t in s.get("pass_seconds", ()))}
    if item.get("trace") is not None:
        item["trace"] = _trace_from_dict(item["trace"], f"{where}.trace")
    result = SplitResult(**item)
    if result.status not in STATUSES:
        raise ValueError(f"{where}.status {result.status!r} (one of {STATUSES})")
    if result.status in TIMED and not (result.seconds_per_update or 0) > 0:
        raise ValueError(f"{where}.seconds_per_update must be > 0 for a {result.status} split")
    return result


def _trace_from_dict(t: Any, where: str) -> SplitTrace:
    if not isinstance(t, dict):
        raise ValueError(f"{where} must be an object")
    unknown = set(t) - {f.name for f in fields(SplitTrace)}
    if unknown:
        raise KeyError(f"{where}.{sorted(unknown)[0]} (unknown key)")
    by_class = t.get("gpu_ms_per_microstep_by_class")
    if by_class is not None:
        if not isinstance(by_class, dict):
            raise ValueError(f"{where}.gpu_ms_per_microstep_by_class must be an object")
        by_class = {str(k): float(v) for k, v in by_class.items()}
    for name, value in t.items():
        numeric = name not in ("note", "gpu_ms_per_microstep_by_class")
        if numeric and value is not None and (
            isinstance(value, bool) or not isinstance(value, (int, float))
        ):
            raise ValueError(f"{where}.{name} must be a number or null, not {value!r}")
    return SplitTrace(**{**t, "gpu_ms_per_microstep_by_class": by_class})


def _require(d: dict[str, Any], key: str, where: str) -> Any:
    if key not in d:
        raise KeyError(f"{where}{key}")
    return d[key]


def profile_from_dict(d: dict[str, Any], origin: str = "profile") -> Profile:
    """Parse and validate a profile dict; anything malformed is a ``DataError``."""
    if not isinstance(d, dict) or d.get("schema") != SCHEMA:
        raise DataError(f'{origin}: not a gacost profile (missing "schema": "{SCHEMA}")')
    if d.get("version") not in READABLE_VERSIONS:
        raise DataError(
            f"{origin}: profile version {d.get('version')!r} is not supported "
            f"(this gacost reads versions {', '.join(map(str, READABLE_VERSIONS))}); "
            "re-run `gacost calibrate`"
        )
    try:
        gpu = _require(d, "gpu", "")
        wl = _require(d, "workload", "")
        wl_names = {f.name for f in fields(Workload)}
        values: dict[str, Any] = {
            k: wl[k] if k not in WORKLOAD_OPTION_DEFAULTS else bool(wl.get(k, False))
            for k in wl_names
        }
        workload = Workload(**values)
        splits = [
            _split_from_dict(s, f"splits[{i}]") for i, s in enumerate(_require(d, "splits", ""))
        ]
        return Profile(
            gpu=str(_require(gpu, "name", "gpu.")),
            gpu_memory_gib=float(_require(gpu, "memory_gib", "gpu.")),
            raw_gpu_name=str(gpu.get("raw_name", "")),
            gpu_count=int(gpu.get("count", 1)),
            workload=workload,
            splits=tuple(splits),
            source=str(d.get("source", "")),
            provenance=str(d.get("provenance", "")),
            host={str(k): str(v) for k, v in d.get("host", {}).items()},
            software={str(k): str(v) for k, v in d.get("software", {}).items()},
            gpu_seconds=d.get("gpu_seconds"),
            vram_limit_gib=d.get("vram_limit_gib"),
            created_at=str(d.get("created_at", "")),
        )
    except KeyError as exc:
        raise DataError(f"{origin}: missing or unknown field {exc.args[0]}") from exc
    except (TypeError, ValueError, AttributeError) as exc:
        raise DataError(f"{origin}: malformed profile ({exc}); re-run `gacost calibrate`") from exc


def loads_profile(text: str, origin: str = "profile") -> Profile:
    """Parse profile JSON text."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise DataError(
            f"{origin}: not valid JSON ({exc}); re-run `gacost calibrate` or restore the file"
        ) from exc
    return profile_from_dict(data, origin)


def read_profile(path: str | Path) -> Profile:
    """Read a profile file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataError(f"--profile: cannot read {p} ({exc.strerror or exc})") from exc
    return loads_profile(text, origin=str(p))


def write_profile(path: str | Path, profile: Profile) -> None:
    """Write a profile atomically."""
    write_atomic(
        path, json.dumps(profile_to_dict(profile), indent=2) + "\n", make_parents=True
    )
