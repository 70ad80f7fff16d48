"""The Azure Retail Prices fetcher against documented-shape pages (MockTransport)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs

import httpx
import pytest
from pricing_helpers import Router, context, fetch_with, isolate, json_reply

from gacost.base.errors import PricingError
from gacost.pricing.fetch import azure
from gacost.pricing.fetch.azure import API_URL, LOW_PRIORITY, NON_PRIMARY, UNKNOWN_SIZE, WINDOWS
from gacost.pricing.fetch.http import FetchError

PAGE2 = "https://prices.azure.com:443/api/retail/prices"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate(monkeypatch, tmp_path)


def _two_pages() -> Router:
    # Both pages live at the same path; the router answers them in order.
    return Router().add(API_URL, json_reply("azure_retail_page1.json"),
                        json_reply("azure_retail_page2.json"))  # fmt: skip


def _fetch(router: Router, env: dict[str, str] | None = None) -> azure.FetchResult:
    return fetch_with(azure.fetch, router, env)


def test_follows_next_page_link_and_builds_offers() -> None:
    router = _two_pages()
    result = _fetch(router)
    first, second = router.requests
    query = parse_qs(first.url.query.decode())
    assert query["api-version"] == ["2023-01-01-preview"]
    assert "armSkuName eq 'Standard_NC4as_T4_v3'" in query["$filter"][0]
    assert "priceType eq 'Consumption'" in query["$filter"][0]
    assert b"$skip=1000" in second.url.query  # the NextPageLink, as given
    offers = {(o.region, o.instance_type): o for o in result.offers}
    t4 = offers[("eastus", "Standard_NC4as_T4_v3")]
    assert (t4.gpu, t4.gpu_count, t4.price_hour, t4.spot_hour) == ("T4", 1, 0.526, 0.1578)
    assert t4.source == "Azure Retail Prices API" and t4.fetched_at == "2026-12-02T12:00:00Z"
    assert offers[("eastus", "Standard_NC24ads_A100_v4")].gpu == "A100-80GB-PCIe"
    h100 = offers[("westeurope", "Standard_ND96isr_H100_v5")]
    assert (h100.gpu, h100.gpu_count, h100.spot_hour) == ("H100-SXM", 8, 39.328)
    assert offers[("eastus", "Standard_NC40ads_H100_v5")].gpu == "H100-NVL"
    a10 = offers[("westeurope", "Standard_NV6ads_A10_v5")]
    assert a10.gpu == "A10" and a10.gpu_count == pytest.approx(1 / 6)
    assert result.dropped[WINDOWS] == 1 and result.dropped[LOW_PRIORITY] == 1
    assert result.dropped[UNKNOWN_SIZE] == 1 and result.dropped[NON_PRIMARY] == 1
    assert result.dropped[azure.NOT_CONSUMPTION] == 2  # reservation + dev/test


def test_region_filter_from_the_environment() -> None:
    router = _two_pages()
    _fetch(router, {"GACOST_AZURE_REGIONS": "eastus, westeurope"})
    text = parse_qs(router.requests[0].url.query.decode())["$filter"][0]
    assert text.endswith("(armRegionName eq 'eastus' or armRegionName eq 'westeurope')")


def test_429_then_success() -> None:
    router = Router().add(
        API_URL,
        httpx.Response(429, headers={"Retry-After": "1"}),
        json_reply("azure_retail_page1.json"),
        json_reply("azure_retail_page2.json"),
    )
    ctx, sleeps = context()
    with router.client() as client:
        result = azure.fetch(client, ctx)
    assert sleeps == [1.0] and len(router.requests) == 3 and len(result.offers) == 7


def test_empty_result_has_no_offers() -> None:
    result = _fetch(Router().add(API_URL, json_reply("azure_retail_empty.json")))
    assert result.offers == ()


def test_truncated_page_is_an_error() -> None:
    text = (Path(__file__).parent / "fixtures/pricing/http/azure_retail_page1.json").read_text()
    router = Router().add(API_URL, httpx.Response(200, text=text[: len(text) // 2]))
    with pytest.raises(FetchError, match="not valid JSON"):
        _fetch(router)


@pytest.mark.parametrize(
    ("page", "message"),
    [
        ({"items": []}, "'Items' list"),
        ({"Items": [], "NextPageLink": 5}, "NextPageLink"),
        ({"Items": ["x"]}, "not an object"),
        ([1, 2], "'Items' list"),
    ],
)
def test_wrong_shapes_are_pricing_errors(page: object, message: str) -> None:
    with pytest.raises(PricingError, match=message):
        _fetch(Router().add(API_URL, json_reply(page)))


def test_a_looping_next_page_link_stops() -> None:
    page = {"Items": [], "NextPageLink": PAGE2 + "?$skip=1000", "Count": 0}
    with pytest.raises(FetchError, match="pagination does not end"):
        _fetch(Router().add(API_URL, json_reply(page)))


def test_several_meters_keep_the_lowest() -> None:
    item = {
        "currencyCode": "USD", "retailPrice": 1.0, "armRegionName": "eastus",
        "meterName": "NC6s v3", "productName": "Virtual Machines NCSv3 Series",
        "skuName": "NC6s v3", "unitOfMeasure": "1 Hour", "type": "Consumption",
        "isPrimaryMeterRegion": True, "armSkuName": "Standard_NC6s_v3",
    }  # fmt: skip
    result = azure.parse_items([item, {**item, "retailPrice": 0.9}], "t")
    (offer,) = result.offers
    assert offer.price_hour == 0.9 and offer.gpu == "V100-PCIe-16GB"
    assert result.adjusted == {azure.SEVERAL_METERS: 1}
