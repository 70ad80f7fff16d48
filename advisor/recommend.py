"""``gacost recommend``: job + prices + profiles -> a :class:`Report` (data, no printing).

The job's split estimates and offers come from :func:`gacost.advisor.estimate.estimate_job`
(the front half every report shares); the planner ranks the plans, and this module adds
what the recommendation says beyond them: break-even, the model fit, lever and host advice."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from gacost.advisor import model_fit, predictor, time_model
from gacost.advisor.breakeven import BreakEven, GpuBest, all_pairs, best_splits
from gacost.advisor.calibration_advice import calibration_advice, model_ratio
from gacost.advisor.estimate import Estimated, HostProbe, estimate_job, job_limits, run_group
from gacost.advisor.objectives import Objective, objective_of
from gacost.advisor.planner import Plan, candidate_plans, plan
from gacost.advisor.split_estimates import SkippedGpu, SplitEstimate
from gacost.base import gpu_table
from gacost.base.job import Job
from gacost.base.profile import Profile
from gacost.base.records import Offer


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


def job_objective(job: Job) -> Objective:
    """The objective the job names, with its deadline or budget."""
    return objective_of(job.objective, job.deadline_hours, job.budget_usd)


def lever_lines(est: Estimated, chosen: SplitEstimate) -> list[str]:
    """What each machinery option buys on the chosen GPU and split, and how busy the GPU is
    without them (a host-bound split is where compile and fused kernels pay)."""
    same = [e for e in est.estimates if e.gpu == chosen.gpu and e.world_size == chosen.world_size
            and e.split == chosen.split
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
    head = (f"levers on {chosen.gpu} at {chosen.split}: "
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
    head = (f"on {chosen.gpu}, split {chosen.split_label}: the GPU is busy about {busy:.0%} "
            "of the time, so the host's CPU decides it")
    probed = est.fitted.host_for(chosen.gpu)
    if probed is not None:
        return [f"{head} (this instance's host from its probe, x{probed.factor:.2f})"]
    host = est.fitted.params(chosen.gpu).host_s_per_launch
    spread = model_fit.TIME_PRIORS["host_dev"].sd
    return [f"{head} (a machine nobody measured: about {host * 1e6:.0f} us per kernel launch, "
            f"x/÷ {math.exp(model_fit.Z90 * spread):.1f} at 90% between machines); "
            "`gacost probe` on the rented "
            "instance (10 s, no GPU needed) tells its host's speed for --host-probe-ms, "
            "`gacost calibrate` there measures it"]


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


def recommend(
    job: Job,
    offers: Sequence[Offer],
    user_profiles: Sequence[Profile] = (),
    *,
    price_as_of: str = "",
    price_source: str = "",
    top: int = 10,
    host_probe: HostProbe | None = None,
) -> Report:
    """Plan the job (one run group: a sweep is planned by ``budget``) over the offers with
    the job's objective and limits; raises InfeasibleError when nothing qualifies.
    ``host_probe``: the host probe of the instance to train on (``estimate_job``)."""
    base = job.model_copy(update={"sweep": None}) if job.sweep is not None else job
    est = estimate_job(base, offers, user_profiles, host_probe=host_probe)
    limits = job_limits(base)
    candidates, _ = candidate_plans([(run_group(base, est), est.estimates)], est.offers, limits)
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
