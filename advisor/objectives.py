"""What a plan is optimised for: small classes that validate their parameters.

Each objective picks how many instances a candidate plan runs on (within
:class:`~gacost.advisor.planner.Limits`), says whether it qualifies, ranks the plans and,
when none qualifies, says what would. The meaning of a deadline and of parallel instances
is the same everywhere: a deadline is the wall-clock of all runs; runs may be spread over
up to ``max_instances`` instances of one offer, and since billing is per busy hour that
costs nothing extra.

- :class:`MinCost`: cheapest; runs on ``parallel`` instances (default 1).
- :class:`MinTime`: quickest wall-clock; as many instances as shorten it.
- :class:`MinCostUnderDeadline`: cheapest that finishes in time, on the fewest instances
  that meet the deadline (and within a budget, if one is given).
- :class:`MinTimeUnderBudget`: quickest whose cost fits the budget.

Messages name the field the user set: a job key (``deadline_hours``) or a flag
(``--deadline``), given by :class:`Fields`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from gacost.advisor.planner import (
    TOL,
    Limits,
    Plan,
    ceil_cents,
    fewest_instances,
    makespan,
    quickest_instances,
)


@dataclass(frozen=True)
class Fields:
    """How messages name the user's settings (job keys by default)."""

    deadline: str = "deadline_hours"
    budget: str = "budget_usd"
    max_instances: str = "max_instances"


FLAGS = Fields(deadline="--deadline", budget="--budget", max_instances="--max-instances")


