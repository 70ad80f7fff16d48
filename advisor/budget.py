"""Planning many runs: every run group on every offer, then deadlines and budgets.

:func:`collect` estimates each run group of the job (:meth:`gacost.base.job.Job.run_groups`)
and builds the candidate plans of the one planner (:mod:`gacost.advisor.planner`); a plan
runs every group on one offer. :func:`plan_budget` ranks them with the same objectives as
``recommend`` (:func:`budget_objective` picks one):

- a deadline (and perhaps a budget): :class:`~gacost.advisor.objectives.MinCostUnderDeadline`,
  each offer on the fewest instances (up to ``max_instances``) that meet it;
- the job's objective ``min_time_under_budget`` with a budget:
  :class:`~gacost.advisor.objectives.MinTimeUnderBudget`, the quickest plan that fits it;
- the job's objective ``min_time``: :class:`~gacost.advisor.objectives.MinTime`;
- otherwise, no budget: :class:`~gacost.advisor.objectives.MinCost`, with the wall-clock on
  ``parallel`` instances;
- otherwise, a budget alone: how many runs (one group) or complete sweeps it buys at each
  offer, most first (the cheapest unit first, which is the :class:`MinCost` order).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from gacost.advisor.estimate import HostProbe, estimate_job, run_group
from gacost.advisor.objectives import (
    FLAGS,
    MinCost,
    MinCostUnderDeadline,
    MinTime,
    MinTimeUnderBudget,
    Objective,
)
from gacost.advisor.planner import (
    NOTHING_FITS,
    TOL,
    Limits,
    Plan,
    RunGroup,
    candidate_plans,
    ceil_cents,
    plan,
)
from gacost.advisor.split_estimates import SplitEstimate
from gacost.base import durations
from gacost.base.errors import InfeasibleError
from gacost.base.job import Job
from gacost.base.profile import Profile
from gacost.base.records import Offer

Unit = Literal["run", "sweep"]


def units_affordable(budget_usd: float, unit_cost: float) -> int:
    """Whole runs or sweeps ``budget_usd`` buys at ``unit_cost`` each."""
    if unit_cost <= 0:
        raise ValueError("unit cost must be positive")
    return math.floor(budget_usd / unit_cost * (1.0 + TOL))


def unit_cost(p: Plan, unit: Unit) -> float:
    """Dollars for one run (single group) or one complete sweep."""
    return p.cost if unit == "sweep" else p.cost_per_run


@dataclass(frozen=True)
class BudgetRow:
    """One plan with what a budget or deadline asks of it."""

    plan: Plan
    unit_cost: float
    units_bought: int | None = None
    within_budget: bool | None = None


@dataclass(frozen=True)
class BudgetPlan:
    """Rows best first and the chosen one, with the parameters that produced them."""

    rows: list[BudgetRow]
    best: BudgetRow
    unit: Unit
    runs: int
    limits: Limits
    objective: Objective
    budget_usd: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def deadline_hours(self) -> float | None:
        """The deadline planned for, if any."""
        return self.objective.deadline_hours


@dataclass(frozen=True)
class Collected:
    """Every offer that can run every group, with the groups and notes."""

    model: str
    groups: tuple[RunGroup, ...]
    plans: list[Plan]
    notes: list[str]
    dropped: list[str] = field(default_factory=list)


def collect(job: Job, offers: Sequence[Offer], profiles: Sequence[Profile] = (),
            limits: Limits | None = None, *, host_probe: HostProbe | None = None) -> Collected:
    """Candidate plans (every offer and pricing option that runs every run group);
    ``host_probe``: the instance to train on (:func:`~gacost.advisor.estimate.estimate_job`)."""
    limits = limits or Limits()
    groups: list[tuple[RunGroup, Sequence[SplitEstimate]]] = []
    notes: list[str] = []
    model = job.model
    for g in job.run_groups():
        est = estimate_job(g.job, offers, profiles, host_probe=host_probe)
        model = est.model
        if not any(e.fits and e.seconds_per_update is not None for e in est.estimates):
            what = f"sweep group '{g.name}': " if job.sweep is not None else ""
            raise InfeasibleError(f"{what}{NOTHING_FITS}")
        groups.append((run_group(g.job, est, g.name, g.runs), est.estimates))
        notes += [n for n in est.notes if n not in notes]
        offers_here = est.offers
    plans, missing = candidate_plans(groups, offers_here, limits)
    left_out = [f"{gpu} left out: group(s) {', '.join(sorted(names))} do not fit it"
                for gpu, names in sorted(missing.items())]
    if not plans:
        if missing:
            raise InfeasibleError(
                "no GPU with a price can run every group of the sweep; "
                + "; ".join(f"{gpu}: {', '.join(sorted(n))} do not fit"
                            for gpu, n in sorted(missing.items())))
        raise InfeasibleError(NOTHING_FITS)
    return Collected(model, tuple(g for g, _ in groups), plans, notes + left_out, left_out)


def budget_objective(job_objective: str = "min_cost", deadline_hours: float | None = None,
                     budget_usd: float | None = None) -> Objective:
    """The objective ``budget`` plans with: a deadline asks for the cheapest plan that meets
    it; else the job's time objectives are honoured (as ``recommend`` does); else the
    cheapest (see the module docstring)."""
    if deadline_hours is not None:
        return MinCostUnderDeadline(deadline_hours, budget_usd, FLAGS)
    if job_objective == "min_time_under_budget" and budget_usd is not None:
        return MinTimeUnderBudget(budget_usd, FLAGS)
    if job_objective == "min_time":
        return MinTime(FLAGS)
    return MinCost(FLAGS)


def plan_budget(
    candidates: Sequence[Plan],
    limits: Limits,
    *,
    deadline_hours: float | None = None,
    budget_usd: float | None = None,
    job_objective: str = "min_cost",
) -> BudgetPlan:
    """Rank the candidate plans for a deadline, a budget, both or neither, with the job's
    objective (see the module docstring); raises InfeasibleError, saying what would be
    feasible."""
    if not candidates:
        raise InfeasibleError("no offer can run every group of the job")
    unit: Unit = "sweep" if len(candidates[0].groups) > 1 else "run"
    runs = candidates[0].runs
    objective = budget_objective(job_objective, deadline_hours, budget_usd)
    ranked = plan(candidates, objective, limits)
    rows = [_row(p, unit, budget_usd) for p in ranked]
    notes: list[str] = []
    if budget_usd is not None:
        cheapest = min(ranked, key=lambda p: p.cost)
        notes.append(f"the whole job costs ${cheapest.cost:.2f} at the cheapest "
                     f"({cheapest.label}); the budget is ${budget_usd:g}")
    if isinstance(objective, MinCost) and budget_usd is not None:
        rows.sort(key=lambda r: (-(r.units_bought or 0), r.unit_cost, r.plan.key))
        if not rows[0].units_bought:
            cheap = min(rows, key=lambda r: r.unit_cost)
            shrink = "fewer or shorter runs" if unit == "run" else "a smaller sweep"
            raise InfeasibleError(
                f"--budget: ${budget_usd:g} buys no complete {unit} at any offer; the "
                f"cheapest {unit} ({cheap.plan.label}) costs ${cheap.unit_cost:.2f}: "
                f"raise --budget to at least {ceil_cents(cheap.unit_cost):.2f}, or plan {shrink}"
            )
    return BudgetPlan(rows, rows[0], unit, runs, limits, objective, budget_usd, notes)


def _row(p: Plan, unit: Unit, budget_usd: float | None) -> BudgetRow:
    cost = unit_cost(p, unit)
    if budget_usd is None:
        return BudgetRow(p, cost)
    return BudgetRow(p, cost, units_affordable(budget_usd, cost),
                     p.cost <= budget_usd * (1.0 + TOL))


def best_by_pricing(bp: BudgetPlan, pricing: str) -> BudgetRow | None:
    """The best-ranked row of one pricing option, if any (every row qualifies)."""
    for r in bp.rows:
        if r.plan.pricing == pricing and (bp.deadline_hours is not None
                                          or bp.budget_usd is None or r.units_bought):
            return r
    return None


def parse_hours(text: str) -> float:
    """``12h``, ``90m``, ``1.5d``, ``45s`` or a bare number of hours -> hours (> 0)."""
    return durations.parse_hours(text)  # the one duration parser (gacost.base.durations)
