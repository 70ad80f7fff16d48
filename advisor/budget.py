"""Planning many runs: totals, wall-clock on P instances, deadlines and budgets.

Per-run hours come from :func:`advisor.recommend.recommend` on each run group's job
(:meth:`advisor.job.Job.run_groups`); :func:`collect` is the only function here that calls
it. Everything else is arithmetic over :class:`OfferPlan` records:

- a run is indivisible and runs on one instance; P instances of one offer run the runs in
  parallel, packed longest-processing-time first (LPT: each run, longest first, goes to the
  least-loaded instance). The wall-clock is the makespan of that packing;
- billing is per busy hour: cost = GPU-hours x rate, whatever P is;
- spot hours are inflated by an interruption allowance (0.2 = 20 % more time, so 20 % more
  GPU-hours and dollars) in wall-clock and cost alike.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from gacost.advisor.planner import Plan, Pricing
from gacost.advisor.recommend import recommend
from gacost.advisor.split_estimates import Source
from gacost.base.errors import InfeasibleError
from gacost.base.job import Job
from gacost.base.profile import Profile
from gacost.base.records import Offer

Unit = Literal["run", "sweep"]
_TOL = 1e-9
OfferKey = tuple[str, str, str, str, str]


@dataclass(frozen=True)
class GroupRun:
    """One run group on one offer: its best split and raw (allowance-free) hours per run."""

    group: str
    runs: int
    updates: int
    sequence_length: int
    effective_batch: int
    micro_batch: int
    grad_accum: int
    seconds_per_update: float
    time_source: Source
    hours_per_run: float

    @property
    def split(self) -> str:
        """``m x k`` as text."""
        return f"{self.micro_batch}x{self.grad_accum}"


@dataclass(frozen=True)
class OfferPlan:
    """Every run group of a job on one offer and pricing option."""

    gpu: str
    provider: str
    region: str
    instance_type: str
    pricing: Pricing
    rate_hour: float
    allowance: float
    groups: tuple[GroupRun, ...]

    @property
    def key(self) -> OfferKey:
        """Identifies the offer and pricing option."""
        return (self.gpu, self.provider, self.region, self.instance_type, self.pricing)

    @property
    def label(self) -> str:
        """``GPU on provider region (instance, pricing)``."""
        return (f"{self.gpu} on {self.provider} {self.region} "
                f"({self.instance_type}, {self.pricing})")

    def wall_hours_per_run(self, g: GroupRun) -> float:
        """One run's hours on this offer, the spot allowance included."""
        return g.hours_per_run * (1.0 + self.allowance)

    @property
    def runs(self) -> int:
        """Runs in all."""
        return sum(g.runs for g in self.groups)

    def run_hours(self) -> list[float]:
        """The hours of every single run (allowance included)."""
        return [self.wall_hours_per_run(g) for g in self.groups for _ in range(g.runs)]

    @property
    def gpu_hours(self) -> float:
        """Instance-hours of all runs (allowance included)."""
        return sum(g.runs * self.wall_hours_per_run(g) for g in self.groups)

    @property
    def cost(self) -> float:
        """Dollars for all runs: GPU-hours x rate."""
        return self.gpu_hours * self.rate_hour

    @property
    def longest_run_hours(self) -> float:
        """The longest single run: no number of instances finishes sooner."""
        return max((self.wall_hours_per_run(g) for g in self.groups), default=0.0)


def lpt_loads(durations: Sequence[float], instances: int) -> list[float]:
    """Hours per instance when runs, longest first, go to the least-loaded instance."""
    if instances <= 0:
        raise ValueError("instances must be positive")
    heap = [(0.0, i) for i in range(instances)]
    for d in sorted(durations, reverse=True):
        load, i = heapq.heappop(heap)
        heapq.heappush(heap, (load + d, i))
    return [load for load, _ in sorted(heap, key=lambda t: t[1])]


def makespan(durations: Sequence[float], instances: int) -> float:
    """Wall-clock hours of the LPT packing on ``instances`` instances."""
    return max(lpt_loads(durations, instances), default=0.0)


def fewest_instances(durations: Sequence[float], deadline_hours: float,
                     limit: int) -> int | None:
    """The fewest instances (at most ``limit``) whose LPT makespan meets the deadline."""
    if not durations:
        return 1
    target = deadline_hours * (1.0 + _TOL)
    if max(durations) > target:
        return None
    start = max(1, math.ceil(sum(durations) / deadline_hours - _TOL))
    for p in range(start, min(limit, len(durations)) + 1):
        if makespan(durations, p) <= target:
            return p
    return None


