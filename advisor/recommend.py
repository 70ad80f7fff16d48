"""``gacost recommend``: job + prices + profiles -> a :class:`Report` (data, no printing).

:func:`estimate_job` is the shared front half of every report: the job's split estimates on
every candidate GPU and the offers it may use; the planner does the rest."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from gacost.advisor import model_fit, predictor, time_model
from gacost.advisor.breakeven import BreakEven, GpuBest, all_pairs, best_splits
from gacost.advisor.calibration_advice import calibration_advice, model_ratio
from gacost.advisor.objectives import Objective, objective_of
from gacost.advisor.planner import Limits, Plan, RunGroup, candidate_plans, plan
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
from gacost.base.errors import UnknownNameError, did_you_mean
from gacost.base.job import Job
from gacost.base.profile import Profile
from gacost.base.records import ModelArch, Offer


@dataclass(frozen=True)
class Report:
    """Everything ``recommend`` shows, as data."""

    model: str
    updates: int
    runs: int
    objective: str
    effective_batch: int
    plans: list[Plan]
    recommended: Plan
    splits_on_recommended: list[SplitEstimate]
    best: dict[str, GpuBest]
    break_evens: list[BreakEven]
    skipped: list[SkippedGpu] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    price_as_of: str = ""
    price_source: str = ""
    estimates: list[SplitEstimate] = field(default_factory=list)
    calibrate: list[str] = field(default_factory=list)
    advice: list[str] = field(default_factory=list)
    model_fit: list[str] = field(default_factory=list)


def fit_lines(model: predictor.FittedModel) -> list[str]:
    """Which model parameters were fitted on which profiles, in words."""
    per_gpu: dict[str, int] = {}
    for u in model.used:
        per_gpu[u.split()[0]] = per_gpu.get(u.split()[0], 0) + 1
    counts = ", ".join(f"{g} {n}" for g, n in sorted(per_gpu.items()))
    lines = [f"model fitted to {len(model.used)} profile(s) ({counts})" if model.used
             else "model fitted to: no profile (priors only)"]

    for r in model.reports():
        if r.fitted:
            gpus = sorted({label.split()[0] for label in r.fitted_on})
            lines.append(f"{r.name} = {r.value:.4g} (90% {r.low:.3g}-{r.high:.3g}), "
                         f"fitted on {', '.join(gpus)} splits")
    return lines


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
        if (job.gpus is None and o.gpu not in table
                and (wanted is None or o.provider in wanted)
                and any(o.gpu_count == w for w in worlds)):
            unpriced[o.gpu] = unpriced.get(o.gpu, 0) + 1
        if o.gpu not in gpus or (wanted is not None and o.provider not in wanted):
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


def job_objective(job: Job) -> Objective:
    """The objective the job names, with its deadline or budget."""
    return objective_of(job.objective, job.deadline_hours, job.budget_usd)


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
                 terms: TimeModelParams = DEFAULT_PARAMS) -> Estimated:
    """Every split of ``job`` on every candidate GPU (measured or predicted) and the offers
    of its GPUs and providers; ``terms``: the time model's fixed terms (a bench's variant)."""
    notes: list[str] = []
    model_name, cfg = models.load_model_config(job.model)
    arch = models.model_arch(model_name, cfg)
    gpu_names = gpu_table.resolve_gpus(job.gpus) if job.gpus else tuple(gpu_table.gpu_specs())
    specs = [gpu_table.gpu_specs()[g] for g in gpu_names]
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
    reference = predictor.reference_model(terms)
    fitted = (predictor.fitted_model([*user_profiles, *references], archs=[arch],
                                     anchor=reference, terms=terms)
              if user_profiles else reference)
    # your profile's machine hosts the predictions on its GPU (calibrate where you would
    # rent); every other GPU is predicted for a machine nobody measured
    machines: dict[str, str] = {}
    for p in sorted(user_profiles, key=recorded_first):
        machines.setdefault(p.gpu, p.machine)
    fitted = fitted.on_machines(machines)
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
            estimates += [replace(e, levers=levers, setup_seconds=setup_s) for e in found]
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


def lever_lines(est: Estimated, chosen: SplitEstimate) -> list[str]:
    """What each machinery option buys on the chosen GPU and split, and how busy the GPU is
    without them (a host-bound split is where compile and fused kernels pay)."""
    same = [e for e in est.estimates if e.gpu == chosen.gpu and e.world_size == chosen.world_size
            and (e.micro_batch, e.grad_accum) == (chosen.micro_batch, chosen.grad_accum)
            and e.seconds_per_update]
    if not same:
        return []
    plain = min(same, key=lambda e: len(e.levers))  # the job's fixed options only
    assert plain.seconds_per_update is not None
    base_s = plain.seconds_per_update
    parts = []
    for e in sorted(same, key=lambda e: e.levers):
        if e is plain or e.seconds_per_update is None:
            continue
        gain = e.seconds_per_update / base_s - 1
        text = f"{'+'.join(e.levers)} {e.seconds_per_update:.3f} s/update ({gain:+.0%}, " \
               f"{e.time_source})"
        saved = base_s - e.seconds_per_update
        if e.setup_seconds and saved > 0:
            text += (f", compiling ~{e.setup_seconds:.0f} s per run pays back after "
                     f"{e.setup_seconds / saved:.0f} updates")
        parts.append(text)
    busy = gpu_busy(est, chosen)
    head = (f"levers on {chosen.gpu} at {chosen.micro_batch}x{chosen.grad_accum}: "
            f"{'+'.join(plain.levers) or 'none'} {base_s:.3f} s/update ({plain.time_source}"
            + (f", GPU busy about {busy:.0%}" if busy is not None else "") + ")")
    return [head + ("; " + "; ".join(parts) if parts else "")]


HOST_BOUND = 0.5  # GPU busy below this: the host's speed decides the time


def host_advice(est: Estimated, chosen: SplitEstimate) -> list[str]:
    """When the chosen split's predicted time is mostly host time, say that the (unknown)
    host of the rented instance decides it and which calibration settles it."""
    if chosen.time_source != "predicted":
        return []
    busy = gpu_busy(est, chosen)
    if busy is None or busy >= HOST_BOUND:
        return []
    prior = model_fit.TIME_PRIORS["host_base"]
    return [f"on {chosen.gpu}, split {chosen.split_label}: the GPU is busy about {busy:.0%} of "
            f"the time, so the host's CPU decides it (prior {prior.center * 1e6:.0f} us per "
            f"kernel launch, x/÷ {math.exp(model_fit.Z90 * prior.sd):.1f} at 90%); "
            f"`gacost calibrate` on the rented instance measures its host"]


def gpu_busy(est: Estimated, e: SplitEstimate) -> float | None:
    """The model's share of a micro-step the GPU is busy (no machinery options)."""
    spec = gpu_table.gpu_specs().get(e.gpu)
    if spec is None:
        return None
    costs = time_model.work_costs(est.arch, est.setup, est.fitted.terms)
    rates = time_model.gpu_rates(spec, costs.compute_precision, est.fitted.terms)
    if rates is None:
        return None
    part = time_model.micro_step(costs, rates, est.fitted.params(e.gpu), e.micro_batch)
    total = time_model.smooth_max(part.host, part.gpu, costs.terms.overlap)
    return min(1.0, part.gpu / total) if total > 0 else None


