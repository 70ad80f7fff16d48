"""The performance and memory model as the advisor uses it: fitted to profiles, cached.

:mod:`advisor.timemodel` and :mod:`advisor.memmodel` hold the formulas, :mod:`advisor.fit`
the fits. This module turns profiles into observations, fits both models to every reference
profile (plus any the caller adds) once per process, and predicts seconds per update and peak
memory with 90 % bands for any model, setup, GPU and split. Pure: no torch, no network.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from gacost.advisor import memory_model, time_model
from gacost.advisor.memory_model import CUDA_CONTEXT_GIB
from gacost.advisor.model_fit import (
    NOISE_GPU,
    TIME_NOISE,
    Z90,
    Band,
    MemFit,
    MemObservation,
    ParamReport,
    TimeFit,
    TimeObservation,
    TimeQuery,
    fit_memory,
    fit_time,
)
from gacost.advisor.time_model import TrainSetup
from gacost.base import embedded, gpu_table, models
from gacost.base.errors import DataError, UnknownNameError
from gacost.base.job import LINEAR_MODULES
from gacost.base.profile import TIMED, Profile, Workload, loads_profile
from gacost.base.records import GpuSpec, ModelArch

__all__ = [
    "CUDA_CONTEXT_GIB",
    "FittedModel",
    "RatioSide",
    "TrainSetup",
    "comm_seconds",
    "fitted_model",
    "micro_step_seconds",
    "peak_memory_gib",
    "reference_model",
    "reference_profiles",
    "update_seconds",
]

CHUNKED_LOSS_TRL = (1, 7)  # TRL from this version on defaults to a chunked NLL loss


def chunked_loss(software: dict[str, str]) -> bool:
    """Whether a profile's TRL computes the loss without full fp32 logits (unknown: yes)."""
    match = re.match(r"\s*(\d+)\.(\d+)", software.get("trl", ""))
    if match is None:
        return True
    return (int(match.group(1)), int(match.group(2))) >= CHUNKED_LOSS_TRL


def setup_for(workload: Workload, software: dict[str, str] | None = None) -> TrainSetup:
    """The training setup a profile's workload describes."""
    t = workload.target_modules
    targets = LINEAR_MODULES if t in ("all-linear", "") else tuple(
        s.strip() for s in t.split(",") if s.strip()
    )
    return TrainSetup(
        method=workload.method, lora_r=workload.lora_r, lora_targets=targets,
        sequence_length=workload.sequence_length, precision=workload.precision,
        gradient_checkpointing=workload.gradient_checkpointing,
        chunked_loss=chunked_loss(software or {}),
    )


def comm_seconds(arch: ModelArch, setup: TrainSetup, gpu: str, world: int) -> float:
    """Seconds per update of the gradient all-reduce over ``world`` GPUs of ``gpu``."""
    costs = time_model.work_costs(arch, setup)
    link = time_model.interconnect_for(gpu)
    return time_model.comm_seconds(costs, setup.method, setup.precision, world, link)


def ddp_bucket_gib(arch: ModelArch, setup: TrainSetup) -> float:
    """GiB of DDP's gradient buckets: the all-reduced gradient bytes (per GPU)."""
    costs = time_model.work_costs(arch, setup)
    return time_model.gradient_bytes(costs, setup.method, setup.precision) / 2**30


def _short(model: str) -> str:
    return model.rsplit("/", 1)[-1]


