"""The planner against an independently written pandas oracle on small hand-made tables."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd
import pytest

from gacost.advisor.objectives import (
    FLAGS,
    MinCost,
    MinCostUnderDeadline,
    MinTime,
    MinTimeUnderBudget,
    Objective,
)
from gacost.advisor.planner import Limits, RunGroup, candidate_plans, plan
from gacost.advisor.split_estimates import SplitEstimate
from gacost.base.errors import InfeasibleError
from gacost.base.records import Offer


def _est(gpu: str, m: int, k: int, s: float | None, fits: bool = True) -> SplitEstimate:
    return SplitEstimate(gpu, m, k, s, "predicted", 5.0, "predicted", 14.0, fits)


def _offer(provider: str, region: str, gpu: str, od: float | None, spot: float | None) -> Offer:
    return Offer(
        provider,
        region,
        f"{gpu.lower()}-box",
        gpu,
        1,
        16.0,
        8,
        32.0,
        od,
        spot,
        "test",
        "2026-01-01",
    )


ESTIMATES = [
    _est("T4", 1, 4, 2.9),
    _est("T4", 2, 2, 2.6),
    _est("T4", 4, 1, 2.4, fits=False),
    _est("L4", 1, 4, 1.6),
    _est("L4", 2, 2, 1.3),
    _est("L4", 4, 1, 1.35),
    _est("H100-SXM", 1, 4, 0.5),
    _est("H100-SXM", 2, 2, 0.3),
    _est("H100-SXM", 4, 1, None),
]
OFFERS = [
    _offer("aws", "us-east-1", "T4", 0.526, 0.2),
    _offer("gcp", "us-central1", "T4", 0.45, None),
    _offer("aws", "us-east-1", "L4", 0.80, 0.35),
    _offer("gcp", "us-central1", "L4", 0.71, 0.28),
    _offer("lambda", "us-east-1", "H100-SXM", 3.29, None),
    _offer("vast", "us", "H100-SXM", None, 1.5),
    _offer("aws", "us-east-1", "A10G", 1.0, 0.4),
]


@dataclass(frozen=True)
class Case:
    """One planning question: a single run group, the limits and the objective by name."""

    updates: int
    runs: int
    limits: Limits
    objective: str = "min_cost"
    deadline: float | None = None
    budget: float | None = None

    def group(self) -> RunGroup:
        return RunGroup("job", self.runs, self.updates, 512, 4)

    def make_objective(self) -> Objective:
        if self.objective == "min_cost":
            return MinCost()
        if self.objective == "min_time":
            return MinTime()
        if self.objective == "min_cost_under_deadline":
            assert self.deadline is not None
            return MinCostUnderDeadline(self.deadline, self.budget)
        assert self.objective == "min_time_under_budget" and self.budget is not None
        return MinTimeUnderBudget(self.budget)


def _instances(c: Case, hours: float) -> int | None:
    """Instances the objective uses for ``c.runs`` runs of ``hours`` each (None: cannot).

    Equal runs packed longest first go round-robin, so the wall-clock on p instances is
    ceil(runs / p) x hours: no packing code is needed.
    """
    lim = c.limits
    usable = max(1, min(lim.max_instances, c.runs))
    if c.objective == "min_cost":
        return lim.parallel
    if c.objective == "min_cost_under_deadline":
        assert c.deadline is not None
        return next((p for p in range(1, usable + 1)
                     if math.ceil(c.runs / p) * hours <= c.deadline), None)
    best = math.ceil(c.runs / usable)  # the time objectives: the fewest reaching the minimum
    return next(p for p in range(1, usable + 1) if math.ceil(c.runs / p) == best)


def oracle(c: Case) -> pd.DataFrame:
    """Cross join, fastest fitting split per offer, cost, instances, filter, rank: written
    without the planner's code."""
    est = pd.DataFrame([vars(e) for e in ESTIMATES])
    est = est[est["fits"] & est["seconds_per_update"].notna()]
    rows = []
    for o in OFFERS:
        for pricing, rate in (("on-demand", o.price_hour), ("spot", o.spot_hour)):
            if rate is None or (pricing == "spot" and not c.limits.spot):
                continue
            rows.append(
                {
                    "gpu": o.gpu,
                    "provider": o.provider,
                    "region": o.region,
                    "instance_type": o.instance_type,
                    "pricing": pricing,
                    "rate": rate,
                    "allowance": c.limits.spot_allowance if pricing == "spot" else 0.0,
                }
            )
    df = pd.DataFrame(rows).merge(est, on="gpu")
    offer_cols = ["gpu", "provider", "region", "instance_type", "pricing"]
    # the fastest split that fits, per offer and pricing option (first on a tie)
    df = df.sort_values("seconds_per_update", kind="stable").drop_duplicates(offer_cols)
    s, a = df["seconds_per_update"], df["allowance"]
    df["run_hours"] = s * c.updates / 3600 * (1 + a)
    df["cost"] = s * c.updates * df["rate"] / 3600 * (1 + a) * c.runs
    df["instances"] = [_instances(c, h) for h in df["run_hours"]]
    df = df[df["instances"].notna()].copy()
    df["instances"] = df["instances"].astype(int)
    df["wall"] = [math.ceil(c.runs / p) * h for p, h in zip(df["instances"], df["run_hours"],
                                                             strict=True)]
    if c.budget is not None:
        df = df[df["cost"] <= c.budget]
    by = ["wall", "cost"] if c.objective.startswith("min_time") else ["cost", "wall"]
    return df.sort_values([*by, "instances", *offer_cols], kind="stable")


