"""Seconds per update and peak memory for every candidate GPU x split.

Measured figures come from matching profiles; everything else from the model in
:mod:`advisor.perf`. The result is a flat table of :class:`SplitEstimate` records the
solver consumes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from advisor import perf
from advisor.profile import TIMED, Profile, Workload
from advisor.records import GpuSpec, ModelArch

Source = Literal["measured", "predicted"]


@dataclass(frozen=True)
class SplitEstimate:
    """Time and memory of one split on one GPU, and whether it fits."""

    gpu: str
    micro_batch: int
    grad_accum: int
    seconds_per_update: float | None
    time_source: Source
    peak_gib: float | None
    memory_source: Source
    usable_gib: float
    fits: bool
    note: str = ""

    @property
    def headroom_gib(self) -> float | None:
        """Usable memory left at the peak (negative: does not fit)."""
        return None if self.peak_gib is None else self.usable_gib - self.peak_gib


@dataclass(frozen=True)
class SkippedGpu:
    """A candidate GPU that cannot run the job at all, and why."""

    gpu: str
    reason: str


def matching_profiles(
    profiles: Iterable[Profile], workload: Workload
) -> tuple[list[Profile], list[tuple[Profile, str]]]:
    """Split profiles into those for this workload and the rest (with what differs)."""
    match, other = [], []
    for p in profiles:
        if p.fingerprint == workload.fingerprint():
            match.append(p)
        else:
            mine, theirs = vars(workload), vars(p.workload)
            diff = [
                f"{k} {theirs[k]!r} vs job {mine[k]!r}"
                for k in mine
                if k != "effective_batch" and str(mine[k]).lower() != str(theirs[k]).lower()
            ]
            other.append((p, "; ".join(diff) or "fingerprint differs"))
    return match, other


def estimate_splits(
    arch: ModelArch,
    setup: perf.TrainSetup,
    gpus: Sequence[GpuSpec],
    splits: Sequence[tuple[int, int]],
    profiles: Sequence[Profile],
    vram_margin: float,
) -> tuple[list[SplitEstimate], list[SkippedGpu]]:
    """Estimate every split on every GPU; ``profiles`` must already match the workload."""
    out: list[SplitEstimate] = []
    skipped: list[SkippedGpu] = []
    for gpu in gpus:
        if setup.precision == "bf16" and not gpu.bf16_supported:
            skipped.append(SkippedGpu(gpu.name, "no bf16 support (use precision: fp16)"))
            continue
        measured = [p for p in profiles if p.gpu == gpu.name]
        usable = gpu.memory_gib * (1.0 - vram_margin)
        if not measured and perf.micro_step_seconds(arch, setup, gpu, 1) is None:
            skipped.append(SkippedGpu(gpu.name, "no tensor rate in the GPU specs; calibrate it"))
            continue
        out.extend(_one(arch, setup, gpu, m, k, measured, usable) for m, k in splits)
    return out, skipped


def _one(
    arch: ModelArch,
    setup: perf.TrainSetup,
    gpu: GpuSpec,
    m: int,
    k: int,
    measured: Sequence[Profile],
    usable: float,
) -> SplitEstimate:
    for p in measured:
        result = p.split(m, k)
        if result is None:
            continue
        if result.status in TIMED:
            peak = result.peak_reserved_gib
            peak = None if peak is None else peak + perf.CUDA_CONTEXT_GIB
            return SplitEstimate(
                gpu.name, m, k, result.seconds_per_update, "measured",
                peak, "measured", usable, True, note=p.source,
            )
        if result.status in ("oom", "skipped") and p.vram_limit_gib is None:
            why = "out of memory in calibration" if result.status == "oom" else (
                "above the measured OOM boundary")
            return SplitEstimate(
                gpu.name, m, k, None, "measured", result.peak_reserved_gib, "measured",
                usable, False, note=why,
            )
    seconds = perf.update_seconds(arch, setup, gpu, m, k)
    peak = perf.peak_memory_gib(arch, setup, m)
    return SplitEstimate(
        gpu.name, m, k, seconds, "predicted", peak, "predicted", usable, peak <= usable
    )