def units_affordable(budget_usd: float, unit_cost: float) -> int:
    """Whole runs or sweeps ``budget_usd`` buys at ``unit_cost`` each."""
    if unit_cost <= 0:
        raise ValueError("unit cost must be positive")
    return math.floor(budget_usd / unit_cost * (1.0 + _TOL))


def unit_of(plans: Sequence[OfferPlan]) -> Unit:
    """``run`` for a single-group job, ``sweep`` for several groups."""
    return "sweep" if plans and len(plans[0].groups) > 1 else "run"


def unit_cost(plan: OfferPlan, unit: Unit) -> float:
    """Dollars for one run (single group) or one complete sweep."""
    if unit == "sweep":
        return plan.cost
    g = plan.groups[0]
    return plan.wall_hours_per_run(g) * plan.rate_hour


@dataclass(frozen=True)
class BudgetRow:
    """One offer's figures; deadline and budget fields are None when not asked for."""

    plan: OfferPlan
    parallel: int
    wall_hours: float
    unit_cost: float
    instances: int | None = None
    deadline_wall_hours: float | None = None
    meets_deadline: bool | None = None
    units_bought: int | None = None
    within_budget: bool | None = None


@dataclass(frozen=True)
class BudgetPlan:
    """Rows best first and the chosen one, with the parameters that produced them."""

    rows: list[BudgetRow]
    best: BudgetRow
    unit: Unit
    runs: int
    parallel: int
    max_instances: int
    deadline_hours: float | None
    budget_usd: float | None
    notes: list[str] = field(default_factory=list)


def _ceil2(x: float) -> float:
    return math.ceil(x * 100.0 - 1e-6) / 100.0


def plan_budget(
    plans: Sequence[OfferPlan],
    *,
    parallel: int = 1,
    deadline_hours: float | None = None,
    budget_usd: float | None = None,
    max_instances: int = 8,
) -> BudgetPlan:
    """Rank offers for the job; raises InfeasibleError, saying what would be feasible.

    Without constraints: cheapest first. With a deadline: for each offer the fewest
    instances (up to ``max_instances``) meeting it, cheapest feasible first (and within the
    budget, if one is given). With only a budget: the most runs (single group) or complete
    sweeps it buys, most first.
    """
    if not plans:
        raise InfeasibleError("no offer can run every group of the job")
    if parallel <= 0 or max_instances <= 0:
        raise ValueError("parallel and max_instances must be positive")
    unit = unit_of(plans)
    rows = []
    for p in plans:
        durations = p.run_hours()
        row = BudgetRow(p, parallel, makespan(durations, parallel), unit_cost(p, unit))
        if deadline_hours is not None:
            n = fewest_instances(durations, deadline_hours, max_instances)
            at = n if n is not None else min(max_instances, len(durations))
            row = replace(row, instances=n, deadline_wall_hours=makespan(durations, at),
                          meets_deadline=n is not None)
        if budget_usd is not None:
            row = replace(row, units_bought=units_affordable(budget_usd, row.unit_cost),
                          within_budget=p.cost <= budget_usd * (1.0 + _TOL))
        rows.append(row)
    base = BudgetPlan(rows, rows[0], unit, plans[0].runs, parallel, max_instances,
                      deadline_hours, budget_usd)
    if deadline_hours is not None:
        return _by_deadline(base)
    if budget_usd is not None:
        return _by_budget(base)
    ranked = sorted(rows, key=lambda r: (r.plan.cost, r.plan.gpu_hours, r.plan.key))
    return replace(base, rows=ranked, best=ranked[0])


def _ok(r: BudgetRow) -> bool:
    return bool(r.meets_deadline) and r.within_budget is not False


def best_by_pricing(bp: BudgetPlan, pricing: Pricing) -> BudgetRow | None:
    """The best-ranked row of one pricing option that meets the constraints, if any."""
    for r in bp.rows:
        if r.plan.pricing == pricing and (bp.deadline_hours is None or _ok(r)) and (
                bp.budget_usd is None or bp.deadline_hours is not None or r.units_bought):
            return r
    return None


def _by_deadline(bp: BudgetPlan) -> BudgetPlan:
    assert bp.deadline_hours is not None
    ranked = sorted(bp.rows, key=lambda r: (
        not _ok(r), r.plan.cost if _ok(r) else r.deadline_wall_hours or 0.0,
        r.instances or 0, r.plan.key))
    if not _ok(ranked[0]):
        raise InfeasibleError(_deadline_advice(bp))
    notes = []
    if bp.budget_usd is not None:
        notes.append(_budget_note(bp))
    return replace(bp, rows=ranked, best=ranked[0], notes=notes)


