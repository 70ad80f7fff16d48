"""The solver against an independently written pandas oracle on small hand-made tables."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest

from gacost.advisor.planner import Constraints, best_per_offer, enumerate_plans, rank, run_cost
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


def oracle(c: Constraints) -> pd.DataFrame:
    """Cross join, filter, cost, rank: written without the solver's code."""
    est = pd.DataFrame([vars(e) for e in ESTIMATES])
    est = est[est["fits"] & est["seconds_per_update"].notna()]
    rows = []
    for o in OFFERS:
        for pricing, rate in (("on-demand", o.price_hour), ("spot", o.spot_hour)):
            if rate is None or (pricing == "spot" and not c.spot):
                continue
            rows.append(
                {
                    "gpu": o.gpu,
                    "provider": o.provider,
                    "region": o.region,
                    "pricing": pricing,
                    "rate": rate,
                }
            )
    df = pd.DataFrame(rows).merge(est, on="gpu")
    df["hours"] = df["seconds_per_update"] * c.updates / 3600 * c.runs
    df["cost"] = df["seconds_per_update"] * c.updates * df["rate"] / 3600 * c.runs
    if c.deadline_hours is not None:
        df = df[df["hours"] <= c.deadline_hours]
    if c.budget_usd is not None:
        df = df[df["cost"] <= c.budget_usd]
    by = ["hours", "cost"] if c.objective.startswith("min_time") else ["cost", "hours"]
    df = df.sort_values(by + ["provider", "region"], kind="stable")
    return df.drop_duplicates(["gpu", "provider", "region", "pricing"])


CASES = [
    Constraints(updates=1000, runs=1),
    Constraints(updates=1000, runs=3, spot=True),
    Constraints(updates=5000, runs=2, objective="min_time"),
    Constraints(
        updates=5000, runs=2, spot=True, objective="min_cost_under_deadline", deadline_hours=2.0
    ),
    Constraints(updates=5000, runs=1, objective="min_time_under_budget", budget_usd=1.5),
]


@pytest.mark.parametrize("c", CASES)
def test_solver_matches_oracle(c: Constraints) -> None:
    plans = best_per_offer(rank(enumerate_plans(ESTIMATES, OFFERS, c), c))
    want = oracle(c)
    got = [(p.gpu, p.provider, p.region, p.pricing, p.micro_batch, p.grad_accum) for p in plans]
    expected = list(
        want[["gpu", "provider", "region", "pricing", "micro_batch", "grad_accum"]].itertuples(
            index=False, name=None
        )
    )
    assert got == expected
    assert [p.cost_all_runs for p in plans] == pytest.approx(list(want["cost"]))


def test_no_plan_uses_a_split_that_does_not_fit_or_has_no_price() -> None:
    c = Constraints(updates=100, runs=1, spot=True)
    plans = enumerate_plans(ESTIMATES, OFFERS, c)
    assert not any(p.gpu == "T4" and p.micro_batch == 4 for p in plans)
    assert not any(p.gpu == "A10G" for p in plans)  # no estimate for it
    assert not any(p.provider == "vast" and p.pricing == "on-demand" for p in plans)
    assert all(p.fits for p in plans)


def test_count_of_enumerated_plans() -> None:
    c = Constraints(updates=100, runs=1, spot=True)
    plans = enumerate_plans(ESTIMATES, OFFERS, c)
    fitting = {
        g: sum(e.fits and e.seconds_per_update is not None for e in ESTIMATES if e.gpu == g)
        for g in ("T4", "L4", "H100-SXM")
    }
    options = sum(
        fitting.get(o.gpu, 0) * sum(r is not None for r in (o.price_hour, o.spot_hour))
        for o in OFFERS
    )
    assert len(plans) == options


def test_spot_is_off_unless_allowed() -> None:
    plans = enumerate_plans(ESTIMATES, OFFERS, Constraints(updates=10, runs=1))
    assert {p.pricing for p in plans} == {"on-demand"}


def test_deadline_infeasible_says_what_would_work() -> None:
    c = Constraints(
        updates=100_000, runs=4, objective="min_cost_under_deadline", deadline_hours=1.0
    )
    with pytest.raises(
        InfeasibleError,
        match=r"deadline_hours: .* raise deadline_hours to at "
        r"least 33\.33",
    ):
        rank(enumerate_plans(ESTIMATES, OFFERS, c), c)


def test_budget_infeasible_says_what_would_work() -> None:
    c = Constraints(updates=100_000, runs=1, objective="min_time_under_budget", budget_usd=1.0)
    with pytest.raises(InfeasibleError, match=r"budget_usd: .* at least 25\.64"):
        rank(enumerate_plans(ESTIMATES, OFFERS, c), c)


def test_nothing_fits() -> None:
    c = Constraints(updates=10, runs=1)
    with pytest.raises(InfeasibleError, match="no split of the job fits"):
        rank(enumerate_plans([_est("T4", 1, 1, 1.0, fits=False)], OFFERS, c), c)


@pytest.mark.parametrize(
    ("s", "n", "rate"), itertools.product([0.3, 2.8709], [1, 97], [0.526, 3.29])
)
def test_run_cost_is_seconds_times_rate_over_3600(s: float, n: int, rate: float) -> None:
    assert run_cost(s, n, rate) == s * n * rate / 3600
