"""Recorded runs, the pure half of :class:`gacost.calibration.callback.GacostCallback`.

What a real training run is recorded as: the model string the profile names (so that it
matches what ``Job.workload()`` gives for the equivalent job), the LoRA target label, the
one split result of the run, and how that result goes into a profile file that may already
hold other runs of the same workload. No torch here, so it is tested without training.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from gacost.base import models
from gacost.base.errors import CalibrationError, DataError
from gacost.base.job import LINEAR_MODULES
from gacost.base.profile import RECORDED_SOURCE, Profile, SplitResult, read_profile
from gacost.calibration import stats

SOURCE = RECORDED_SOURCE
WHO = "GacostCallback"


def _arch_key(name: str, cfg: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """The architecture fields of a config (everything of ``ModelArch`` but the name)."""
    try:
        arch = models.model_arch(name, dict(cfg))
    except DataError:
        return None
    return tuple(v for k, v in asdict(arch).items() if k != "name")


def shipped_by_architecture(cfg: Mapping[str, Any]) -> str | None:
    """The shipped model whose architecture fields all equal ``cfg``'s, if exactly one does."""
    mine = _arch_key("run", cfg)
    if mine is None:
        return None
    found = []
    for name in models.shipped_models():
        shipped_name, shipped_cfg = models.load_model_config(name)
        if _arch_key(shipped_name, shipped_cfg) == mine:
            found.append(shipped_name)
    return found[0] if len(found) == 1 else None


def model_identity(
    name_or_path: str, cfg: Mapping[str, Any], override: str | None = None
) -> tuple[str, str]:
    """The model string to record and how it was found, in words.

    In order: ``override`` (the ``model_name`` option); a shipped name (``Qwen/Qwen3-1.7B``
    or its short form) as ``name_or_path``; a config whose architecture equals exactly one
    shipped model's (a local copy, a fine-tuned derivative or a model built from a config);
    a local folder, as ``<folder>/config.json`` the way a job naming that folder resolves;
    any other ``name_or_path`` (a Hub id) as is; else a label that no job matches.
    """
    if override:
        return override, "given as model_name"
    shipped = models.shipped_models()
    by_lower = {k.lower(): k for k in shipped} | {k.split("/")[-1].lower(): k for k in shipped}
    key = by_lower.get(name_or_path.lower()) if name_or_path else None
    if key is not None:
        return key, f"the shipped config named by name_or_path {name_or_path!r}"
    by_arch = shipped_by_architecture(cfg)
    if by_arch is not None:
        seen = f"name_or_path {name_or_path!r}" if name_or_path else "no name_or_path"
        return by_arch, f"the shipped config with the same architecture ({seen})"
    if name_or_path:
        folder = Path(name_or_path).expanduser()
        if (folder / "config.json").is_file():
            return str(folder / "config.json"), "the local folder in name_or_path"
        return name_or_path, "name_or_path"
    label = (
        f"unnamed-{cfg.get('model_type', 'model')}-h{cfg.get('hidden_size', '?')}"
        f"-l{cfg.get('num_hidden_layers', '?')}"
    )
    return label, "no name_or_path and no shipped architecture: pass model_name"


def targets_label(targets: str | Iterable[str] | None) -> str:
    """The job's ``target_modules`` label of a PEFT ``target_modules`` value.

    PEFT turns ``all-linear`` into the set of linear layers (names or full module paths,
    reduced here to their last part); the set of the seven
    projection names is ``all-linear`` again (what a job's ``all-linear`` means). Other sets
    are the comma-joined names, the projections in the job's order, then the rest sorted.
    """
    if targets is None:
        return ""
    if isinstance(targets, str):
        return targets
    names = {str(t).rsplit(".", 1)[-1] for t in targets}  # PEFT may keep full module paths
    if names == set(LINEAR_MODULES):
        return "all-linear"
    known = [n for n in LINEAR_MODULES if n in names]
    return ",".join([*known, *sorted(names - set(known))])


