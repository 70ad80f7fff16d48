"""The performance and memory model as the advisor uses it: fitted to profiles, cached.

:mod:`gacost.advisor.time_model` and :mod:`gacost.advisor.memory_model` hold the formulas,
:mod:`gacost.advisor.model_fit` the fits. This module turns profiles into observations, fits
both models to every reference profile (plus any the caller adds) once per process, and
predicts seconds per update and peak memory with 90 % bands for any model, setup, GPU and
split. Pure: no torch, no network.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from gacost.advisor import memory_model, time_model
from gacost.advisor.memory_model import CUDA_CONTEXT_GIB
from gacost.advisor.model_fit import (
    NOISE_GPU,
    TIME_GLOBALS,
    TIME_NOISE,
    Z90,
    Band,
    HostScale,
    MemFit,
    MemObservation,
    ParamReport,
    TimeFit,
    TimeObservation,
    TimeQuery,
    anchored_priors,
    fit_memory,
    fit_time,
    fit_to_dict,
    mem_fit_from_dict,
    time_fit_from_dict,
    with_sibling_slack,
)
from gacost.advisor.time_model import DEFAULT_PARAMS, TimeModelParams, TimeParams, TrainSetup
from gacost.base import embedded, gpu_table, models
from gacost.base.errors import DataError, UnknownNameError
from gacost.base.job import LINEAR_MODULES
from gacost.base.profile import OWN_PROCESS, TIMED, Profile, Workload, loads_profile
from gacost.base.records import GpuSpec, ModelArch

__all__ = [
    "CUDA_CONTEXT_GIB",
    "FittedModel",
    "RatioSide",
    "TrainSetup",
    "comm_seconds",
    "fitted_model",
    "reference_model",
    "reference_profiles",
]

CHUNKED_LOSS_TRL = (1, 7)  # TRL from this version on defaults to a chunked NLL loss
# transformers' default optimizer is the fused AdamW (``adamw_torch_fused``) from this torch
# version on (TrainingArguments ``optim``: "adamw_torch" (for torch>=2.8 "adamw_torch_fused");
# huggingface/transformers#37358, merged 2025-07: a transformers older than that keeps
# "adamw_torch" with any torch, which this rule does not read)
FUSED_ADAMW_TORCH = (2, 8)


def _at_least(version: str, minimum: tuple[int, int]) -> bool:
    """Whether ``version`` ("major.minor...") is ``minimum`` or later (unknown: yes)."""
    match = re.match(r"\s*(\d+)\.(\d+)", version)
    return match is None or (int(match.group(1)), int(match.group(2))) >= minimum


def chunked_loss(software: dict[str, str]) -> bool:
    """Whether a profile's TRL computes the loss without full fp32 logits (unknown: yes)."""
    return _at_least(software.get("trl", ""), CHUNKED_LOSS_TRL)


def fused_adamw(software: dict[str, str]) -> bool:
    """Whether a profile's trainer took the fused AdamW by default (its torch; unknown: yes,
    as with today's stack)."""
    return _at_least(software.get("torch", ""), FUSED_ADAMW_TORCH)


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
        chunked_loss=chunked_loss(software or {}), fused_adamw=fused_adamw(software or {}),
        liger=workload.liger, torch_compile=workload.torch_compile,
        prepare_for_kbit=workload.prepare_for_kbit, lora_dropout=workload.lora_dropout,
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


# Host seconds per launch of a split measured inside one process with other splits, relative
# to a fine-tune run alone in its process (what a user runs), on the lent H200 host: the first
# split (largest micro-batch) ran at 22.3-23.9 us per launch (bench/H200-SWEEP.md), the later
# ones at 31.5-34.6 (sweep and calibrate), the 100-update protocol with one split per process
# at 25.9-27.5 (bench/results/repeatability): 23.1 / 26.7 and 32.5 / 26.7.
FIRST_TRAINER_HOST = 0.87
LATER_TRAINER_HOST = 1.22


def first_in_process(p: Profile) -> int | None:
    """The micro-batch of the split ``p`` measured first in its process, None when its splits
    were not measured one after another in one process. gacost calibrate and the H200 sweep
    run the largest micro-batch first; calibrate before its drop rule ("clearly slower", in
    the provenance) ran the smallest first; since issue 19 it runs each split in its own
    process on a GPU (:data:`OWN_PROCESS`, in the provenance), as a user's run is."""
    timed = [s.micro_batch for s in p.splits if s.status in TIMED]
    if not timed or OWN_PROCESS in p.provenance:
        return None
    if p.source.startswith("bench/h200_sweep.py"):
        return max(timed)
    if p.source.startswith("measured by gacost calibrate") or "gacost calibrate" in p.provenance:
        return max(timed) if "clearly slower" in p.provenance else min(timed)
    return None


