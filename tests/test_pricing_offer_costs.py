"""Costs beyond hours x rate (gacost.advisor.offer_costs) and their use by the planner."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from gacost.advisor import offer_costs
from gacost.advisor.offer_costs import BillingTerms, billed_hours
from gacost.advisor.planner import Limits, RunGroup, candidate_plans
from gacost.advisor.split_estimates import SplitEstimate
from gacost.base.records import Offer
from gacost.pricing import spot_advisor
from gacost.pricing.snapshot import load_snapshot


def _real(provider: str, instance: str) -> Offer:
    return next(
        o for o in load_snapshot().offers
        if o.provider == provider and o.instance_type == instance and o.spot_hour
    )  # fmt: skip


def test_billing_granularity_minimum_and_startup() -> None:
    aws = offer_costs.terms_for("aws")
    assert billed_hours(30 / 3600, aws) == pytest.approx(60 / 3600)  # the 60 s minimum
    assert billed_hours(2.0, aws) == 2.0  # per second: as it runs
    hourly = BillingTerms(granularity_s=3600.0, minimum_s=3600.0, startup_s=180.0)
    assert billed_hours(1.2, hourly) == pytest.approx(2.0)
    assert billed_hours(0.1, hourly) == pytest.approx(1.0)
    assert billed_hours(0.95, hourly) == pytest.approx(1.0)  # 0.95 h + 3 min = 1.0 h
    unknown = offer_costs.terms_for("some-new-cloud")
    assert billed_hours(0.01, unknown) == 0.01 and "unknown" in unknown.source
    assert all(t.source for t in offer_costs.BILLING_TERMS.values())


def test_interruption_rates_and_the_spot_time_factor() -> None:
    rate = spot_advisor.interruptions_per_hour(0.05)
    assert 1 - math.exp(-rate * 730) == pytest.approx(0.05)
    buckets = [spot_advisor.interruptions_per_hour(spot_advisor.bucket_share(label))
               for label in ("<5%", "5-10%", "10-15%", "15-20%", ">20%")]
    assert buckets == sorted(buckets) and buckets[0] > 0
    factor = offer_costs.spot_time_factor(0.01, checkpoint_hours=1.0, restart_hours=0.1)
    assert factor == pytest.approx(1 / (1 - 0.01 * 0.6))
    assert offer_costs.spot_time_factor(1.0, 2.0, 0.5) == math.inf
    assert offer_costs.spot_allowance(None, checkpoint_hours=1, restart_hours=0, default=0.2) == 0.2
    with pytest.raises(ValueError):
        spot_advisor.interruptions_per_hour(1.0)


def test_planner_charges_expected_restarts_and_the_billing_minimum() -> None:
    offer = _real("aws", "g6.xlarge")
    rate = spot_advisor.interruptions_per_hour(spot_advisor.bucket_share(">20%"))
    risky = replace(offer, interruption_per_hour=rate)
    estimate = SplitEstimate("L4", 4, 1, 1.8, "measured", 5.0, "measured", 20.0, True)
    group = RunGroup("job", runs=1, updates=10, sequence_length=512, effective_batch=4,
                     save_every=500)
    limits = Limits(spot=True, spot_allowance=0.2)
    plans, _ = candidate_plans([(group, [estimate])], [offer, risky], limits)
    spot = [p for p in plans if p.pricing == "spot"]
    assert [p.allowance for p in spot][0] == 0.2  # no published rate: the job's allowance
    ckpt = 500 * 1.8 / 3600  # a checkpoint every 500 updates (transformers' default)
    assert spot[1].allowance == pytest.approx(1 / (1 - rate * ckpt / 2) - 1)
    # 10 updates of 1.8 s = 18 s of work: AWS bills its 60 s minimum
    on_demand = next(p for p in plans if p.pricing == "on-demand")
    assert on_demand.cost == pytest.approx(60 / 3600 * offer.price_hour)
    assert on_demand.wall_hours == pytest.approx(18 / 3600)
    # a run that saves nothing loses all its work so far: half the run per interruption
    bare = replace(group, save_every=0, updates=20000)
    plans, _ = candidate_plans([(bare, [estimate])], [risky], limits)
    spot_bare = next(p for p in plans if p.pricing == "spot")
    assert spot_bare.allowance == pytest.approx(1 / (1 - rate * 20000 * 1.8 / 3600 / 2) - 1)