def profile_observations(
    p: Profile, arch: ModelArch, gpu: GpuSpec
) -> tuple[list[TimeObservation], list[MemObservation]]:
    """Time and memory observations of every timed split of ``p``."""
    setup = setup_for(p.workload, p.software)
    costs = time_model.work_costs(arch, setup)
    rates = time_model.gpu_rates(gpu, costs.compute_precision)
    mcosts = memory_model.memory_costs(arch, setup)
    times: list[TimeObservation] = []
    mems: list[MemObservation] = []
    tag = f"{p.gpu} {_short(p.workload.model)} s{p.workload.sequence_length}"
    for s in p.splits:
        if s.status not in TIMED:
            continue
        label = f"{tag} {s.micro_batch}x{s.grad_accum}"
        # a multi-GPU profile's times include the all-reduce: not single-GPU observations
        if rates is not None and s.seconds_per_update and p.gpu_count == 1:
            sigma = TIME_NOISE
            if s.ci_low_s and s.ci_high_s and s.ci_high_s > s.ci_low_s > 0:
                sigma = max(NOISE_GPU, math.log(s.ci_high_s / s.ci_low_s) / (2 * 1.96))
            times.append(TimeObservation(p.gpu, costs, rates, s.micro_batch, s.grad_accum,
                                         s.seconds_per_update, sigma, label))
        if s.peak_reserved_gib is not None:
            mems.append(MemObservation(p.gpu, mcosts, s.micro_batch, s.peak_reserved_gib, label,
                                       s.grad_accum))
    return times, mems


@dataclass(frozen=True)
class RatioSide:
    """One side of a time comparison: a split on a GPU, measured or to predict."""

    gpu: GpuSpec
    m: int
    k: int
    measured_s: float | None = None


@dataclass(frozen=True)
class FittedModel:
    """Both models fitted to a set of profiles."""

    time: TimeFit
    memory: MemFit
    used: tuple[str, ...]
    unused: tuple[str, ...]

    def seconds(
        self, arch: ModelArch, setup: TrainSetup, gpu: GpuSpec, m: int, k: int, world: int = 1
    ) -> Band | None:
        """Seconds per update with a 90 % band, None without a tensor rate for ``gpu``.

        ``world`` > 1: data parallel, ``m`` per GPU, plus the gradient all-reduce over the
        default interconnect of ``gpu`` (:func:`time_model.comm_seconds`).
        """
        costs = time_model.work_costs(arch, setup)
        rates = time_model.gpu_rates(gpu, costs.compute_precision)
        if rates is None:
            return None
        band = self.time.predict(gpu.name, costs, rates, m, k)
        if world <= 1:
            return band
        c = comm_seconds(arch, setup, gpu.name, world)
        return Band(band.value + c, band.low + c, band.high + c)

    def peak_gib(
        self, arch: ModelArch, setup: TrainSetup, gpu: str, m: int, world: int = 1
    ) -> Band:
        """Peak GPU memory (GiB, CUDA context included) with a 90 % band, per GPU.

        ``world`` > 1 adds DDP's gradient buckets (one more copy of the trainable gradients).
        """
        band = self.memory.predict(gpu, memory_model.memory_costs(arch, setup), m)
        c = CUDA_CONTEXT_GIB + (ddp_bucket_gib(arch, setup) if world > 1 else 0.0)
        return Band(band.value + c, band.low + c, band.high + c)

    def time_ratio(
        self, arch: ModelArch, setup: TrainSetup, a: RatioSide, b: RatioSide
    ) -> Band | None:
        """Band of ``t_a / t_b`` (seconds per update); shared parameters cancel in the ratio.

        A side with a measured time uses it with the run-to-run noise of a median.
        """
        costs = time_model.work_costs(arch, setup)
        logs: list[float] = [0.0, 0.0]
        var = np.zeros((2, 2))
        queries: list[tuple[int, TimeQuery]] = []
        for i, side in enumerate((a, b)):
            if side.measured_s is not None:
                logs[i] = math.log(side.measured_s)
                var[i, i] = TIME_NOISE**2
                continue
            rates = time_model.gpu_rates(side.gpu, costs.compute_precision)
            if rates is None:
                return None
            queries.append((i, TimeQuery(side.gpu.name, costs, rates, side.m, side.k)))
        if queries:
            centre, cov = self.time.joint([q for _, q in queries])
            for r, (i, _) in enumerate(queries):
                logs[i] = float(centre[r])
                for c, (j, _) in enumerate(queries):
                    var[i, j] = cov[r, c]
        d = logs[0] - logs[1]
        sd = math.sqrt(max(var[0, 0] + var[1, 1] - 2 * var[0, 1], 0.0))
        return Band(math.exp(d), math.exp(d - Z90 * sd), math.exp(d + Z90 * sd))

    def basis(self, gpu: str) -> str:
        """Where a prediction for ``gpu`` gets its parameters from, in words."""
        if self.time.has_data(gpu):
            return f"model fitted to the {gpu} profile(s)"
        return f"model transferred from specs (no {gpu} profile; prior bands)"

    def reports(self) -> list[ParamReport]:
        """Every parameter of both fits."""
        return [*self.time.reports(), *self.memory.reports()]