CASES = [
    pytest.param(Case(1000, 1, Limits()), id="min_cost"),
    pytest.param(Case(1000, 3, Limits(spot=True)), id="min_cost-spot"),
    pytest.param(Case(2000, 5, Limits(spot=True, spot_allowance=0.5, parallel=2)),
                 id="min_cost-parallel"),
    pytest.param(Case(5000, 2, Limits(), "min_time"), id="min_time"),
    pytest.param(Case(5000, 5, Limits(spot=True, max_instances=4), "min_time"),
                 id="min_time-capped"),
    pytest.param(Case(5000, 2, Limits(spot=True), "min_cost_under_deadline", deadline=2.0),
                 id="deadline"),
    pytest.param(Case(5000, 6, Limits(spot=True, max_instances=3), "min_cost_under_deadline",
                      deadline=4.0), id="deadline-capped"),
    pytest.param(Case(5000, 6, Limits(spot=True), "min_cost_under_deadline", deadline=2.5,
                      budget=8.0), id="deadline-and-budget"),
    pytest.param(Case(5000, 1, Limits(), "min_time_under_budget", budget=1.5),
                 id="budget"),
    pytest.param(Case(5000, 3, Limits(spot=True, max_instances=2), "min_time_under_budget",
                      budget=4.0), id="budget-spot-capped"),
]


@pytest.mark.parametrize("c", CASES)
def test_planner_matches_oracle(c: Case) -> None:
    candidates, missing = candidate_plans([(c.group(), ESTIMATES)], OFFERS, c.limits)
    assert missing == {}  # one group: an offer runs it or is left out entirely
    plans = plan(candidates, c.make_objective(), c.limits)
    want = oracle(c)
    assert len(want) > 1  # the case ranks several plans
    if c.deadline is not None or c.budget is not None:
        assert len(want) < len(candidates)  # and its constraint drops some
    got = [(p.gpu, p.provider, p.region, p.pricing, p.estimate.micro_batch,
            p.estimate.grad_accum, p.instances) for p in plans]
    expected = list(
        want[["gpu", "provider", "region", "pricing", "micro_batch", "grad_accum",
              "instances"]].itertuples(index=False, name=None)
    )
    assert got == expected
    assert [p.cost for p in plans] == pytest.approx(list(want["cost"]))
    assert [p.wall_hours for p in plans] == pytest.approx(list(want["wall"]))
    assert [p.allowance for p in plans] == list(want["allowance"])


def test_cases_exercise_more_than_one_instance_and_the_allowance() -> None:
    # Guards the oracle comparison against degenerate cases: some plan in the table runs on
    # several instances, and spot plans carry a non-zero allowance.
    multi = spot = False
    for param in CASES:
        (c,) = param.values
        assert isinstance(c, Case)
        want = oracle(c)
        multi |= bool((want["instances"] > 1).any())
        spot |= bool((want["allowance"] > 0).any())
    assert multi and spot


def test_no_plan_uses_a_split_that_does_not_fit_or_has_no_price() -> None:
    limits = Limits(spot=True)
    plans, _ = candidate_plans([(RunGroup("job", 1, 100, 512, 4), ESTIMATES)], OFFERS, limits)
    assert {(p.gpu, p.split) for p in plans} == {("T4", "2x2"), ("L4", "2x2"),
                                                 ("H100-SXM", "2x2")}
    assert not any(p.gpu == "T4" and p.estimate.micro_batch == 4 for p in plans)  # 4x1 too big
    assert not any(p.gpu == "A10G" for p in plans)  # no estimate for it
    assert not any(p.provider == "vast" and p.pricing == "on-demand" for p in plans)
    assert all(g.estimate.fits and g.estimate.seconds_per_update is not None
               for p in plans for g in p.groups)


def test_count_of_candidate_plans() -> None:
    limits = Limits(spot=True)
    plans, _ = candidate_plans([(RunGroup("job", 1, 100, 512, 4), ESTIMATES)], OFFERS, limits)
    runnable = {e.gpu for e in ESTIMATES if e.fits and e.seconds_per_update is not None}
    options = sum(
        sum(r is not None for r in (o.price_hour, o.spot_hour))
        for o in OFFERS if o.gpu in runnable
    )
    assert options == 9  # by hand: T4 2 + 1, L4 2 + 2, H100 1 + 1
    assert len(plans) == options
    assert len({p.key for p in plans}) == options  # one plan per offer and pricing option