def _deadline_advice(bp: BudgetPlan) -> str:
    assert bp.deadline_hours is not None
    d, n, cap = bp.deadline_hours, bp.runs, bp.max_instances
    meeting = [r for r in bp.rows if r.meets_deadline]
    if meeting and bp.budget_usd is not None:
        cheapest = min(meeting, key=lambda r: r.plan.cost)
        text = (f"--budget: no offer finishes the {n} run(s) in {hours_text(d)} for "
                f"${bp.budget_usd:g}; the cheapest that does, {cheapest.plan.label} on "
                f"{cheapest.instances} instance(s), costs ${cheapest.plan.cost:.2f}: "
                f"raise --budget to at least {_ceil2(cheapest.plan.cost):.2f}")
        affordable = [r for r in bp.rows if r.within_budget]
        if affordable:
            late = min(affordable, key=lambda r: r.deadline_wall_hours or 0.0)
            text += (f", or give --deadline {_ceil2(late.deadline_wall_hours or 0.0):g}h or "
                     f"later ({late.plan.label}, ${late.plan.cost:.2f})")
        return text
    fastest = min(bp.rows, key=lambda r: (r.deadline_wall_hours or 0.0, r.plan.cost))
    need = fastest.deadline_wall_hours or 0.0
    used = min(cap, len(fastest.plan.run_hours()))
    text = (f"--deadline: no offer finishes the {n} run(s) in {hours_text(d)} on at most {cap} "
            f"instance(s); the fastest, {fastest.plan.label}, needs {need:.2f} h on {used}: "
            f"give --deadline {_ceil2(need):g}h or later")
    more = []
    for r in bp.rows:
        k = fewest_instances(r.plan.run_hours(), d, len(r.plan.run_hours()))
        if k is not None:
            more.append((k, r.plan.cost, r))
    if more:
        k, _, r = min(more, key=lambda t: (t[0], t[1]))
        text += (f", or allow --max-instances {k} ({r.plan.label} then meets "
                 f"{hours_text(d)} for ${r.plan.cost:.2f})")
    else:
        longest = min(r.plan.longest_run_hours for r in bp.rows)
        text += (f"; a single run takes at least {longest:.2f} h, so more instances "
                 "cannot help")
    return text


def _budget_note(bp: BudgetPlan) -> str:
    assert bp.budget_usd is not None
    cheapest = min(bp.rows, key=lambda r: r.plan.cost)
    return (f"the whole job costs ${cheapest.plan.cost:.2f} at the cheapest "
            f"({cheapest.plan.label}); the budget is ${bp.budget_usd:g}")


def _by_budget(bp: BudgetPlan) -> BudgetPlan:
    assert bp.budget_usd is not None
    ranked = sorted(bp.rows, key=lambda r: (-(r.units_bought or 0), r.unit_cost, r.plan.key))
    best = ranked[0]
    if not best.units_bought:
        cheapest = min(bp.rows, key=lambda r: r.unit_cost)
        shrink = "fewer or shorter runs" if bp.unit == "run" else "a smaller sweep"
        raise InfeasibleError(
            f"--budget: ${bp.budget_usd:g} buys no complete {bp.unit} at any offer; the "
            f"cheapest {bp.unit} ({cheapest.plan.label}) costs ${cheapest.unit_cost:.2f}: "
            f"raise --budget to at least {_ceil2(cheapest.unit_cost):.2f}, or plan {shrink}"
        )
    return replace(bp, rows=ranked, best=best, notes=[_budget_note(bp)])


def row_dict(r: BudgetRow) -> dict[str, Any]:
    """One row as a flat dict (numbers stay numbers); the table shows the same fields."""
    p = r.plan
    out: dict[str, Any] = {
        "gpu": p.gpu, "provider": p.provider, "region": p.region,
        "instance_type": p.instance_type, "pricing": p.pricing, "rate_hour": p.rate_hour,
        "spot_allowance": p.allowance, "runs": p.runs, "gpu_hours": p.gpu_hours,
        "cost": p.cost, "unit_cost": r.unit_cost, "parallel": r.parallel,
        "wall_hours": r.wall_hours,
    }
    if r.meets_deadline is not None:
        out.update(instances=r.instances, deadline_wall_hours=r.deadline_wall_hours,
                   meets_deadline=r.meets_deadline)
    if r.units_bought is not None:
        out.update(units_bought=r.units_bought, within_budget=r.within_budget)
    out["splits"] = splits_text(p)
    return out


def splits_text(p: OfferPlan) -> str:
    """``4x1`` for one group, ``name=4x1 other=2x2`` for several."""
    if len(p.groups) == 1:
        return p.groups[0].split
    return " ".join(f"{g.group}={g.split}" for g in p.groups)