def as_measured(costs: time_model.WorkCosts, p: Profile, m: int) -> time_model.WorkCosts:
    """``costs`` as split ``m`` of ``p`` saw them: the host term of a split measured in one
    process with others scaled by :data:`FIRST_TRAINER_HOST` or :data:`LATER_TRAINER_HOST`."""
    first = first_in_process(p)
    if first is None:
        return costs
    factor = FIRST_TRAINER_HOST if m == first else LATER_TRAINER_HOST
    return replace(costs, host_launch_factor=costs.host_launch_factor * factor)


def profile_observations(
    p: Profile, arch: ModelArch, gpu: GpuSpec, terms: TimeModelParams = DEFAULT_PARAMS
) -> tuple[list[TimeObservation], list[MemObservation]]:
    """Time and memory observations of every timed split of ``p`` (time model: ``terms``)."""
    setup = setup_for(p.workload, p.software)
    costs = time_model.work_costs(arch, setup, terms)
    rates = time_model.gpu_rates(gpu, costs.compute_precision, terms)
    mcosts = memory_model.memory_costs(arch, setup)
    times: list[TimeObservation] = []
    mems: list[MemObservation] = []
    tag = f"{p.gpu} {_short(p.workload.model)} s{p.workload.sequence_length}"
    for s in p.splits:
        if s.status not in TIMED:
            continue
        label = f"{tag} {s.split}"
        # a multi-GPU profile's times include the all-reduce: not single-GPU observations
        if rates is not None and s.seconds_per_update and p.gpu_count == 1:
            sigma = TIME_NOISE
            if s.ci_low_s and s.ci_high_s and s.ci_high_s > s.ci_low_s > 0:
                sigma = max(NOISE_GPU, math.log(s.ci_high_s / s.ci_low_s) / (2 * 1.96))
            seen = as_measured(costs, p, s.micro_batch)
            times.append(TimeObservation(p.gpu, seen, rates, s.micro_batch, s.grad_accum,
                                         s.seconds_per_update, sigma, label, p.machine))
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
    """Both models fitted to a set of profiles.

    ``machines``: (GPU, machine) pairs: predictions on that GPU use that machine's host term
    (the machine of the user's own profile: calibrate where you would rent). Any other GPU's
    prediction is for a machine nobody measured: the host from every measured machine, with
    the spread between machines in its band. ``terms``: the time model's fixed terms it was
    fitted and predicts with."""

    time: TimeFit
    memory: MemFit
    used: tuple[str, ...]
    unused: tuple[str, ...]
    machines: tuple[tuple[str, str], ...] = ()
    terms: TimeModelParams = DEFAULT_PARAMS
    hosts: tuple[tuple[str, HostScale], ...] = ()

    def on_machines(self, machines: Mapping[str, str]) -> FittedModel:
        """This model predicting each GPU of ``machines`` on that machine's host."""
        return replace(self, machines=tuple(sorted(machines.items())))

    def with_host(self, gpu: str, host: HostScale) -> FittedModel:
        """This model predicting ``gpu`` on the probed instance ``host`` describes: another
        instance of its measured machine, or a machine nobody measured (its host seconds
        scaled as ``host`` says)."""
        return replace(self, hosts=tuple(sorted({**dict(self.hosts), gpu: host}.items())))

    def machine_for(self, gpu: str) -> str:
        """The measured machine predictions on ``gpu`` use ("" for an unmeasured one)."""
        return dict(self.machines).get(gpu, "")

    def host_for(self, gpu: str) -> HostScale | None:
        """How predictions on ``gpu`` scale their machine's host (None: as measured)."""
        return dict(self.hosts).get(gpu)

    def params(self, gpu: str) -> TimeParams:
        """Central time parameters of a prediction on ``gpu``."""
        params = self.time.params(gpu, self.machine_for(gpu))
        host = self.host_for(gpu)
        return host.apply(params) if host is not None else params

    def host_factor(self, arch: ModelArch, setup: TrainSetup, gpu: GpuSpec, m: int,
                    k: int, measured_on: str | None = None) -> float:
        """How much longer (or shorter) a split measured on machine ``measured_on`` (None:
        ``gpu``'s machine) runs on the instance :meth:`with_host` describes: the model's
        time there over its time on ``measured_on`` (1.0 without a scale or a tensor
        rate)."""
        host = self.host_for(gpu.name)
        if host is None:
            return 1.0
        costs = time_model.work_costs(arch, setup, self.terms)
        rates = time_model.gpu_rates(gpu, costs.compute_precision, self.terms)
        if rates is None:
            return 1.0
        here = self.time.params(gpu.name, self.machine_for(gpu.name))
        there = here if measured_on is None else self.time.params(gpu.name, measured_on)
        return (time_model.update_seconds(costs, rates, host.apply(here), m, k)
                / time_model.update_seconds(costs, rates, there, m, k))

    def host_share(self, arch: ModelArch, setup: TrainSetup, gpu: GpuSpec, m: int) -> float:
        """How host-bound a micro-step of ``m`` on ``gpu`` is, in [0, 1] (0 without a tensor
        rate for ``gpu``): :func:`time_model.host_share` at the central parameters."""
        costs = time_model.work_costs(arch, setup, self.terms)
        rates = time_model.gpu_rates(gpu, costs.compute_precision, self.terms)
        if rates is None:
            return 0.0
        return time_model.host_share(costs, rates, self.params(gpu.name), m)

    def seconds(
        self, arch: ModelArch, setup: TrainSetup, gpu: GpuSpec, m: int, k: int, world: int = 1
    ) -> Band | None:
        """Seconds per update with a 90 % band, None without a tensor rate for ``gpu``.

        ``world`` > 1: data parallel, ``m`` per GPU, plus the gradient all-reduce over the
        default interconnect of ``gpu`` (:func:`time_model.comm_seconds`).
        """
        costs = time_model.work_costs(arch, setup, self.terms)
        rates = time_model.gpu_rates(gpu, costs.compute_precision, self.terms)
        if rates is None:
            return None
        band = self.time.predict(gpu.name, costs, rates, m, k, self.machine_for(gpu.name),
                                 self.host_for(gpu.name))
        if world <= 1:
            return band
        c = comm_seconds(arch, setup, gpu.name, world)
        return Band(band.value + c, band.low + c, band.high + c)

    def peak_gib(
        self, arch: ModelArch, setup: TrainSetup, gpu: str, m: int, world: int = 1,
        k: int = 0,
    ) -> Band:
        """Peak GPU memory (GiB, CUDA context included) with a 90 % band, per GPU; ``k``:
        micro-steps per update (0: not known, taken as more than one).

        ``world`` > 1 adds DDP's gradient buckets (one more copy of the trainable gradients).
        """
        band = self.memory.predict(gpu, memory_model.memory_costs(arch, setup), m, k)
        c = CUDA_CONTEXT_GIB + (ddp_bucket_gib(arch, setup) if world > 1 else 0.0)
        return Band(band.value + c, band.low + c, band.high + c)

    def time_ratio(
        self, arch: ModelArch, setup: TrainSetup, a: RatioSide, b: RatioSide
    ) -> Band | None:
        """Band of ``t_a / t_b`` (seconds per update); shared parameters cancel in the ratio.

        A side with a measured time uses it with the run-to-run noise of a median.
        """
        costs = time_model.work_costs(arch, setup, self.terms)
        logs: list[float] = [0.0, 0.0]
        var = [[0.0, 0.0], [0.0, 0.0]]
        queries: list[tuple[int, TimeQuery]] = []
        for i, side in enumerate((a, b)):
            if side.measured_s is not None:
                logs[i] = math.log(side.measured_s)
                var[i][i] = TIME_NOISE**2
                continue
            rates = time_model.gpu_rates(side.gpu, costs.compute_precision, self.terms)
            if rates is None:
                return None
            queries.append((i, TimeQuery(side.gpu.name, costs, rates, side.m, side.k,
                                         self.machine_for(side.gpu.name),
                                         self.host_for(side.gpu.name))))
        if queries:
            centre, cov = self.time.joint([q for _, q in queries])
            for r, (i, _) in enumerate(queries):
                logs[i] = centre[r]
                for c, (j, _) in enumerate(queries):
                    var[i][j] = cov[r][c]
        d = logs[0] - logs[1]
        sd = math.sqrt(max(var[0][0] + var[1][1] - 2 * var[0][1], 0.0))
        return Band(math.exp(d), math.exp(d - Z90 * sd), math.exp(d + Z90 * sd))

    def basis(self, gpu: str) -> str:
        """Where a prediction for ``gpu`` gets its parameters from, in words."""
        machine = self.machine_for(gpu)
        host = (f"host of {machine}" if machine and self.time.has_machine(machine)
                else "host of an unmeasured machine (the spread between machines in the band)")
        carried = self.host_for(gpu)
        if carried is not None and carried.unmeasured:
            host = (f"host of an unmeasured machine from its probe (x{carried.factor:.2f} the "
                    "measured machines' typical host)")
        elif carried is not None:
            host += f", scaled x{carried.factor:.2f} by the host probes"
        memory = self.memory.slack_basis(gpu)
        if self.time.has_data(gpu):
            return f"model fitted to the {gpu} profile(s); {host}; {memory}"
        return f"model transferred from specs (no {gpu} profile; prior bands); {host}; {memory}"

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
# The GPUs whose profiles fit the model's global terms (GEMM efficiency of the stack, the
# GPU floor per launch, the host base): the H200 this project measured (13 workloads) and the
# published T4 table the first model was built on. Any other GPU's profile, shipped (the
# published L4 row) or the user's, fits only its own GPU's host and device terms: a row the
# model cannot fit (the L4's memory-bound work, bench/MODEL.md) must not move every other
# GPU's prediction.
GLOBAL_FIT_GPUS = ("H200-SXM", "T4")


