"""Seconds per update and peak memory for every candidate GPU x split, with 90 % bands.

Measured figures come from matching profiles; everything else from the fitted model in
:mod:`gacost.advisor.predictor` (fitted to every reference profile and the caller's). The
result is a flat table of :class:`SplitEstimate` records the planner
(:mod:`gacost.advisor.planner`) consumes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from gacost.advisor import predictor, time_model
from gacost.advisor.model_fit import NOISE_HOST, TIME_NOISE, Z90
from gacost.base.profile import RECORDED_SOURCE, TIMED, Profile, SplitResult, Workload
from gacost.base.records import GpuSpec, ModelArch
from gacost.base.split import Split

Source = Literal["measured", "predicted"]


@dataclass(frozen=True)
class SplitEstimate:
    """Time and memory of one split on one GPU, whether it fits, and 90 % bands."""

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
    seconds_low: float | None = None
    seconds_high: float | None = None
    peak_low_gib: float | None = None
    peak_high_gib: float | None = None
    basis: str = ""
    world_size: int = 1  # GPUs of one data-parallel run (micro_batch is per GPU)
    levers: tuple[str, ...] = ()  # machinery options on: "torch_compile", "liger"
    setup_seconds: float = 0.0  # once per run (torch.compile's compilation)
    save_seconds_per_gb: float | None = None  # checkpoints on this machine, where recorded

    @property
    def split(self) -> Split:
        """The ``m x k`` this estimate is for (``m`` per GPU)."""
        return Split(self.micro_batch, self.grad_accum)

    @property
    def split_label(self) -> str:
        """``m x k`` with the machinery options on, e.g. ``4x1 +compile``."""
        short = {"torch_compile": "compile", "liger": "liger"}
        return str(self.split) + "".join(
            f" +{short.get(lever, lever)}" for lever in self.levers)

    @property
    def headroom_gib(self) -> float | None:
        """Usable memory left at the peak (negative: does not fit)."""
        return None if self.peak_gib is None else self.usable_gib - self.peak_gib

    @property
    def memory_tight(self) -> bool:
        """Kept, but the upper end of the peak band exceeds the usable memory."""
        return self.fits and self.peak_high_gib is not None and self.peak_high_gib > self.usable_gib

    @property
    def seconds_band(self) -> tuple[float, float] | None:
        """(low, high) seconds per update, when known."""
        if self.seconds_low is None or self.seconds_high is None:
            return None
        return self.seconds_low, self.seconds_high


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
    setup: predictor.TrainSetup,
    gpus: Sequence[GpuSpec],
    splits: Sequence[Split],
    profiles: Sequence[Profile],
    vram_margin: float,
    model: predictor.FittedModel | None = None,
    world: int = 1,
) -> tuple[list[SplitEstimate], list[SkippedGpu]]:
    """Estimate every split on every GPU; ``profiles`` must already match the workload.

    ``model``: the fitted model to predict with (default: the reference model fitted again
    with ``profiles``, :func:`predictor.with_user_profiles`). ``world``: GPUs per
    data-parallel run (splits are per GPU); only profiles measured on that many GPUs count
    as measurements.
    """
    if model is None:
        model = predictor.with_user_profiles(arch, profiles)
    out: list[SplitEstimate] = []
    skipped: list[SkippedGpu] = []
    precision = time_model.work_costs(arch, setup).compute_precision
    for gpu in gpus:
        if setup.precision == "bf16" and not gpu.bf16_supported:
            skipped.append(SkippedGpu(gpu.name, "no bf16 support (use precision: fp16)"))
            continue
        measured = sorted((p for p in profiles if p.gpu == gpu.name and p.gpu_count == world),
                          key=recorded_first)
        usable = gpu.memory_gib * (1.0 - vram_margin)
        if not measured and time_model.gpu_rates(gpu, precision) is None:
            skipped.append(SkippedGpu(gpu.name, "no tensor rate in the GPU specs; calibrate it"))
            continue
        out.extend(
            replace(_one(arch, setup, gpu, m, k, measured, usable, model, world), world_size=world)
            for m, k in splits
        )
    return out, skipped


def recorded_first(profile: Profile) -> int:
    """Sort key: a recorded run of the user's own training (GacostCallback: within 0.6% of
    the script's own timer on the H200) before a calibration or a published table; ties keep
    their order (the user's profiles before the shipped ones)."""
    return 0 if RECORDED_SOURCE in profile.source else 1


def _measured_band(r: SplitResult, host_share: float = 0.0,
                   carried_sd: float = 0.0) -> tuple[float, float]:
    """The 90 % band of the next run of a measured split: the measurement's own interval
    (or :data:`TIME_NOISE` without one), widened by the host's drift between processes and
    days in proportion to how host-bound the split is (``NOISE_HOST``: the same host-bound
    split ran 10-20 % apart in back-to-back processes, bench/RESULTS.md run 4), and by
    ``carried_sd`` (log sd) on the same share where the host was carried by the probes."""
    assert r.seconds_per_update is not None
    t = r.seconds_per_update
    if r.ci_low_s and r.ci_high_s and r.ci_low_s <= t <= r.ci_high_s:
        lo, hi = math.log(t / r.ci_low_s), math.log(r.ci_high_s / t)
    else:
        lo = hi = Z90 * TIME_NOISE
    drift = Z90 * math.hypot(NOISE_HOST, carried_sd) * host_share
    return t / math.exp(math.hypot(lo, drift)), t * math.exp(math.hypot(hi, drift))


def _on_this_instance(
    result: SplitResult, p: Profile, arch: ModelArch, setup: predictor.TrainSetup,
    gpu: GpuSpec, model: predictor.FittedModel,
) -> tuple[SplitResult, float, str]:
    """A split measured on ``p``'s machine as it runs on the instance whose host probe the
    model carries (:meth:`~gacost.advisor.predictor.FittedModel.with_host`; a probed
    machine nobody measured takes any measured machine's splits): its time and
    interval times the model's host factor, the probe's log sd for its band, and a note for
    the basis (the split as it is, 0 and "" when nothing is carried)."""
    host = model.host_for(gpu.name)
    if host is None:
        return result, 0.0, ""
    if host.unmeasured:  # a probed machine nobody measured: from the machine it ran on
        if not model.time.has_machine(p.machine):
            return result, 0.0, ""
        measured_on: str | None = p.machine
    elif p.machine == model.machine_for(gpu.name):
        measured_on = None
    else:
        return result, 0.0, ""
    assert result.seconds_per_update is not None
    f = model.host_factor(arch, setup, gpu, result.micro_batch, result.grad_accum,
                          measured_on)
    scaled = replace(result, seconds_per_update=result.seconds_per_update * f,
                     ci_low_s=result.ci_low_s and result.ci_low_s * f,
                     ci_high_s=result.ci_high_s and result.ci_high_s * f)
    return scaled, host.log_sd, f", host scaled x{f:.2f} by the host probes"


def _one(
    arch: ModelArch,
    setup: predictor.TrainSetup,
    gpu: GpuSpec,
    m: int,
    k: int,
    measured: Sequence[Profile],
    usable: float,
    model: predictor.FittedModel,
    world: int,
) -> SplitEstimate:
    mem = model.peak_gib(arch, setup, gpu.name, m, world, k)
    for p in measured:
        result = p.split(m, k)
        if result is None:
            continue
        if result.status in TIMED:
            result, carried_sd, note = _on_this_instance(result, p, arch, setup, gpu, model)
            lo, hi = _measured_band(result, model.host_share(arch, setup, gpu, m), carried_sd)
            peak = result.peak_reserved_gib
            if peak is None:  # no measured peak: the model's
                return SplitEstimate(
                    gpu.name, m, k, result.seconds_per_update, "measured", mem.value,
                    "predicted", usable, mem.value <= usable, note=p.source,
                    seconds_low=lo, seconds_high=hi, peak_low_gib=mem.low,
                    peak_high_gib=mem.high, basis=f"measured ({p.source}){note}",
                )
            peak += predictor.CUDA_CONTEXT_GIB
            return SplitEstimate(
                gpu.name, m, k, result.seconds_per_update, "measured",
                peak, "measured", usable, True, note=p.source,
                seconds_low=lo, seconds_high=hi, peak_low_gib=peak, peak_high_gib=peak,
                basis=f"measured ({p.source}){note}",
            )
        if result.status in ("oom", "skipped") and p.vram_limit_gib is None:
            why = "out of memory in calibration" if result.status == "oom" else (
                "above the measured OOM boundary")
            return SplitEstimate(
                gpu.name, m, k, None, "measured", result.peak_reserved_gib, "measured",
                usable, False, note=why, basis=f"measured ({p.source})",
            )
    band = model.seconds(arch, setup, gpu, m, k, world)
    fits = mem.value <= usable
    note = ""
    if fits and mem.high > usable:
        note = "tight: the peak's 90% band reaches the usable memory"
    elif not fits and mem.low <= usable:
        note = "may fit: the peak's 90% band reaches below the usable memory"
    return SplitEstimate(
        gpu.name, m, k, None if band is None else band.value, "predicted", mem.value,
        "predicted", usable, fits, note=note,
        seconds_low=None if band is None else band.low,
        seconds_high=None if band is None else band.high,
        peak_low_gib=mem.low, peak_high_gib=mem.high, basis=model.basis(gpu.name),
    )