def arch_for(model: str, extra: dict[str, ModelArch] | None = None) -> ModelArch | None:
    """The architecture of a profile's model: ``extra`` first, then the shipped configs."""
    if extra and model in extra:
        return extra[model]
    shipped = {k.lower(): k for k in models.shipped_models()}
    if model.lower() not in shipped:
        return None
    try:
        name, cfg = models.load_model_config(shipped[model.lower()])
        return models.model_arch(name, cfg)
    except (DataError, UnknownNameError):
        return None


def _key(p: Profile) -> Hashable:
    return (p.gpu, p.workload, p.splits, p.vram_limit_gib, p.source,
            tuple(sorted(p.software.items())))


_CACHE: dict[Hashable, FittedModel] = {}


def fitted_model(
    profiles: Sequence[Profile], archs: Sequence[ModelArch] = ()
) -> FittedModel:
    """Fit both models to ``profiles`` (duplicates dropped), cached per process.

    A profile is used when its GPU is in the specs and its model is shipped or in ``archs``.
    """
    unique = list({_key(p): p for p in profiles}.items())
    extra = {a.name: a for a in archs}
    cache_key = (tuple(k for k, _ in unique), tuple(sorted(extra)))
    hit = _CACHE.get(cache_key)
    if hit is not None:
        return hit
    specs = gpu_table.gpu_specs()
    times: list[TimeObservation] = []
    mems: list[MemObservation] = []
    used: list[str] = []
    unused: list[str] = []
    for _, p in unique:
        arch = arch_for(p.workload.model, extra)
        what = f"{p.gpu} {p.workload.model} ({p.source or 'profile'})"
        if arch is None or p.gpu not in specs:
            unused.append(what)
            continue
        t, m = profile_observations(p, arch, specs[p.gpu])
        times += t
        mems += m
        used.append(what)
    model = FittedModel(fit_time(times), fit_memory(mems), tuple(used), tuple(unused))
    _CACHE[cache_key] = model
    return model


def reference_profiles() -> list[Profile]:
    """The profiles shipped in the embedded data."""
    return [loads_profile(text, f"data/profiles/{name}")
            for name, text in embedded.reference_profile_texts()]


def reference_model() -> FittedModel:
    """Both models fitted to the reference profiles."""
    return fitted_model(reference_profiles())


def micro_step_seconds(arch: ModelArch, setup: TrainSetup, gpu: GpuSpec, m: int) -> float | None:
    """Seconds of one micro-step of ``m`` sequences (reference fit), None without a rate."""
    costs = time_model.work_costs(arch, setup)
    rates = time_model.gpu_rates(gpu, costs.compute_precision)
    if rates is None:
        return None
    return time_model.micro_step_seconds(costs, rates, reference_model().time.params(gpu.name), m)


def update_seconds(
    arch: ModelArch, setup: TrainSetup, gpu: GpuSpec, m: int, k: int
) -> float | None:
    """Seconds per optimizer update for split ``m x k`` (reference fit, central value)."""
    band = reference_model().seconds(arch, setup, gpu, m, k)
    return None if band is None else band.value


def peak_memory_gib(arch: ModelArch, setup: TrainSetup, m: int, gpu: str = "") -> float:
    """Peak GPU memory (GiB, CUDA context included) of ``m`` sequences (reference fit)."""
    return reference_model().peak_gib(arch, setup, gpu, m).value