def _cache_key(profiles: Sequence[Profile], archs: Sequence[ModelArch] = ()) -> Hashable:
    """What a fit depends on: the distinct profiles (in order) and the extra architectures."""
    keys = tuple(dict.fromkeys(_key(p) for p in profiles))
    return keys, tuple(sorted({a.name for a in archs}))


def fitted_model(
    profiles: Sequence[Profile], archs: Sequence[ModelArch] = (),
    anchor: FittedModel | None = None, terms: TimeModelParams = DEFAULT_PARAMS,
) -> FittedModel:
    """Fit both models to ``profiles`` (duplicates dropped), cached per process.

    A profile is used when its GPU is in the specs and its model is shipped or in ``archs``.
    With ``anchor`` (the reference model, when a user's profiles are added) the global time
    parameters stay at the anchor's fit: a profile then informs only its own GPU's host and
    device terms, never another GPU's, and its own GPU's memory slack (the memory model's
    activation scale, shared, is fitted on every profile). Without one, the globals are
    fitted on the profiles of :data:`GLOBAL_FIT_GPUS` alone and anchor the rest the same
    way. ``terms``: the time model's fixed terms (a bench's variant; the fit and its
    predictions use them).
    """
    # a machine nobody measured takes the centre of this fit's machines, or of the anchor's
    # when one is passed (a user's profile never moves another machine's host)
    own_centre = anchor is None
    if anchor is None and any(p.gpu not in GLOBAL_FIT_GPUS for p in profiles):
        core = [p for p in profiles if p.gpu in GLOBAL_FIT_GPUS]
        if core:
            anchor = fitted_model(core, archs, terms=terms)
    unique = list({_key(p): p for p in profiles}.items())
    extra = {a.name: a for a in archs}
    # the anchor itself keys the fit (the reference model and an automatic anchor can hold
    # the same profiles); anchors are cached models, so their identity is stable
    cache_key = (_cache_key(profiles, archs), None if anchor is None else id(anchor), terms,
                 own_centre)
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
        t, m = profile_observations(p, arch, specs[p.gpu], terms)
        times += t
        mems += m
        used.append(what)
    time_fit = (fit_time(times) if anchor is None else
                fit_time(times, priors=anchored_priors(anchor.time), fixed=TIME_GLOBALS,
                         unmeasured_host=None if own_centre else anchor.time.unmeasured_host))
    # a GPU without a memory profile takes the slack of its architecture's measured GPUs in
    # this fit, or in the anchor's when one is passed (a user's profile moves no other GPU's
    # slack; the shared activation scale is fitted on every profile)
    mem_fit = (fit_memory(mems, priors=anchor.memory.fit.overrides)
               if anchor is not None and not own_centre
               else with_sibling_slack(fit_memory(mems)))
    model = FittedModel(time_fit, mem_fit, tuple(used), tuple(unused), terms=terms)
    _CACHE[cache_key] = model
    return model