def test_spot_is_off_unless_allowed() -> None:
    group = RunGroup("job", 1, 10, 512, 4)
    plans, _ = candidate_plans([(group, ESTIMATES)], OFFERS, Limits())
    assert {p.pricing for p in plans} == {"on-demand"}
    assert all(p.allowance == 0.0 for p in plans)
    with_spot, _ = candidate_plans([(group, ESTIMATES)], OFFERS, Limits(spot=True))
    assert {p.pricing for p in with_spot} == {"on-demand", "spot"}
    assert {p.allowance for p in with_spot if p.pricing == "spot"} == {0.2}


def _ranked(updates: int, runs: int, limits: Limits, objective: Objective) -> None:
    candidates, _ = candidate_plans([(RunGroup("job", runs, updates, 512, 4), ESTIMATES)],
                                    OFFERS, limits)
    plan(candidates, objective, limits)


def test_deadline_infeasible_says_what_would_work() -> None:
    # The fastest plan is H100-SXM at 0.3 s/update on lambda: 100000 x 0.3 / 3600 = 8.333 h
    # per run. The 4 runs spread over 4 of the 8 allowed instances still take 8.333 h
    # (needs 8.33 h on 4), rounded up to the cent: 8.34. Every run is longer than the
    # 1 h deadline, so more instances cannot help: the shortest single run is 8.33 h.
    with pytest.raises(InfeasibleError) as info:
        _ranked(100_000, 4, Limits(), MinCostUnderDeadline(1.0))
    text = str(info.value)
    assert text.startswith("deadline_hours: no offer finishes the 4 run(s) in 1 h on at most "
                           "8 instance(s)")
    assert ("the fastest, H100-SXM on lambda us-east-1 (h100-sxm-box, on-demand), needs "
            "8.33 h on 4: raise deadline_hours to at least 8.34") in text
    assert "a single run takes at least 8.33 h, so more instances cannot help" in text


def test_deadline_infeasible_on_too_few_instances_names_max_instances() -> None:
    # 10000 x 0.3 / 3600 = 0.8333 h per H100 run; 4 runs on the 2 allowed instances take
    # 2 x 0.8333 = 1.667 h: needs 1.67 h on 2, rounded up 1.67. On 4 instances each runs
    # alone (0.83 h <= 1 h); no other GPU has a run under 1 h (L4: 1.3 s -> 3.6 h). All four
    # runs cost 4 x 0.8333 x 3.29 = $10.97 whatever the instance count.
    with pytest.raises(InfeasibleError) as info:
        _ranked(10_000, 4, Limits(max_instances=2), MinCostUnderDeadline(1.0))
    text = str(info.value)
    assert "needs 1.67 h on 2: raise deadline_hours to at least 1.67" in text
    assert ("or allow max_instances 4 (H100-SXM on lambda us-east-1 (h100-sxm-box, "
            "on-demand) then meets 1 h for $10.97)") in text
    with pytest.raises(InfeasibleError) as info:  # the same advice in flag words
        _ranked(10_000, 4, Limits(max_instances=2), MinCostUnderDeadline(1.0, fields=FLAGS))
    assert "raise --deadline to at least 1.67, or allow --max-instances 4" in str(info.value)


def test_budget_infeasible_says_what_would_work() -> None:
    # Cheapest dollars per update on demand: L4 on gcp, 1.3 s x $0.71 = 0.923 (T4 gcp
    # 2.6 x 0.45 = 1.17, H100 0.3 x 3.29 = 0.987); x 100000 / 3600 = $25.64 for one run.
    with pytest.raises(InfeasibleError) as info:
        _ranked(100_000, 1, Limits(), MinTimeUnderBudget(1.0))
    text = str(info.value)
    assert text.startswith("budget_usd: no plan runs the 1 run(s) for $1; the cheapest "
                           "(L4 on gcp us-central1 (l4-box, on-demand), 2x2) costs $25.64")
    assert "raise budget_usd to at least 25.64" in text
    # With spot, the gcp L4 spot at $0.28 and the 20 % allowance: 1.3 x 0.28 x 1.2 = 0.4368
    # per update, x 100000 / 3600 = $12.133, rounded up to the cent 12.14.
    with pytest.raises(InfeasibleError, match=r"\(L4 on gcp us-central1 \(l4-box, spot\), "
                       r"2x2\) costs \$12\.13: raise --budget to at least 12\.14"):
        _ranked(100_000, 1, Limits(spot=True), MinTimeUnderBudget(1.0, FLAGS))


def test_nothing_fits() -> None:
    limits = Limits()
    candidates, _ = candidate_plans(
        [(RunGroup("job", 1, 10, 512, 4), [_est("T4", 1, 1, 1.0, fits=False)])], OFFERS, limits)
    assert candidates == []
    with pytest.raises(InfeasibleError, match="no split of the job fits"):
        plan(candidates, MinCost(), limits)
