"""The OCI Cost Estimator fetcher (no key) against cuts of the real payloads (MockTransport)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import httpx
import pytest
from pricing_helpers import Router, fetch_with, fixture_text, isolate, json_reply

from gacost.base.errors import PricingError
from gacost.commands.cli import main
from gacost.pricing.fetch import http, oci
from gacost.pricing.fetch.oci import BASE_URL, INACTIVE, NO_PRICE, NOT_GPU, REGIONS
from gacost.pricing.price_dates import PriceDating
from gacost.pricing.snapshot import load_snapshot

ROOT = Path(__file__).resolve().parent.parent
SHAPES = BASE_URL + "shapes.json"
PRODUCTS = BASE_URL + "products.json"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate(monkeypatch, tmp_path)


def _router(shapes: object = "oci_shapes.json", products: object = "oci_products.json") -> Router:
    return Router().add(SHAPES, json_reply(shapes)).add(PRODUCTS, json_reply(products))


def _fetch(router: Router, env: dict[str, str] | None = None) -> oci.FetchResult:
    return fetch_with(oci.fetch, router, env)


def test_prices_every_gpu_shape_in_every_region() -> None:
    router = _router()
    result = _fetch(router)
    assert [r.url.path for r in router.requests] == [
        "/a/ocom/docs/cloudestimator2/data/shapes.json",
        "/a/ocom/docs/cloudestimator2/data/products.json",
    ]
    offers = {(o.region, o.instance_type): o for o in result.offers}
    assert len(result.offers) == 10 * len(REGIONS) and len(REGIONS) == 44
    h100 = offers[("us-ashburn-1", "BM.GPU.H100.8")]  # $10 per GPU-hour x 8
    assert (h100.gpu, h100.gpu_count, h100.price_hour, h100.spot_hour) == ("H100-SXM", 8, 80, None)
    assert (h100.vcpus, h100.ram_gib, h100.source) == (224, 2048, "OCI Cost Estimator")
    v100 = offers[("eu-frankfurt-1", "VM.GPU3.1")]  # preemptible at half price
    assert (v100.gpu, v100.price_hour, v100.spot_hour) == ("V100-SXM2-16GB", 2.95, 1.475)
    gb200 = offers[("us-chicago-1", "BM.GPU.GB200.4")]  # "(NVL72)" dropped from the name
    assert (gb200.gpu_memory_gib, gb200.vcpus, gb200.price_hour) == (192, 144, 64)
    assert offers[("us-ashburn-1", "BM.GPU.RTXPRO.8")].gpu == "RTX-PRO-6000"
    assert offers[("us-ashburn-1", "BM.GPU.MI355X.8")].gpu_memory_gib == 288  # not 288 / 8
    assert result.dropped == {NOT_GPU: 1}


def test_the_real_shaped_data_reproduces_the_snapshot_rows() -> None:
    """The cut of the estimator's data of 2026-09-18 gives, shape for shape and region for
    region, the OCI rows the embedded snapshot holds (SkyPilot built them from the same
    public data that day): the join and its units are right."""
    snapshot = {(o.region, o.instance_type): o for o in load_snapshot().offers
                if o.provider == "oci"}  # fmt: skip
    for offer in _fetch(_router()).offers:
        twin = snapshot[(offer.region, offer.instance_type)]
        fields = ("gpu", "gpu_count", "gpu_memory_gib", "vcpus", "ram_gib", "price_hour",
                  "spot_hour")  # fmt: skip
        assert [getattr(offer, f) for f in fields] == [getattr(twin, f) for f in fields], offer


def test_skips_and_counts_shapes_it_cannot_price() -> None:
    shapes = json.loads(fixture_text("oci_shapes.json"))
    shapes["items"][1]["hidden"] = True  # BM.GPU.H100.8
    shapes["items"][2]["products"][0]["partNumber"] = "B00000"  # BM.GPU4.8: unknown part
    products = json.loads(fixture_text("oci_products.json"))
    products["items"][0]["currencyCodeLocalizations"][0]["currencyCode"] = "EUR"
    result = _fetch(_router(shapes, products))
    names = {o.instance_type for o in result.offers}
    assert "BM.GPU.H100.8" not in names and "BM.GPU4.8" not in names
    assert result.dropped == {NOT_GPU: 1, INACTIVE: 1, NO_PRICE: 1}


@pytest.mark.parametrize(
    ("shapes", "products", "message"),
    [
        ({"shapes": []}, "oci_products.json", "shapes.json: expected an object with an 'items'"),
        ("oci_shapes.json", [1, 2], "products.json: expected an object with an 'items' list"),
        ({"items": [1]}, "oci_products.json", "shapes.json: an item of 'items' is not an object"),
    ],
)
def test_a_malformed_document_is_a_pricing_error(
    shapes: object, products: object, message: str
) -> None:
    with pytest.raises(PricingError, match=message):
        _fetch(_router(shapes, products))


def test_the_base_url_can_point_elsewhere() -> None:
    router = Router().add("https://mirror.example/oci/shapes.json", json_reply("oci_shapes.json"))
    router.add("https://mirror.example/oci/products.json", json_reply("oci_products.json"))
    result = _fetch(router, {"GACOST_OCI_URL": "https://mirror.example/oci"})
    assert len(result.offers) == 440 and {r.url.host for r in router.requests} == {
        "mirror.example"}


@pytest.mark.usefixtures("snapshot_day")  # the whole stderr; a fetch newer than the snapshot
def test_refresh_through_the_cli_dates_the_rows_by_the_fetch(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    router = _router()
    monkeypatch.setattr(http, "make_client", lambda policy=None: router.client())
    code = main(["prices", "--refresh", "--source", "oci", "--provider", "oci", "--gpu",
                 "H100-SXM", "--format", "csv"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0 and err.splitlines()[-1] == "note: prices: 1 of 1 sources refreshed"
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 44 and {r["source"] for r in rows} == {"OCI Cost Estimator"}
    assert {r["price_old"] for r in rows} == {"false"}
    assert {r["prices_as_of"] == r["fetched_at"][:10] for r in rows} == {True}


def test_a_failed_fetch_keeps_the_snapshot_rows(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    router = Router().add(SHAPES, httpx.Response(503)).add(PRODUCTS, httpx.Response(503))
    monkeypatch.setattr(http, "make_client", lambda policy=None: router.client())
    code = main(["prices", "--refresh", "--source", "oci", "--provider", "oci", "--gpu",
                 "H100-SXM", "--format", "json"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0 and "0 of 1 sources refreshed" in err
    rows = json.loads(out)["offers"]
    assert {r["source"] for r in rows} == {"skypilot-catalog v8 oci@05887511"}
    dating = PriceDating(load_snapshot().price_dates)
    assert {r["prices_as_of"] for r in rows} == {dating.dates["oci"].prices_as_of}
