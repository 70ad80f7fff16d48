"""``gacost recommend``: job + prices + profiles -> a :class:`Report` (data, no printing).

:func:`estimate_job` is the shared front half of every report: the job's split estimates on
every candidate GPU and the offers it may use; the planner does the rest."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gacost.advisor import predictor
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
)
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
    lines = [f"model fitted to: {'; '.join(model.used) or 'no profile (priors only)'}"]
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
    for o in offers:
        if o.gpu not in gpus or (wanted is not None and o.provider not in wanted):
            continue
        if not any(o.gpu_count == w for w in worlds):
            multi += 1
            continue
        kept.append(o)
    if multi and tuple(worlds) == (1,):
        notes.append(f"{multi} multi-GPU or fractional-GPU offers left out (single-GPU job)")
    elif multi:
        counts = ", ".join(str(w) for w in worlds)
        notes.append(f"{multi} offers left out: GPU count not {counts} (gpus_per_run)")
    return kept


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
                 user_profiles: Sequence[Profile] = ()) -> Estimated:
    """Every split of ``job`` on every candidate GPU (measured or predicted) and the offers
    of its GPUs and providers."""
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
            notes.append(f"profile for {p.gpu} ignored: another workload ({why})")
    for p in matched:
        if id(p) in user_ids and p.gpu not in gpu_names:
            notes.append(f"profile for {p.gpu} unused: {p.gpu} is not among the job's gpus")
    setup = TrainSetup(
        method=job.method, lora_r=job.lora.r, lora_targets=job.lora.targets,
        sequence_length=job.sequence_length, precision=job.precision,
        gradient_checkpointing=job.gradient_checkpointing,
    )
    fitted = (predictor.fitted_model([*user_profiles, *references], archs=[arch])
              if user_profiles else predictor.reference_model())
    worlds = job.world_sizes()
    estimates: list[SplitEstimate] = []
    skipped: list[SkippedGpu] = []
    for world in worlds:
        found, missed = estimate_splits(
            arch, setup, specs, job.splits(world), matched, job.vram_margin, model=fitted,
            world=world,
        )
        estimates += found
        skipped += [s for s in missed if s not in skipped]
    levers = [name for name, on in (("torch_compile", job.torch_compile is True),
                                    ("liger", job.liger is True)) if on]
    if levers:
        notes.append(f"predicted times assume no {' or '.join(levers)} (the model does not "
                     "cover them yet); measured profiles with them apply (`gacost calibrate "
                     "--compile/--liger`)")
    chosen = _filter_offers(job, offers, gpu_names, notes, worlds)
    for world in worlds:
        have = {o.gpu for o in chosen if o.gpu_count == world}
        no_price = sorted({e.gpu for e in estimates if e.world_size == world} - have)
        what = "single-GPU" if world == 1 else f"{world}-GPU"
        if no_price and (len(worlds) == 1 or world == 1):
            notes.append(f"no {what} offer in the price data for: {', '.join(no_price)}")
    return Estimated(model_name, arch, setup, fitted, estimates, skipped, chosen, notes)


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
    advice = calibration_advice(
        ranked, est.estimates, objective,
        model_ratio(est.fitted, est.arch, est.setup, gpu_table.gpu_specs()),
    )
    return Report(
        model=est.model, updates=base.updates, runs=base.runs, objective=base.objective,
        effective_batch=base.effective_batch, plans=ranked[:top], recommended=winner,
        splits_on_recommended=[
            e for e in est.estimates if e.gpu == winner.gpu and e.world_size == world
        ],
        best=best, break_evens=all_pairs(best, rates), skipped=est.skipped, notes=est.notes,
        price_as_of=price_as_of, price_source=price_source,
        estimates=est.estimates, calibrate=list(advice.gpus), advice=list(advice.reasons),
        model_fit=fit_lines(est.fitted),
    )
