"""AWS spot interruption risk: the advisor's data, its cache, and what the planner charges."""

from __future__ import annotations

import json
import math
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from pricing_helpers import NOW, Router, fast_policy, fixture_text, isolate, json_reply

from gacost.advisor.planner import Limits, RunGroup, candidate_plans
from gacost.advisor.split_estimates import SplitEstimate
from gacost.base.errors import PricingError
from gacost.pricing import combine, spot_advisor
from gacost.pricing.cache import PriceCache
from gacost.pricing.fetch.refresh import FETCHED, FRESH, Refresher
from gacost.pricing.snapshot import load_snapshot


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> PriceCache:
    return PriceCache(isolate(monkeypatch, tmp_path))


def _data() -> dict[str, object]:
    data: dict[str, object] = json.loads(fixture_text("aws_spot_advisor.json"))
    return data


def test_buckets_become_rates_per_hour() -> None:
    risk = spot_advisor.parse_advisor(_data(), "2026-12-02T12:00:00Z")
    g5 = risk.rates[("us-east-1", "g5.2xlarge")]  # bucket 3, "15-20%"
    assert 1 - math.exp(-g5 * 730) == pytest.approx(0.175)
    assert risk.labels[("us-east-1", "g6e.4xlarge")] == ">20%"
    assert risk.rates[("us-east-1", "p5.48xlarge")] < g5 < risk.rates[("us-east-1", "g6e.4xlarge")]
    assert len(risk.rates) == 10  # every Linux row of both regions
    assert spot_advisor.interruptions_per_hour(spot_advisor.bucket_share("15-20%")) == (
        pytest.approx(g5))


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.pop("spot_advisor"), "spot_advisor"),
        (lambda d: d.update(ranges=[]), "ranges"),
        (lambda d: d.update(ranges=[{"index": 0, "label": "sometimes"}]), "not an interruption"),
    ],
)
def test_malformed_advisor_data_is_an_error(mutate: object, message: str) -> None:
    data = _data()
    mutate(data)  # type: ignore[operator]
    with pytest.raises(PricingError, match=message):
        spot_advisor.parse_advisor(data, "2026-12-02T12:00:00Z")


def _refresher(cache: PriceCache, router: Router, now=NOW) -> Refresher:  # type: ignore[no-untyped-def]
    policy, _ = fast_policy()
    return Refresher(cache=cache, snapshot=load_snapshot(), now=now, env={},
                     warn=lambda _: None, note=lambda _: None, policy=policy,
                     client=router.client())  # fmt: skip


def test_refresh_caches_the_rates_and_the_table_carries_them(cache: PriceCache) -> None:
    router = Router().add(spot_advisor.URL, json_reply("aws_spot_advisor.json"))
    (outcome,) = _refresher(cache, router).refresh(["aws-spot-advisor"], timedelta(hours=24))
    assert outcome.status == FETCHED and outcome.offers == 10
    assert cache.risk_path().is_file()
    again = _refresher(cache, router, NOW + timedelta(hours=1))
    assert again.refresh(["aws-spot-advisor"], timedelta(hours=24))[0].status == FRESH
    warnings: list[str] = []
    table = combine.load_freshest(cache=cache, snapshot=load_snapshot(), now=NOW,
                                  max_age=timedelta(days=3650), warn=warnings.append)  # fmt: skip
    rated = {(o.region, o.instance_type): o.interruption_per_hour
             for o in table.offers if o.interruption_per_hour is not None}  # fmt: skip
    # the snapshot's AWS spot offers that the advisor covers
    assert set(rated) == {("us-east-1", t) for t in
                          ("g5.2xlarge", "g6.2xlarge", "g6e.2xlarge", "g6e.4xlarge",
                           "g6e.8xlarge", "p5.48xlarge")}  # fmt: skip
    assert "AWS Spot Instance Advisor (6 aws spot offers" in table.source and warnings == []


def test_a_broken_rate_cache_warns_and_keeps_the_allowance(cache: PriceCache) -> None:
    cache.risk_path().parent.mkdir(parents=True)
    cache.risk_path().write_text("{not json")
    warnings: list[str] = []
    table = combine.load_freshest(cache=cache, snapshot=load_snapshot(), now=NOW,
                                  max_age=timedelta(days=3650), warn=warnings.append)  # fmt: skip
    assert all(o.interruption_per_hour is None for o in table.offers)
    (line,) = warnings
    assert "aws-spot-advisor" in line and "spot_allowance" in line


def test_the_planner_charges_the_riskier_shape_more(cache: PriceCache) -> None:
    router = Router().add(spot_advisor.URL, httpx.Response(200, text=fixture_text(
        "aws_spot_advisor.json")))  # fmt: skip
    _refresher(cache, router).refresh(["aws-spot-advisor"], timedelta(hours=24))
    table = combine.load_freshest(cache=cache, snapshot=load_snapshot(), now=NOW,
                                  max_age=timedelta(days=3650), warn=lambda _: None)  # fmt: skip
    l40s = [o for o in table.offers if o.region == "us-east-1"
            and o.instance_type in ("g6e.2xlarge", "g6e.4xlarge")]  # fmt: skip
    estimate = SplitEstimate("L40S", 4, 1, 0.4, "measured", 5.0, "measured", 40.0, True)
    group = RunGroup("job", runs=1, updates=20000, sequence_length=512, effective_batch=4,
                     save_every=500)
    plans, _ = candidate_plans([(group, [estimate])], l40s, Limits(spot=True))
    spot = {p.instance_type: p for p in plans if p.pricing == "spot"}
    low, high = spot["g6e.2xlarge"].allowance, spot["g6e.4xlarge"].allowance  # 5-10% vs >20%
    ckpt = 500 * 0.4 / 3600
    for plan_, bucket in ((spot["g6e.2xlarge"], "5-10%"), (spot["g6e.4xlarge"], ">20%")):
        rate = spot_advisor.interruptions_per_hour(spot_advisor.bucket_share(bucket))
        assert plan_.allowance == pytest.approx(1 / (1 - rate * ckpt / 2) - 1)
    assert 0 < low < high