def with_user_profiles(arch: ModelArch, user_profiles: Sequence[Profile],
                       terms: TimeModelParams = DEFAULT_PARAMS) -> FittedModel:
    """The reference model, fitted again with the user's profiles (each informs its own
    GPU's host and device terms; the global terms and the centre a machine nobody measured
    gets stay at the reference fit)."""
    reference = reference_model(terms)
    if not user_profiles:
        return reference
    return fitted_model([*user_profiles, *reference_profiles()], archs=[arch],
                        anchor=reference, terms=terms)


def reference_profiles() -> list[Profile]:
    """The profiles shipped in the embedded data (read once per process; a new list)."""
    return list(_shipped_profiles())


@functools.cache
def _shipped_profiles() -> tuple[Profile, ...]:
    return tuple(loads_profile(text, f"data/profiles/{name}")
                 for name, text in embedded.reference_profile_texts())


REFERENCE_FIT = "reference_fit.json"  # embedded; gacost.advisor.build_reference_fit writes it
# The model's formulas, by name: change it with any formula of the model modules (a forgotten
# change fails tests/test_model_v2.py, which compares the saved fit with a new one).
MODEL_VERSION = ("2026-12-07 H200 stream at gpu-stream's full-occupancy rate, fused split 4 B, "
                 "GEMM efficiency shared within an architecture, no sqrt(v) buffer with the "
                 "fused AdamW, AdamW's bytes in the trained dtype at the stream rate, a "
                 "layer's backward 1.5 forwards of memory-bound time, the recompute stops before "
                 "an unwrapped down_proj, the attention rate over 76 traced splits, a machine "
                 "nobody measured at the centre of the measured machines, memory slack shared "
                 "within an architecture, the recomputed layer 1.86 working sets")