def precision_label(bf16: bool, fp16: bool, dtype: str) -> str:
    """``bf16``/``fp16`` from the trainer's flags, else from the weights' dtype, else fp32."""
    if bf16:
        return "bf16"
    if fp16:
        return "fp16"
    return {"torch.bfloat16": "bf16", "torch.float16": "fp16"}.get(dtype, "fp32")


def run_split(
    times: Sequence[float],
    warmup: int,
    micro_batch: int,
    grad_accum: int,
    world: int,
    sequence_length: int,
    peaks: tuple[float | None, float | None],
    wall_seconds: float,
    note: str,
) -> SplitResult | None:
    """The run's split: the median of the updates after ``warmup`` (None before any)."""
    timed = times[warmup:]
    if not timed:
        return None
    med = stats.median(timed)
    lo, hi = stats.median_ci(timed)
    tokens = micro_batch * grad_accum * world * sequence_length
    return SplitResult(
        micro_batch,
        grad_accum,
        "ok",
        seconds_per_update=round(med, 6),
        iqr_seconds=round(stats.iqr(timed), 6),
        ci_low_s=round(lo, 6),
        ci_high_s=round(hi, 6),
        update_times=tuple(round(t, 6) for t in times),
        peak_allocated_gib=peaks[0],
        peak_reserved_gib=peaks[1],
        tokens_per_s=round(tokens / med, 1) if med > 0 else None,
        warmup_updates=min(warmup, len(times)),
        timed_updates=len(timed),
        wall_seconds=round(wall_seconds, 3),
        note=note,
    )


def read_existing(path: Path) -> Profile | None:
    """The profile already at ``path`` (None if there is no file); anything else is refused."""
    if not path.exists():
        return None
    try:
        return read_profile(path)
    except DataError as exc:
        raise CalibrationError(
            f"{WHO}: {path} exists and is not a readable gacost profile ({exc}); it is left "
            "as it was: pass another path"
        ) from None


def merge_base(existing: Profile | None, new: Profile, path: Path) -> Profile:
    """The profile this run's split goes into: ``new``, or ``existing`` when it holds the
    same workload on the same GPU(s). A profile of anything else is never overwritten."""
    if existing is None:
        return new
    why = differences(existing, new)
    if why:
        raise CalibrationError(
            f"{WHO}: {path} holds a profile of another workload or GPU ({why}); it is left as "
            "it was: pass another path to record this run"
        )
    source = existing.source
    if SOURCE not in source:
        source = f"{source}; {SOURCE}" if source else SOURCE
    provenance = existing.provenance
    if new.provenance not in provenance:
        provenance = f"{provenance}; {new.provenance}" if provenance else new.provenance
    return replace(
        existing,
        source=source,
        provenance=provenance,
        host={**existing.host, **new.host},
        software={**existing.software, **new.software},
        gpu_seconds=existing.gpu_seconds or 0.0,
    )


def differences(existing: Profile, new: Profile) -> str:
    """What differs between two profiles' workloads (batch aside) and GPUs, in words."""
    out = []
    if existing.fingerprint != new.fingerprint:
        theirs, mine = asdict(existing.workload), asdict(new.workload)
        out += [
            f"{k} {theirs[k]!r} vs this run's {mine[k]!r}"
            for k in mine
            if k != "effective_batch" and str(theirs[k]).lower() != str(mine[k]).lower()
        ]
        if not out:
            out.append("workload fingerprint differs")
    if existing.gpu != new.gpu:
        out.append(f"measured on {existing.gpu}, this run is on {new.gpu}")
    if existing.gpu_count != new.gpu_count:
        out.append(f"{existing.gpu_count} GPU(s) vs this run's {new.gpu_count}")
    return "; ".join(out)


def with_run(base: Profile, split: SplitResult, wall_seconds: float) -> Profile:
    """``base`` with this run's split added (or replacing the same m x k) and its time."""
    total = (base.gpu_seconds or 0.0) + wall_seconds
    return replace(base.with_split(split), gpu_seconds=round(total, 3))
