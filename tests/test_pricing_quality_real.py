"""The quality rules on the real rows of SkyPilot's v8 catalogs (tests/fixtures/pricing/full)."""

from __future__ import annotations

import csv
import math
import statistics
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from gacost.base.records import Offer
from gacost.pricing import build_snapshot, quality, skypilot
from gacost.pricing.quality import Rejection

FULL = Path(__file__).parent / "fixtures" / "pricing" / "full"


@pytest.fixture(scope="module")
def built() -> tuple[list[Offer], list[Rejection]]:
    offers, _, rejections = build_snapshot.build(FULL, "2026-12-02")
    return offers, rejections


def _find(offers: list[Offer], provider: str, instance: str, region: str) -> Offer:
    (hit,) = [
        o
        for o in offers
        if (o.provider, o.instance_type, o.region) == (provider, instance, region)
    ]
    return hit


def _raw_gcp_gpu_rows(accelerator: str) -> list[dict[str, str]]:
    with (FULL / "gcp" / "vms.csv").open(newline="", encoding="utf-8") as handle:
        return [
            r
            for r in csv.DictReader(handle)
            if not r["InstanceType"] and r["AcceleratorName"] == accelerator
        ]


def test_gcp_a100_80gb_keeps_no_on_demand_below_its_spot(
    built: tuple[list[Offer], list[Rejection]],
) -> None:
    offers, rejections = built
    # zones where the catalog's GPU on-demand is below its own spot price
    suspect_regions = {
        r["Region"]
        for r in _raw_gcp_gpu_rows("A100-80GB")
        if r["SpotPrice"] and float(r["SpotPrice"]) > float(r["Price"])
    }
    assert suspect_regions == {"us-central1", "europe-west4"}
    for region in suspect_regions:
        offer = _find(offers, "gcp", "a2-ultragpu-1g", region)
        assert offer.price_hour is None and offer.spot_hour is not None
        listed = [
            r
            for r in rejections
            if r.offer.instance_type == "a2-ultragpu-1g" and r.offer.region == region
        ]
        assert listed and all(r.reason == skypilot.GCP_OD_BELOW_SPOT for r in listed)
        assert all(r.offer.price_hour is not None for r in listed)  # listed with its old price
    kept = [
        o.per_gpu_hour
        for o in offers
        if o.provider == "gcp" and o.instance_type.startswith("a2-ultragpu") and o.per_gpu_hour
    ]
    # what is left agrees with the ~$5 list price per GPU, not the $2.95 rows
    assert kept and min(kept) > 5.0


def test_gcp_a3_highgpu_small_shapes_are_spot_only(
    built: tuple[list[Offer], list[Rejection]],
) -> None:
    offers, rejections = built
    small = [o for o in offers if o.provider == "gcp" and o.instance_type in
             ("a3-highgpu-1g", "a3-highgpu-2g", "a3-highgpu-4g")]  # fmt: skip
    assert small and all(o.price_hour is None and o.spot_hour for o in small)
    spot_only = [r for r in rejections if r.reason == quality.SPOT_ONLY]
    assert len(spot_only) == len(small)
    assert all(r.action == quality.ON_DEMAND_CLEARED for r in spot_only)
    assert any(o.instance_type == "a3-highgpu-8g" and o.price_hour for o in offers)


def test_small_hosts_are_not_low_outliers(built: tuple[list[Offer], list[Rejection]]) -> None:
    offers, rejections = built
    # the cheapest 1-GPU shapes of each family, against 1-GPU shapes on big hosts
    for instance, price in (("g4dn.xlarge", 0.526), ("g5.xlarge", 1.006), ("g6.xlarge", 0.8048)):
        assert _find(offers, "aws", instance, "us-east-1").price_hour == pytest.approx(price)
    assert not any(r.offer.instance_type == "g4dn.xlarge" for r in rejections)


def test_market_spread_drops_only_far_and_cheap(
    built: tuple[list[Offer], list[Rejection]],
) -> None:
    offers, rejections = built
    dropped = [r for r in rejections if r.reason == quality.MARKET_LOW]
    flagged = [r for r in rejections if r.reason == quality.MARKET_HIGH]
    assert dropped and flagged
    every = [*offers, *(r.offer for r in dropped)]
    for item in dropped + flagged:
        # an independent recomputation of the provider-median spread of that GPU
        by_provider: dict[str, list[float]] = defaultdict(list)
        for o in every:
            if o.gpu == item.offer.gpu and o.per_gpu_hour:
                by_provider[o.provider].append(math.log(o.per_gpu_hour))
        votes = [statistics.median(v) for v in by_provider.values()]
        center = statistics.median(votes)
        mad = statistics.median(abs(v - center) for v in votes)
        per_gpu = item.offer.per_gpu_hour
        assert per_gpu is not None and len(votes) >= 4
        z = 0.6745 * (math.log(per_gpu) - center) / mad
        if item in dropped:
            assert z < -3.5 and per_gpu < 0.5 * math.exp(center)
        else:
            assert z > 3.5 and per_gpu > 2 * math.exp(center)
            assert item.offer in offers  # flagged rows are kept
    assert all(r.offer not in offers for r in dropped)


def test_every_rejection_is_listed_with_a_known_action(
    built: tuple[list[Offer], list[Rejection]],
) -> None:
    _, rejections = built
    actions = Counter(r.action for r in rejections)
    assert set(actions) <= {quality.DROPPED, quality.ON_DEMAND_CLEARED, quality.SPOT_CLEARED,
                            quality.FLAGGED, quality.CORRECTED}  # fmt: skip
    assert all(r.reason for r in rejections)