def _positive(name: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")


def hours_text(hours: float) -> str:
    """A duration for messages: ``20 min`` below an hour, else ``1.5 h``."""
    return f"{hours * 60:.0f} min" if hours < 1 else f"{hours:.3g} h"


class Objective:
    """Base: runs on ``parallel`` instances, every plan qualifies, cheapest first."""

    name: ClassVar[str] = "min_cost"
    ranks_by_time: ClassVar[bool] = False
    fields: Fields

    def choose(self, plan: Plan, limits: Limits) -> Plan | None:
        """``plan`` on the instance count this objective wants, or None if it cannot
        qualify."""
        return plan.on(limits.parallel)

    def sort_key(self, plan: Plan) -> tuple[float, float, int, tuple[str, ...]]:
        """Cheapest first, then quickest."""
        return (plan.cost, plan.wall_hours, plan.instances, plan.key)

    def infeasible(self, plans: Sequence[Plan], limits: Limits) -> str:
        """Why nothing qualifies and what would (only objectives with constraints)."""
        return "no plan qualifies"

    @property
    def deadline_hours(self) -> float | None:
        """The deadline, for objectives that have one."""
        return None

    @property
    def budget_usd(self) -> float | None:
        """The budget, for objectives that have one."""
        return None


@dataclass(frozen=True)
class MinCost(Objective):
    """The cheapest plan."""

    name: ClassVar[str] = "min_cost"
    fields: Fields = field(default_factory=Fields)


@dataclass(frozen=True)
class MinTime(Objective):
    """The quickest plan: runs spread over as many instances as shorten the wall-clock."""

    name: ClassVar[str] = "min_time"
    ranks_by_time: ClassVar[bool] = True
    fields: Fields = field(default_factory=Fields)

    def choose(self, plan: Plan, limits: Limits) -> Plan | None:
        return plan.on(quickest_instances(plan.run_blocks(), limits.max_instances))

    def sort_key(self, plan: Plan) -> tuple[float, float, int, tuple[str, ...]]:
        return (plan.wall_hours, plan.cost, plan.instances, plan.key)


@dataclass(frozen=True)
class MinCostUnderDeadline(Objective):
    """The cheapest plan that finishes every run within ``deadline_hours`` (and costs at
    most ``budget``, if given), on the fewest instances that meet the deadline."""

    name: ClassVar[str] = "min_cost_under_deadline"
    deadline: float
    budget: float | None = None
    fields: Fields = field(default_factory=Fields)

    def __post_init__(self) -> None:
        _positive(self.fields.deadline, self.deadline)
        if self.budget is not None:
            _positive(self.fields.budget, self.budget)

    @property
    def deadline_hours(self) -> float | None:
        return self.deadline

    @property
    def budget_usd(self) -> float | None:
        return self.budget

    def choose(self, plan: Plan, limits: Limits) -> Plan | None:
        n = fewest_instances(plan.run_blocks(), self.deadline, limits.max_instances)
        if n is None:
            return None
        chosen = plan.on(n)
        if self.budget is not None and chosen.cost > self.budget * (1.0 + TOL):
            return None
        return chosen

    def infeasible(self, plans: Sequence[Plan], limits: Limits) -> str:
        f, d, cap = self.fields, self.deadline, limits.max_instances
        n = plans[0].runs
        meeting = [p.on(k) for p in plans
                   if (k := fewest_instances(p.run_blocks(), d, cap)) is not None]
        if meeting and self.budget is not None:
            cheapest = min(meeting, key=lambda p: p.cost)
            text = (f"{f.budget}: no offer finishes the {n} run(s) in {hours_text(d)} for "
                    f"${self.budget:g}; the cheapest that does, {cheapest.label} on "
                    f"{cheapest.instances} instance(s), costs ${cheapest.cost:.2f}: raise "
                    f"{f.budget} to at least {ceil_cents(cheapest.cost):.2f}")
            affordable = [p for p in plans if p.cost <= self.budget * (1.0 + TOL)]
            if affordable:
                late = min(affordable, key=lambda p: makespan(p.run_blocks(), cap))
                need = makespan(late.run_blocks(), cap)
                text += (f", or give {f.deadline} {ceil_cents(need):g} or later "
                         f"({late.label}, ${late.cost:.2f})")
            return text
        fastest = min(plans, key=lambda p: (makespan(p.run_blocks(), cap), p.cost))
        need = makespan(fastest.run_blocks(), cap)
        used = min(cap, fastest.runs)
        text = (f"{f.deadline}: no offer finishes the {n} run(s) in {hours_text(d)} on at most "
                f"{cap} instance(s); the fastest, {fastest.label}, needs {need:.2f} h on "
                f"{used}: raise {f.deadline} to at least {ceil_cents(need):g}")
        more = [(k, p.cost, p) for p in plans
                if (k := fewest_instances(p.run_blocks(), d, p.runs)) is not None]
        if more:
            k, _, p = min(more, key=lambda t: (t[0], t[1]))
            text += (f", or allow {f.max_instances} {k} ({p.label} then meets "
                     f"{hours_text(d)} for ${p.cost:.2f})")
        elif fastest.runs > 1:
            longest = min(p.longest_run_hours for p in plans)
            text += (f"; a single run takes at least {longest:.2f} h, so more instances "
                     "cannot help")
        return text


@dataclass(frozen=True)
class MinTimeUnderBudget(Objective):
    """The quickest plan whose cost (all runs) is at most ``budget``."""

    name: ClassVar[str] = "min_time_under_budget"
    ranks_by_time: ClassVar[bool] = True
    budget: float
    fields: Fields = field(default_factory=Fields)

    def __post_init__(self) -> None:
        _positive(self.fields.budget, self.budget)

    @property
    def budget_usd(self) -> float | None:
        return self.budget

    def choose(self, plan: Plan, limits: Limits) -> Plan | None:
        if plan.cost > self.budget * (1.0 + TOL):
            return None
        return plan.on(quickest_instances(plan.run_blocks(), limits.max_instances))

    def sort_key(self, plan: Plan) -> tuple[float, float, int, tuple[str, ...]]:
        return (plan.wall_hours, plan.cost, plan.instances, plan.key)

    def infeasible(self, plans: Sequence[Plan], limits: Limits) -> str:
        cheapest = min(plans, key=lambda p: p.cost)
        f = self.fields
        return (f"{f.budget}: no plan runs the {cheapest.runs} run(s) for ${self.budget:g}; "
                f"the cheapest ({cheapest.label}, {cheapest.split}) costs "
                f"${cheapest.cost:.2f}: raise {f.budget} to at least "
                f"{ceil_cents(cheapest.cost):.2f} or lower runs")


def objective_of(name: str, deadline_hours: float | None = None,
                 budget_usd: float | None = None, fields: Fields | None = None) -> Objective:
    """The objective a job names, with its parameters (validated)."""
    f = fields or Fields()
    if name == "min_cost":
        return MinCost(f)
    if name == "min_time":
        return MinTime(f)
    if name == "min_cost_under_deadline":
        if deadline_hours is None:
            raise ValueError(f"{f.deadline}: required when objective is {name}")
        return MinCostUnderDeadline(deadline_hours, None, f)
    if name == "min_time_under_budget":
        if budget_usd is None:
            raise ValueError(f"{f.budget}: required when objective is {name}")
        return MinTimeUnderBudget(budget_usd, f)
    raise ValueError(f"unknown objective {name!r}")
