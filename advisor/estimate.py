"""The front half every report shares: a job's split estimates on every candidate GPU (each
measured in a matching profile, else predicted with a 90% band), the offers of its GPUs and
providers, and the job's planning view (its run group and limits).

``recommend`` (:mod:`gacost.advisor.recommend`), ``budget`` (:mod:`gacost.advisor.budget`)
and ``compare`` (:mod:`gacost.advisor.compare`) start from :func:`estimate_job`; the planner
(:mod:`gacost.advisor.planner`) does the rest."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from gacost.advisor import checkpoints, predictor, time_model
from gacost.advisor.model_fit import HostScale
from gacost.advisor.planner import Limits, RunGroup
from gacost.advisor.predictor import TrainSetup
from gacost.advisor.split_estimates import (
    SkippedGpu,
    SplitEstimate,
    estimate_splits,
    matching_profiles,
    recorded_first,
)
from gacost.advisor.time_model import DEFAULT_PARAMS, TimeModelParams
from gacost.base import gpu_table, models
from gacost.base.errors import JobSpecError, UnknownNameError, did_you_mean
from gacost.base.gpu_names import no_spec_text, resolve_gpus, without_spec
from gacost.base.job import Job
from gacost.base.profile import TIMED, Profile
from gacost.base.records import ModelArch, Offer
from gacost.base.split import Split

# log sd of a host-bound time carried from one instance of a GPU kind to another by the
# ratio of their host probes (gacost.calibration.host_probe): the rms log error of the
# pairwise transfers between three starts of the lent H100 kind: 0.078 with the model's host
# factor for the ratio to PROBE_HOST_EXPONENT (below; in sample), 0.133 with its factor for
# the raw ratio, 0.169 scaling the time by the raw ratio (bench/results/host_speed.json
# "transfers"; bench/MODEL.md "Host speed: a probe"), rounded up: three starts are few
PROBE_LOG_SD = 0.15
# A machine nobody calibrated: its host time per launch is the model's host for a machine
# nobody measured (host_base x the centre of the measured machines, TimeFit.unmeasured_host)
# x (probe / REFERENCE_PROBE_MS) ** PROBE_HOST_EXPONENT. Both from the probed machine starts
# (bench/host_speed.py "reference probe", bench/MODEL.md "A probe for a machine nobody
# calibrated"): per start, the probe of its host-bound runs and the host scale at which the
# shipped model matches them (an unmeasured machine of its GPU kind); least squares in logs
# over sixteen starts (fourteen of the lent H100 kind, two H200): exponent 0.76 +- 0.09, P0
# 27.9 ms, residual log sd 0.123. Each start predicted from the others: rms log error 0.137
# against 0.149 with the probe's plain ratio (exponent 1 and the geometric mean of the
# starts' references, 27.5 ms over sixteen starts; that mean was the shipped reference until
# the twenty-eighth session: 28.1 ms over the first five starts, 26.3 over fourteen). An
# exponent under 1 is what a probe that reads its host with noise calls for, whatever part
# is the host's own elasticity; the same exponent carries a calibrated machine to another
# instance (carried_host). Refitted in the twenty-ninth session: LoRA dropout's host cost
# went 3 -> 2 launches per kernel (b 0.77 -> 0.75, P0 27.0 -> 25.8 ms), the unmeasured
# machine's host moved to the centre of the measured machines, x1.069 (P0 -> 28.2 ms, the
# same probe line in seconds), and a sixteenth start entered (b 0.76, P0 27.9 ms).
REFERENCE_PROBE_MS = 27.9
PROBE_HOST_EXPONENT = 0.76
# log sd of a host from its probe alone (a machine nobody calibrated): the carry error
# between instances (PROBE_LOG_SD, 0.15) and the fit's residual log sd (0.123 over sixteen
# starts) in quadrature (0.194; with the plain ratio and the starts' spread: 0.21 over eleven
# starts, until the twenty-fifth session, 0.199 over fourteen)
REFERENCE_PROBE_LOG_SD = 0.20


def probe_host_factor(probe_ratio: float) -> float:
    """A host's time per launch against another's, from the ratio of their probes."""
    return float(probe_ratio ** PROBE_HOST_EXPONENT)


@dataclass(frozen=True)
class HostProbe:
    """``gacost probe`` on the instance the user will train on: the mean ms per task, and the
    GPU kind the instance hosts ("": the GPU of the user's probed profile). The probe carries
    a probed profile's machine to the instance; without one it stands in for the host of a
    machine nobody measured."""

    ms: float
    gpu: str = ""


@dataclass(frozen=True)
class Estimated:
    """A job's split estimates for every candidate GPU, the offers it may use, and notes."""

    model: str
    arch: ModelArch
    setup: TrainSetup
    fitted: predictor.FittedModel
    estimates: list[SplitEstimate]
    skipped: list[SkippedGpu]
    offers: list[Offer]
    notes: list[str]


def estimate_job(job: Job, offers: Sequence[Offer],
                 user_profiles: Sequence[Profile] = (),
                 terms: TimeModelParams = DEFAULT_PARAMS,
                 host_probe: HostProbe | None = None) -> Estimated:
    """Every split of ``job`` on every candidate GPU (measured or predicted) and the offers
    of its GPUs and providers; ``terms``: the time model's fixed terms (a bench's variant);
    ``host_probe``: the host probe of the instance the user will train on
    (:func:`carried_host`)."""
    notes: list[str] = []
    model_name, cfg = models.load_model_config(job.model)
    arch = models.model_arch(model_name, cfg)
    gpu_names = (resolve_gpus(job.gpus, priced=(o.gpu for o in offers)) if job.gpus
                 else tuple(gpu_table.gpu_specs()))
    priced_only = without_spec(gpu_names)
    if priced_only == list(gpu_names):
        raise UnknownNameError(f"gpus: {no_spec_text(priced_only)}")
    specs = [gpu_table.gpu_specs()[g] for g in gpu_names if g not in priced_only]
    workload = job.workload(model_name)
    references = predictor.reference_profiles()
    matched, other = matching_profiles([*user_profiles, *references], workload)
    user_ids = {id(p) for p in user_profiles}
    for p, why in other:
        if id(p) in user_ids:
            notes.append(f"profile for {p.gpu} of another workload ({why}): it informs "
                         f"{p.gpu}'s host and device terms only, no measured time here")
    for p in matched:
        if id(p) in user_ids and p.gpu not in gpu_names:
            notes.append(f"profile for {p.gpu} unused: {p.gpu} is not among the job's gpus")
    setup = predictor.setup_for(workload)  # the one Workload -> TrainSetup conversion
    fitted = predictor.with_user_profiles(arch, user_profiles, terms)
    # your profile's machine hosts the predictions on its GPU (calibrate where you would
    # rent); every other GPU is predicted for a machine nobody measured
    machines: dict[str, str] = {}
    save_rates: dict[str, float] = {}  # a recorded run's checkpoints on that GPU's machine
    for p in sorted(user_profiles, key=recorded_first):
        machines.setdefault(p.gpu, p.machine)
        if p.save_seconds_per_gb is not None:
            save_rates.setdefault(p.gpu, p.save_seconds_per_gb)
    fitted = fitted.on_machines(machines)
    if host_probe is not None:
        gpu, host, line = carried_host(user_profiles, host_probe, machines)
        fitted = fitted.with_host(gpu, host)
        notes.append(line if gpu in gpu_names else
                     f"host probe for {gpu} unused: {gpu} is not among the job's gpus")
    worlds = job.world_sizes()
    estimates: list[SplitEstimate] = []
    skipped: list[SkippedGpu] = []
    profiles = [*user_profiles, *references]
    for levers in lever_choices(job):
        compiled, liger = "torch_compile" in levers, "liger" in levers
        lever_setup = replace(setup, torch_compile=compiled, liger=liger)
        mine, _ = matching_profiles(
            profiles, replace(workload, torch_compile=compiled, liger=liger))
        setup_s = compile_seconds_for(arch, mine, terms) if compiled else 0.0
        for world in worlds:
            found, missed = estimate_splits(
                arch, lever_setup, specs, job.splits(world), mine, job.vram_margin,
                model=fitted, world=world,
            )
            estimates += [replace(e, levers=levers, setup_seconds=setup_s,
                                  save_seconds_per_gb=save_rates.get(e.gpu)) for e in found]
            skipped += [s for s in missed if s not in skipped]
    if any(job_lever in (True, "auto") for job_lever in (job.torch_compile, job.liger)):
        notes.append("torch.compile / Liger predictions rest on one H200 measurement each "
                     "(bench/MODEL.md); `gacost calibrate --compile/--liger` measures them")
    chosen = _filter_offers(job, offers, gpu_names, notes, worlds)
    amd = amd_qlora_note(workload.method, sorted({e.gpu for e in estimates}))
    if amd:
        notes.append(amd)
    for world in worlds:
        have = {o.gpu for o in chosen if o.gpu_count == world}
        no_price = sorted({e.gpu for e in estimates if e.world_size == world} - have)
        what = "single-GPU" if world == 1 else f"{world}-GPU"
        if no_price and (len(worlds) == 1 or world == 1):
            notes.append(f"no {what} offer in the price data for: {', '.join(no_price)}")
    return Estimated(model_name, arch, setup, fitted, estimates, skipped, chosen, notes)


def carried_host(profiles: Sequence[Profile], probe: HostProbe,
                 machines: dict[str, str]) -> tuple[str, HostScale, str]:
    """The GPU whose host ``probe`` (``gacost probe`` on the instance to train on) informs,
    its :class:`HostScale`, and a note.

    A user's probed profile whose machine hosts its GPU's predictions: that machine carried
    to the instance, by the two probes' ratio. Otherwise ``probe.gpu`` names the GPU of a
    machine nobody measured: its host is the measured machines' typical host times the
    probe over :data:`REFERENCE_PROBE_MS`. One GPU only (the probe was taken on one
    instance)."""
    probed = {p.gpu: p for p in sorted(profiles, key=recorded_first)
              if p.host_probe_ms is not None and machines.get(p.gpu) == p.machine}
    if probe.gpu and probe.gpu not in probed:
        return _unmeasured_host(probe.gpu, probe.ms, machines)
    if not probed:
        raise JobSpecError(
            "--host-probe-ms: no --profile recorded a host probe; name the probed "
            "instance's GPU with --host-probe-gpu (a machine nobody calibrated), or "
            "calibrate there (`gacost calibrate` records one)")
    if len(probed) > 1:
        raise JobSpecError(
            f"--host-probe-ms: profiles of {', '.join(sorted(probed))} recorded host probes; "
            "name the GPU of the instance you probed with --host-probe-gpu")
    gpu, p = next(iter(probed.items()))
    assert p.host_probe_ms is not None
    factor = probe_host_factor(probe.ms / p.host_probe_ms)
    line = (f"{gpu}: host probe {probe.ms:g} ms on the instance to train on against "
            f"{p.host_probe_ms:g} ms where it was calibrated: its host time x{factor:.2f} "
            f"(the probe's error, {PROBE_LOG_SD:.0%} on the host's share, in the bands)")
    return gpu, HostScale(factor, PROBE_LOG_SD), line


def _unmeasured_host(gpu: str, ms: float, machines: dict[str, str]
                     ) -> tuple[str, HostScale, str]:
    """:func:`carried_host` for a machine nobody measured: ``gpu``'s host from its probe."""
    if gpu in machines:
        raise JobSpecError(
            f"--host-probe-gpu {gpu}: your profile for {gpu} recorded no host probe to carry "
            "its machine by; calibrate again (`gacost calibrate` records one), or leave "
            "--host-probe-ms out")
    factor = probe_host_factor(ms / REFERENCE_PROBE_MS)
    line = (f"{gpu}: host probe {ms:g} ms on the instance to train on, against "
            f"{REFERENCE_PROBE_MS:g} ms for the measured machines' typical host: host time "
            f"x{factor:.2f} (the probe's error, {REFERENCE_PROBE_LOG_SD:.0%} on the host's "
            "share, in the bands in place of the spread between machines)")
    return gpu, HostScale(factor, REFERENCE_PROBE_LOG_SD, unmeasured=True), line


def carried_splits(profile: Profile, probe_ms: float) -> list[tuple[Split, float, float]]:
    """Each timed split of ``profile`` as measured and as it would run on an instance of its
    machine whose host probe is ``probe_ms``: (split, seconds there, seconds here), by the
    model's host factor (:func:`carried_host`, fitted with the profile as ``recommend``
    fits it, :func:`predictor.with_user_profiles`); empty without a recorded probe, a known
    architecture or a GPU spec."""
    arch = predictor.arch_for(profile.workload.model)
    spec = gpu_table.gpu_specs().get(profile.gpu)
    if arch is None or spec is None or profile.host_probe_ms is None:
        return []
    setup = predictor.setup_for(profile.workload)
    machines = {profile.gpu: profile.machine}
    gpu, host, _ = carried_host([profile], HostProbe(probe_ms), machines)
    model = predictor.with_user_profiles(arch, [profile]).on_machines(machines).with_host(gpu, host)
    return [(s.split, s.seconds_per_update, s.seconds_per_update
             * model.host_factor(arch, setup, spec, s.micro_batch, s.grad_accum))
            for s in profile.splits if s.status in TIMED and s.seconds_per_update]


def lever_choices(job: Job) -> list[tuple[str, ...]]:
    """The combinations of machinery options the job allows: ``true`` always on, ``false``
    off, ``auto`` both ways (the planner picks, compile time amortised over each run)."""
    combos: list[tuple[str, ...]] = [()]
    for name, value in (("torch_compile", job.torch_compile), ("liger", job.liger)):
        if value is True:
            combos = [(*c, name) for c in combos]
        elif value == "auto":
            combos = [*combos, *((*c, name) for c in combos)]
    return combos


def compile_seconds_for(arch: ModelArch, profiles: Sequence[Profile],
                        terms: TimeModelParams = DEFAULT_PARAMS) -> float:
    """torch.compile's compilation per run: measured in a matching profile, else the prior."""
    measured = [s.compile_seconds for p in profiles for s in p.splits if s.compile_seconds]
    return max(measured) if measured else time_model.compile_seconds(arch, terms)


def _filter_offers(job: Job, offers: Sequence[Offer], gpus: Sequence[str],
                   notes: list[str], worlds: Sequence[int] = (1,)) -> list[Offer]:
    """Offers of the candidate GPUs and providers whose GPU count is one of ``worlds``."""
    known = sorted({o.provider for o in offers})
    wanted = None
    if job.providers is not None:
        wanted = set()
        for i, name in enumerate(job.providers):
            if name.lower() not in known:
                raise UnknownNameError(
                    f"providers[{i}]: unknown provider '{name}'{did_you_mean(name, known)}; "
                    f"known: {', '.join(known)}"
                )
            wanted.add(name.lower())
    kept, multi = [], 0
    unpriced: dict[str, int] = {}
    table = gpu_table.gpu_specs()
    for o in offers:
        # offers of a GPU without a spec: those that would fit the job, or every one of a
        # GPU the job names
        if (o.gpu not in table and (wanted is None or o.provider in wanted)
                and (o.gpu in gpus if job.gpus is not None
                     else any(o.gpu_count == w for w in worlds))):
            unpriced[o.gpu] = unpriced.get(o.gpu, 0) + 1
        if o.gpu not in gpus or o.gpu not in table or (
                wanted is not None and o.provider not in wanted):
            continue
        if not any(o.gpu_count == w for w in worlds):
            multi += 1
            continue
        kept.append(o)
    if unpriced:
        notes.append(unpriced_note(unpriced))
    if multi and tuple(worlds) == (1,):
        notes.append(f"{multi} multi-GPU or fractional-GPU offers left out (single-GPU job)")
    elif multi:
        counts = ", ".join(str(w) for w in worlds)
        notes.append(f"{multi} offers left out: GPU count not {counts} (gpus_per_run)")
    return kept


def unpriced_note(counts: dict[str, int]) -> str:
    """The offers left out because the GPU table has no row for their GPU, most first."""
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    parts = [f"{gpu} ({n} offer{'s' if n != 1 else ''})" if i == 0 else f"{gpu} ({n})"
             for i, (gpu, n) in enumerate(ranked)]
    return (f"{sum(counts.values())} offers left out, no spec for: {', '.join(parts)} "
            "(data/GPUS.md lists the GPU table)")


def amd_qlora_note(method: str, gpus: Sequence[str]) -> str | None:
    """The caveat for a QLoRA prediction on an AMD GPU: bitsandbytes 4-bit on ROCm was
    never measured for gacost, so the prediction carries the CUDA kernels' costs."""
    amd = [g for g in gpus if gpu_table.vendor(g) == "AMD"]
    if method != "qlora" or not amd:
        return None
    return (f"QLoRA on AMD ({', '.join(amd)}): bitsandbytes 4-bit on ROCm was never "
            "measured here; the prediction assumes the CUDA kernels' costs (data/GPUS.md, "
            "'Vendors and methods')")


def job_limits(job: Job, *, spot: bool | None = None, spot_allowance: float | None = None,
               parallel: int = 1, max_instances: int | None = None) -> Limits:
    """The job's limits, with any command-line overrides."""
    return Limits(
        spot=job.spot if spot is None else spot,
        spot_allowance=job.spot_allowance if spot_allowance is None else spot_allowance,
        parallel=parallel,
        max_instances=job.max_instances if max_instances is None else max_instances,
    )


def run_group(job: Job, est: Estimated, name: str = "job", runs: int | None = None) -> RunGroup:
    """The planning view of a (group) job: its runs, updates, and checkpoints as the job's
    ``save_steps`` and ``save_only_model`` write them (:mod:`gacost.advisor.checkpoints`)."""
    nbytes = checkpoints.checkpoint_bytes(est.arch, est.setup, weights_only=job.save_only_model)
    return RunGroup(name, job.runs if runs is None else runs, job.updates,
                    job.sequence_length, job.effective_batch,
                    save_every=checkpoints.save_interval(job.updates, job.save_steps),
                    save_bytes=nbytes)