def hours_text(hours: float) -> str:
    """A duration for messages: ``20 min`` below an hour, else ``1.5 h``."""
    return f"{hours * 60:.0f} min" if hours < 1 else f"{hours:.3g} h"


def groups_dict(p: OfferPlan) -> list[dict[str, Any]]:
    """Per-group details of one offer (for JSON)."""
    return [
        {"group": g.group, "runs": g.runs, "updates": g.updates,
         "sequence_length": g.sequence_length, "effective_batch": g.effective_batch,
         "micro_batch": g.micro_batch, "grad_accum": g.grad_accum,
         "seconds_per_update": g.seconds_per_update, "time_source": g.time_source,
         "hours_per_run": g.hours_per_run, "wall_hours_per_run": p.wall_hours_per_run(g)}
        for g in p.groups
    ]


@dataclass(frozen=True)
class GroupInfo:
    """A run group as planned."""

    name: str
    runs: int
    updates: int
    sequence_length: int
    effective_batch: int


@dataclass(frozen=True)
class Collected:
    """Every offer that can run every group, with the groups and notes."""

    model: str
    groups: tuple[GroupInfo, ...]
    plans: list[OfferPlan]
    notes: list[str]
    dropped: list[str] = field(default_factory=list)


def collect(
    job: Job,
    offers: Sequence[Offer],
    profiles: Sequence[Profile] = (),
    *,
    spot: bool = False,
    spot_allowance: float = 0.2,
) -> Collected:
    """Per-offer plans for every run group of ``job`` (via ``recommend``, unconstrained)."""
    if spot_allowance < 0:
        raise ValueError("spot_allowance must not be negative")
    groups = job.run_groups()
    per_group: list[dict[OfferKey, Plan]] = []
    infos: list[GroupInfo] = []
    notes: list[str] = []
    model = job.model
    for g in groups:
        plain = g.job.model_copy(update={"objective": "min_cost", "deadline_hours": None,
                                         "budget_usd": None, "spot": spot})
        try:
            report = recommend(plain, offers, profiles, top=2 * len(offers) + 1)
        except InfeasibleError as exc:
            if job.sweep is None:
                raise
            raise InfeasibleError(f"sweep group '{g.name}': {exc}") from None
        model = report.model
        per_group.append({_plan_key(p): p for p in report.plans})
        infos.append(GroupInfo(g.name, g.runs, plain.updates, plain.sequence_length,
                               plain.effective_batch))
        notes += [n for n in report.notes if n not in notes]
    plans = []
    dropped: dict[str, set[str]] = {}
    for key, first in per_group[0].items():
        chosen = [(info, table.get(key)) for info, table in zip(infos, per_group, strict=True)]
        missing = [info.name for info, p in chosen if p is None]
        if missing:
            dropped.setdefault(first.gpu, set()).update(missing)
            continue
        runs = tuple(_group_run(info, p) for info, p in chosen if p is not None)
        plans.append(OfferPlan(first.gpu, first.provider, first.region, first.instance_type,
                               first.pricing, first.rate_hour,
                               spot_allowance if first.pricing == "spot" else 0.0, runs))
    left_out = [f"{gpu} left out: group(s) {', '.join(sorted(names))} do not fit it"
                for gpu, names in sorted(dropped.items())]
    if not plans:
        raise InfeasibleError(
            "no GPU with a price can run every group of the sweep; "
            + "; ".join(f"{gpu}: {', '.join(sorted(n))} do not fit" for gpu, n in
                        sorted(dropped.items()))
        )
    return Collected(model, tuple(infos), plans, notes + left_out, left_out)


def _plan_key(p: Plan) -> OfferKey:
    return (p.gpu, p.provider, p.region, p.instance_type, p.pricing)


def _group_run(info: GroupInfo, p: Plan) -> GroupRun:
    return GroupRun(info.name, info.runs, info.updates, info.sequence_length,
                    info.effective_batch, p.micro_batch, p.grad_accum, p.seconds_per_update,
                    p.time_source, p.hours_per_run)


def parse_hours(text: str) -> float:
    """``12h``, ``90m``, ``1.5d``, ``45s`` or a bare number of hours -> hours (> 0)."""
    value = text.strip().lower()
    scale = {"s": 1 / 3600, "m": 1 / 60, "h": 1.0, "d": 24.0}.get(value[-1:], None)
    number = value[:-1] if scale is not None else value
    try:
        hours = float(number) * (scale if scale is not None else 1.0)
    except ValueError:
        raise ValueError(
            f"expected a duration like 12h, 90m, 1.5d or hours, got {text!r}") from None
    if not math.isfinite(hours) or hours <= 0:
        raise ValueError(f"must be a positive duration, got {text!r}")
    return hours