def model_constants(terms: TimeModelParams = DEFAULT_PARAMS) -> str:
    """Every constant of the model, as text: what, besides the formulas, the fit depends on.
    The time model's fixed terms ``terms`` field by field, then the upper-case values of the
    model modules (counted facts, priors, noise). Docstrings and comments are not in it."""
    from gacost.advisor import kernel_counts, memory_model, model_fit

    parts = [f"{time_model.__name__}.{TimeModelParams.__name__}.{f.name}="
             f"{getattr(terms, f.name)!r}" for f in fields(terms)]
    for mod in (time_model, memory_model, model_fit, kernel_counts):
        for name, value in sorted(vars(mod).items()):
            if name.isupper() and not callable(value) and not isinstance(value, TimeModelParams):
                parts.append(f"{mod.__name__}.{name}={value!r}")
    parts += [f"{name}={value!r}" for name, value in (
        ("GLOBAL_FIT_GPUS", GLOBAL_FIT_GPUS), ("FIRST_TRAINER_HOST", FIRST_TRAINER_HOST),
        ("LATER_TRAINER_HOST", LATER_TRAINER_HOST), ("CUDA_CONTEXT_GIB", CUDA_CONTEXT_GIB))]
    return "\n".join(parts)


def reference_fit_key(
    profiles: Sequence[Profile], terms: TimeModelParams = DEFAULT_PARAMS
) -> str:
    """What a saved reference fit must match: the profiles, the model's version, its fixed
    terms and constants (:func:`model_constants`) and the GPU table; a docstring or comment
    change needs no refit."""
    h = hashlib.sha256()
    for p in sorted(repr(_key(p)) for p in profiles):
        h.update(p.encode())
    h.update(MODEL_VERSION.encode())
    h.update(model_constants(terms).encode())
    h.update((embedded.data_root() / "gpus.csv").read_bytes())
    return h.hexdigest()[:20]


def reference_fit_to_dict(model: FittedModel, key: str) -> dict[str, Any]:
    """The reference fit as JSON-ready data (:func:`reference_model` reads it back)."""
    return {"key": key, "time": {**fit_to_dict(model.time.fit),
                                 "unmeasured_host": model.time.unmeasured_host},
            "memory": fit_to_dict(model.memory.fit), "used": list(model.used),
            "unused": list(model.unused)}


def _saved_reference(key: str, terms: TimeModelParams) -> FittedModel | None:
    """The saved reference fit when its key is ``key`` (the profiles' and ``terms``'), as a
    model that predicts with ``terms``; None when missing or stale."""
    entry = embedded.data_root() / REFERENCE_FIT
    try:
        d = json.loads(entry.read_text(encoding="utf-8"))
        if d.get("key") != key:
            return None
        return FittedModel(time_fit_from_dict(d["time"]), mem_fit_from_dict(d["memory"]),
                           tuple(d["used"]), tuple(d["unused"]), terms=terms)
    except (OSError, ValueError, KeyError, TypeError):
        return None  # missing or stale: fit again


def reference_model(terms: TimeModelParams = DEFAULT_PARAMS) -> FittedModel:
    """Both models fitted to the reference profiles: the fit saved in the embedded data when
    it matches the profiles and the model's code (:func:`reference_fit_key`), else a new fit
    (always with a bench's variant of the time model's ``terms``)."""
    profiles = reference_profiles()
    cache_key = (_cache_key(profiles), terms)
    hit = _CACHE.get(cache_key)
    if hit is not None:
        return hit
    saved = _saved_reference(reference_fit_key(profiles, terms), terms)
    if saved is None:
        return fitted_model(profiles, terms=terms)
    _CACHE[cache_key] = saved
    return saved
