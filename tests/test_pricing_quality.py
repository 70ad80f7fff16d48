"""Data-quality checks on small hand-built offer lists with known drops."""

from __future__ import annotations

import pytest

from gacost.base.records import Offer
from gacost.pricing import quality
from gacost.pricing.quality import QualityRules, check_offers, regional_medians


def offer(**fields: object) -> Offer:
    base: dict[str, object] = {
        "provider": "gcp", "region": "us-central1", "instance_type": "a3-highgpu-8g",
        "gpu": "H100-SXM", "gpu_count": 1.0, "gpu_memory_gib": 80.0, "vcpus": 26.0,
        "ram_gib": 234.0, "price_hour": 10.0, "spot_hour": 3.0, "source": "test",
        "fetched_at": "2026-12-02",
    }  # fmt: skip
    base.update(fields)
    return Offer(**base)  # type: ignore[arg-type]


def test_clean_offers_pass_unchanged() -> None:
    offers = [offer(region="a"), offer(region="b", spot_hour=None), offer(region="c")]
    kept, counts = check_offers(offers)
    assert kept == offers
    assert counts == {}


def test_exact_duplicates_are_dropped() -> None:
    a, b = offer(region="a"), offer(region="b")
    kept, counts = check_offers([a, b, a, offer(region="a")])
    assert kept == [a, b]
    assert counts == {quality.DUPLICATE: 2}


def test_zero_negative_and_absurd_prices_are_dropped() -> None:
    good = offer(region="ok")
    offers = [
        good,
        offer(region="zero", price_hour=0.0),
        offer(region="negative", price_hour=-1.0),
        offer(region="dear", gpu_count=8.0, price_hour=1300.0),  # 162.5 per GPU-hour
        offer(region="cheap", gpu_count=8.0, price_hour=0.05, spot_hour=None),  # 0.00625
    ]
    kept, counts = check_offers(offers)
    assert kept == [good]
    assert counts == {quality.BAD_PRICE: 2, quality.ABSURD_PRICE: 2}


def test_spot_above_on_demand_clears_only_the_spot() -> None:
    offers = [offer(region="a", spot_hour=12.0), offer(region="b"), offer(region="c")]
    kept, counts = check_offers(offers)
    assert [o.spot_hour for o in kept] == [None, 3.0, 3.0]
    assert [o.price_hour for o in kept] == [10.0, 10.0, 10.0]
    assert counts == {quality.SPOT_ABOVE: 1}


def test_invalid_spot_on_spot_only_offer_drops_it() -> None:
    offers = [
        offer(region="a", price_hour=None, spot_hour=5.0),  # spot-only, fine (AWS p5e)
        offer(region="b", price_hour=None, spot_hour=0.0),
        offer(region="c", price_hour=None, spot_hour=500.0),
        offer(region="d", spot_hour=-2.0),  # on-demand survives
    ]
    kept, counts = check_offers(offers)
    assert [(o.region, o.price_hour, o.spot_hour) for o in kept] == [
        ("a", None, 5.0),
        ("d", 10.0, None),
    ]
    assert counts == {quality.BAD_SPOT: 3, quality.NO_VALID_PRICE: 2}


def test_low_outlier_against_median_across_regions() -> None:
    offers = [
        offer(region="europe-west4", price_hour=12.7),
        offer(region="us-east4", price_hour=9.8),
        offer(region="us-east5", price_hour=11.0),
        offer(region="us-central1", price_hour=4.2, spot_hour=None),  # < 0.5 x 10.4
        offer(provider="lambda", region="us-east-1", price_hour=3.3),  # another provider
    ]
    kept, counts = check_offers(offers)
    assert [o.region for o in kept] == ["europe-west4", "us-east4", "us-east5", "us-east-1"]
    assert counts == {quality.LOW_OUTLIER: 1}


def test_outlier_is_judged_per_instance_type_and_needs_three_regions() -> None:
    eight = dict(instance_type="a3-highgpu-8g", gpu_count=8.0, spot_hour=None)
    offers = [
        offer(region="a", price_hour=80.0, **eight),
        offer(region="b", price_hour=32.0, **eight),  # 4 per GPU against 10: dropped
        offer(region="c", price_hour=80.0, **eight),
        offer(region="b", instance_type="g2-standard-4", gpu="L4", price_hour=0.7, spot_hour=None),
    ]
    kept, counts = check_offers(offers)
    assert [(o.region, o.instance_type) for o in kept] == [
        ("a", "a3-highgpu-8g"), ("c", "a3-highgpu-8g"), ("b", "g2-standard-4"),
    ]  # fmt: skip
    assert counts == {quality.LOW_OUTLIER: 1}
    kept, counts = check_offers(offers[:2])  # two regions: no median test
    assert len(kept) == 2 and counts == {}


def test_conflicting_duplicates_keep_the_first() -> None:
    first, other = offer(region="a"), offer(region="a", price_hour=11.0)
    report = quality.review_offers([first, other, offer(region="b")])
    assert report.kept[0] == first and len(report.kept) == 2
    assert [(r.offer, r.reason, r.action) for r in report.rejections] == [
        (other, quality.CONFLICT, quality.DROPPED)
    ]


def test_rules_are_configurable_and_input_is_untouched() -> None:
    offers = [offer(region="a", price_hour=200.0, spot_hour=None)]
    snapshot = list(offers)
    kept, counts = check_offers(offers, QualityRules(max_gpu_hour=500.0))
    assert kept == offers and counts == {}
    assert check_offers(offers)[1] == {quality.ABSURD_PRICE: 1}
    assert offers == snapshot


def test_regional_medians() -> None:
    values = [("k", "a", 1.0), ("k", "a", 3.0), ("k", "b", 5.0), ("k", "c", 7.0), ("j", "a", 1.0)]
    assert regional_medians(values) == {"k": pytest.approx(5.0)}
