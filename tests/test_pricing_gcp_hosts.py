"""GCP host + GPU joins and the GPU-part check, on the real rows of tests/fixtures/pricing/full."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from gacost.base.records import Offer
from gacost.pricing import skypilot
from gacost.pricing.build_snapshot import read_catalog
from gacost.pricing.skypilot import ParseResult, parse_catalog

GCP = Path(__file__).parent / "fixtures" / "pricing" / "full" / "gcp"


@pytest.fixture(scope="module")
def gcp_text() -> str:
    return read_catalog(GCP / "vms.csv")


@pytest.fixture(scope="module")
def gcp(gcp_text: str) -> ParseResult:
    return parse_catalog(gcp_text, "gcp", source="t", fetched_at="d")


def _offer(result: ParseResult, instance: str, region: str) -> Offer:
    (hit,) = [o for o in result.offers if (o.instance_type, o.region) == (instance, region)]
    return hit


def _raw(instance: str, accelerator: str, count: str, zone: str) -> dict[str, str]:
    with (GCP / ("host_vms.csv" if instance else "vms.csv")).open(newline="") as handle:
        (row,) = [
            r
            for r in csv.DictReader(handle)
            if (r["InstanceType"], r["AcceleratorName"], r["AcceleratorCount"],
                r["AvailabilityZone"]) == (instance, accelerator, count, zone)
        ]  # fmt: skip
    return row


def test_n1_gpus_get_skypilots_host(gcp: ParseResult) -> None:
    # SkyPilot's vCPU table (T4: 4/8/48, others 8/16/32/64) and 4 GiB per vCPU, cheapest
    hosts = {
        (o.gpu, o.gpu_count): o.instance_type.split("+")[0]
        for o in gcp.offers
        if "+" in o.instance_type
    }
    assert hosts[("T4", 1)] == "n1-highmem-4"
    assert hosts[("T4", 2)] == "n1-highmem-8"
    assert hosts[("T4", 4)] == "n1-standard-64"  # 64 vCPU/240 GiB, cheaper than highmem-64
    assert hosts[("P4", 4)] == hosts[("P100", 4)] == hosts[("V100-SXM2-16GB", 4)]
    assert hosts[("P4", 4)] == "n1-highmem-32"
    assert hosts[("V100-SXM2-16GB", 8)] == "n1-highmem-64"
    assert hosts[("V100-SXM2-16GB", 1)] == "n1-highmem-8"


def test_n1_offer_is_host_plus_gpu_rows(gcp: ParseResult) -> None:
    t4 = _offer(gcp, "n1-standard-64+4xT4", "us-central1")
    host = _raw("n1-standard-64", "", "", "us-central1-a")
    gpu = _raw("", "T4", "4", "us-central1-a")
    assert t4.price_hour == pytest.approx(float(host["Price"]) + float(gpu["Price"]))
    assert (t4.vcpus, t4.ram_gib, t4.gpu_count) == (64, 240, 4)
    assert not any(
        r.reason.startswith(skypilot.GCP_GPU_UNMATCHED) and r.offer.gpu in ("T4", "P4", "P100")
        for r in gcp.rejections
    )


def _without(text: str, drop: tuple[str, ...], zone: str = "") -> ParseResult:
    lines = [
        line
        for line in text.splitlines()
        if not (line.startswith(drop) and (not zone or f",{zone}," in line))
    ]
    return parse_catalog("\n".join(lines) + "\n", "gcp", source="t", fetched_at="d")


def test_a_missing_host_is_named(gcp_text: str) -> None:
    # one zone without any n1 host of 32 vCPUs or more: its 4x GPU rows are dropped, each
    # reason naming the type the other zones join them with
    big = ("n1-highmem-32,", "n1-highmem-64,", "n1-standard-64,")
    result = _without(gcp_text, big, zone="us-central1-a")
    p4 = f"{skypilot.GCP_GPU_UNMATCHED} (n1-highmem-32 missing)"
    t4 = f"{skypilot.GCP_GPU_UNMATCHED} (n1-standard-64 missing)"
    v100 = f"{skypilot.GCP_GPU_UNMATCHED} (n1-highmem-64 missing)"
    assert result.dropped[t4] == 1 and result.dropped[v100] == 1
    assert result.dropped[p4] == 2  # 4x P4 and V100 in us-central1-a (no P100 there)
    listed = [r.offer for r in result.rejections if r.reason == t4]
    assert [(o.gpu, o.gpu_count, o.region) for o in listed] == [("T4", 4, "us-central1")]
    # the other us-central1 zones still sell them
    assert _offer(result, "n1-standard-64+4xT4", "us-central1").price_hour


def test_no_fitting_host_anywhere_says_what_is_needed(gcp_text: str) -> None:
    result = _without(gcp_text, ("n1-highmem-64,", "n1-standard-64,"))
    wanted = f"{skypilot.GCP_GPU_UNMATCHED} (an n1 host with >= 48 vCPUs and >= 192 GiB missing)"
    t4_rows = sum(1 for r in gcp_text.splitlines() if r.startswith(",,,T4,4,"))
    assert t4_rows and result.dropped[wanted] == t4_rows


def test_low_gpu_parts_compare_with_the_region_host(gcp: ParseResult) -> None:
    low = [r for r in gcp.rejections if r.reason == skypilot.GCP_GPU_PART_LOW]
    regions = {(r.offer.instance_type, r.offer.region) for r in low}
    # the audit's rows: A100-40GB at $1.61-1.71/GPU in four regions, a3-megagpu-8g's
    # 35.39 part in five, on every machine of those regions
    for region in ("asia-northeast1", "asia-northeast3", "asia-southeast1", "europe-west4"):
        assert ("a2-highgpu-1g", region) in regions
    assert ("a2-megagpu-16g", "europe-west4") in regions
    mega = {r for i, r in regions if i == "a3-megagpu-8g"}
    assert mega == {"asia-northeast1", "asia-southeast1", "europe-west1", "europe-west3",
                    "us-east5"}  # fmt: skip
    kept_a100 = [o for o in gcp.offers if o.gpu == "A100-40GB-SXM" and o.price_hour]
    assert kept_a100 and min(o.per_gpu_hour or 0 for o in kept_a100) > 3.4
    # the same rule keeps every T4, P4, P100, V100 and L4 part
    assert not [r for r in low if r.offer.gpu in ("T4", "P4", "P100", "L4")]
    assert _offer(gcp, "a2-highgpu-1g", "us-central1").price_hour == pytest.approx(3.67339)


def test_b200_host_priced_zero_is_listed(gcp: ParseResult) -> None:
    unpriced = [r for r in gcp.rejections if r.reason == skypilot.GCP_HOST_UNPRICED]
    assert unpriced and all(r.offer.gpu == "B200" for r in unpriced)
    assert all("a4-highgpu-8g" in r.offer.instance_type for r in unpriced)
    assert not [o for o in gcp.offers if o.gpu == "B200"]


def test_seeweb_rows_without_region_say_why() -> None:
    path = GCP.parent / "seeweb" / "vms.csv"
    result = parse_catalog(read_catalog(path), "seeweb", source="t", fetched_at="d")
    reason = skypilot.NO_REGION_REASONS["seeweb"]
    assert result.dropped[reason] == 15
    assert {r.offer.gpu for r in result.rejections if r.reason == reason} >= {"L4", "H200-SXM"}
    assert all(o.region == "it-fr2" for o in result.offers)