def run_group(job: Job, name: str = "job", runs: int | None = None) -> RunGroup:
    """The planning view of a (group) job."""
    return RunGroup(name, job.runs if runs is None else runs, job.updates,
                    job.sequence_length, job.effective_batch)


def recommend(
    job: Job,
    offers: Sequence[Offer],
    user_profiles: Sequence[Profile] = (),
    *,
    price_as_of: str = "",
    price_source: str = "",
    top: int = 10,
) -> Report:
    """Plan the job (one run group: a sweep is planned by ``budget``) over the offers with
    the job's objective and limits; raises InfeasibleError when nothing qualifies."""
    base = job.model_copy(update={"sweep": None}) if job.sweep is not None else job
    est = estimate_job(base, offers, user_profiles)
    limits = job_limits(base)
    candidates, _ = candidate_plans([(run_group(base), est.estimates)], est.offers, limits)
    objective = job_objective(base)
    ranked = plan(candidates, objective, limits)
    winner = ranked[0]
    # break-even compares GPUs at one world size: the recommended plan's
    world = winner.estimate.world_size
    same = [e for e in est.estimates if e.world_size == world]
    priced = {o.gpu for o in est.offers if o.gpu_count == world}
    best = {g: b for g, b in best_splits(same).items() if g in priced}
    rates: dict[str, float] = {}
    for p in ranked:
        if p.estimate.world_size == world:
            rates[p.gpu] = min(rates.get(p.gpu, p.rate_hour), p.rate_hour)
    lever_notes = lever_lines(est, winner.estimate) if any(
        v in (True, "auto") for v in (base.torch_compile, base.liger)) else []
    advice = calibration_advice(
        ranked, est.estimates, objective,
        model_ratio(est.fitted, est.arch, est.setup, gpu_table.gpu_specs()),
    )
    reasons = [*advice.reasons, *host_advice(est, winner.estimate)]
    return Report(
        model=est.model, updates=base.updates, runs=base.runs, objective=base.objective,
        effective_batch=base.effective_batch, plans=ranked[:top], recommended=winner,
        splits_on_recommended=[
            e for e in est.estimates if e.gpu == winner.gpu and e.world_size == world
        ],
        best=best, break_evens=all_pairs(best, rates), skipped=est.skipped,
        notes=[*lever_notes, *est.notes],
        price_as_of=price_as_of, price_source=price_source,
        estimates=est.estimates, calibrate=list(advice.gpus), advice=reasons,
        model_fit=fit_lines(est.fitted),
    )
