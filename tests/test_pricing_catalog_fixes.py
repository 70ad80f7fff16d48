"""The like-with-like rules of issue 20 on the real rows of tests/fixtures/pricing/full:
spot rates shown as on-demand, fractional shapes, a mislabelled GPU variant, aliases."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from gacost.base.records import Offer
from gacost.pricing import build_snapshot, quality, skypilot
from gacost.pricing.quality import Rejection, review_offers

FULL = Path(__file__).parent / "fixtures" / "pricing" / "full"


@pytest.fixture(scope="module")
def built() -> tuple[list[Offer], list[Rejection]]:
    offers, _, rejections = build_snapshot.build(FULL, "2026-12-02")
    return offers, rejections


def _raw(cloud: str) -> list[dict[str, str]]:
    with (FULL / cloud / "vms.csv").open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _of(offers: list[Offer], provider: str, instance: str) -> list[Offer]:
    return [o for o in offers if (o.provider, o.instance_type) == (provider, instance)]


def test_mithril_spot_rates_are_spot_only(built: tuple[list[Offer], list[Rejection]]) -> None:
    offers, rejections = built
    raw = _raw("mithril")
    assert raw and all(r["Price"] == r["SpotPrice"] for r in raw)
    mithril = [o for o in offers if o.provider == "mithril"]
    assert len(mithril) == len(raw)
    assert all(o.price_hour is None and o.spot_hour for o in mithril)
    listed = [r for r in rejections if r.reason == skypilot.SPOT_AS_ON_DEMAND]
    assert len(listed) == len(raw)
    assert all(r.action == quality.ON_DEMAND_CLEARED for r in listed)
    assert all(r.offer.price_hour == r.offer.spot_hour for r in listed)  # as read
    # no longer the cheapest on-demand H100 or H200
    h100 = [o for o in offers if o.gpu == "H100-SXM" and o.per_gpu_hour]
    assert min(o.per_gpu_hour or 0 for o in h100) > 1.0


def test_spot_equal_to_on_demand_elsewhere_still_means_no_spot() -> None:
    text = (FULL / "aws" / "vms.csv").read_text(encoding="utf-8")
    result = skypilot.parse_catalog(text, "aws", source="t", fetched_at="d")
    assert result.adjusted[skypilot.SPOT_IS_ON_DEMAND] > 0
    assert skypilot.SPOT_AS_ON_DEMAND not in result.adjusted


@pytest.mark.parametrize(
    ("instance", "share"),
    [("Standard_NV4as_v4", 0.125), ("Standard_NV8as_v4", 0.25),
     ("Standard_NV16as_v4", 0.5), ("Standard_NV32as_v4", 1.0)],
)  # fmt: skip
def test_nvv4_sizes_are_fractions_of_an_mi25(
    built: tuple[list[Offer], list[Rejection]], instance: str, share: float
) -> None:
    offers, rejections = built
    every = [r for r in _raw("azure") if r["InstanceType"] == instance]
    assert every and all(r["AcceleratorCount"] == "1" for r in every)  # what the catalog says
    rows = [r for r in every if r["Price"]]
    found = _of(offers, "azure", instance)
    assert len(found) == len(rows)
    for offer in found:
        assert offer.gpu_count == share
        (row,) = [r for r in rows if r["Region"] == offer.region]
        assert offer.per_gpu_hour == pytest.approx(float(row["Price"]) / share)
    corrected = [
        r for r in rejections
        if r.offer.instance_type == instance and r.reason == skypilot.COUNT_FIXED
    ]  # fmt: skip
    if share < 1:
        rows = every  # an unpriced row is corrected, then dropped for its price
        assert len(corrected) == len(rows)
        assert all(r.reason == skypilot.COUNT_FIXED and r.action == quality.CORRECTED
                   and r.offer.gpu_count == 1 for r in corrected)  # fmt: skip
    else:
        assert not corrected


def test_spheron_nvlink_h100_is_the_80gb_pcie(built: tuple[list[Offer], list[Rejection]]) -> None:
    offers, rejections = built
    (offer,) = _of(offers, "spheron", "n3-H100x8-NVLink__CANADA-1")
    assert (offer.gpu, offer.gpu_memory_gib) == ("H100-PCIe", 80)
    listed = [r for r in rejections if r.reason == skypilot.GPU_NAME_FIXED]
    assert {r.offer.gpu for r in listed} == {"H100-NVL"}
    assert all(r.action == quality.CORRECTED for r in listed)
    # real NVL parts (94 GB) keep their name
    assert any(o.gpu == "H100-NVL" and o.provider == "runpod" for o in offers)


def test_alias_rows_count_once(built: tuple[list[Offer], list[Rejection]]) -> None:
    offers, rejections = built
    aliases = [r for r in rejections if r.reason == quality.ALIAS]
    by_provider = {p: sum(1 for r in aliases if r.offer.provider == p) for p in
                   ("cudo", "spheron", "gcp")}  # fmt: skip
    assert by_provider == {"cudo": 13, "spheron": 10, "gcp": 6}
    assert len(aliases) == 29
    # the kept names: the one sold in more regions, else the shorter
    gcp = {r.offer.instance_type for r in aliases if r.offer.provider == "gcp"}
    assert gcp == {"a3-edgegpu-8g"}  # a3-highgpu-8g sells in more regions
    assert _of(offers, "gcp", "a3-highgpu-8g")
    assert not [o for o in offers if "bigroot" in o.instance_type]
    cudo = {r.offer.instance_type for r in aliases if r.offer.provider == "cudo"}
    assert all("-graphics_" in name for name in cudo)  # "compute" is the shorter name
    for item in aliases:
        twins = [
            o for o in offers
            if (o.provider, o.region, o.gpu, o.gpu_count, o.vcpus, o.ram_gib, o.price_hour,
                o.spot_hour) == (item.offer.provider, item.offer.region, item.offer.gpu,
                                 item.offer.gpu_count, item.offer.vcpus, item.offer.ram_gib,
                                 item.offer.price_hour, item.offer.spot_hour)
        ]  # fmt: skip
        assert len(twins) == 1 and twins[0].instance_type != item.offer.instance_type


def test_offers_that_differ_in_price_are_not_aliases(
    built: tuple[list[Offer], list[Rejection]],
) -> None:
    offers, _ = built
    (a, b) = [o for o in offers if o.provider == "spheron"][:2]
    twin = Offer(a.provider, a.region, a.instance_type + "-x", a.gpu, a.gpu_count,
                 a.gpu_memory_gib, a.vcpus, a.ram_gib, (a.price_hour or 1) + 0.01, a.spot_hour,
                 a.source, a.fetched_at)  # fmt: skip
    report = review_offers([a, twin, b])
    assert not [r for r in report.rejections if r.reason == quality.ALIAS]
