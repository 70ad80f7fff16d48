"""Fetch Azure GPU VM prices from the Azure Retail Prices API (no key).

``GET https://prices.azure.com/api/retail/prices?api-version=2023-01-01-preview&$filter=...``
with an OData filter on the GPU sizes of :data:`GPU_SIZES` (and on the regions of
``$GACOST_AZURE_REGIONS``, comma-separated, when set), following ``NextPageLink`` to the
last page. Items are Linux pay-as-you-go meters; a ``skuName`` ending in `` Spot`` is the
spot rate of the same size. GPU model and count are not in the API: they come from
:data:`GPU_SIZES`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping

import httpx

from gacost.base.errors import PricingError
from gacost.base.gpu_names import canonical_gpu
from gacost.base.records import Offer
from gacost.pricing.fetch.fetcher import FetchContext, FetchResult
from gacost.pricing.fetch.http import FetchError, get_json

API_URL = "https://prices.azure.com/api/retail/prices"
URL_ENV = "GACOST_AZURE_URL"
API_VERSION = "2023-01-01-preview"
REGIONS_ENV = "GACOST_AZURE_REGIONS"
LABEL = "Azure Retail Prices API"
MAX_PAGES = 200

#: armSkuName -> (GPU as a catalog would name it, GPUs per VM, GiB per GPU).
GPU_SIZES: dict[str, tuple[str, float, float]] = {
    "Standard_NC4as_T4_v3": ("T4", 1, 16),
    "Standard_NC8as_T4_v3": ("T4", 1, 16),
    "Standard_NC16as_T4_v3": ("T4", 1, 16),
    "Standard_NC64as_T4_v3": ("T4", 4, 16),
    "Standard_NC6s_v3": ("V100 PCIe", 1, 16),
    "Standard_NC12s_v3": ("V100 PCIe", 2, 16),
    "Standard_NC24s_v3": ("V100 PCIe", 4, 16),
    "Standard_NC24rs_v3": ("V100 PCIe", 4, 16),
    "Standard_ND40rs_v2": ("V100 SXM2 32GB", 8, 32),
    "Standard_NV6ads_A10_v5": ("A10", 1 / 6, 24),
    "Standard_NV12ads_A10_v5": ("A10", 1 / 3, 24),
    "Standard_NV18ads_A10_v5": ("A10", 1 / 2, 24),
    "Standard_NV36ads_A10_v5": ("A10", 1, 24),
    "Standard_NV36adms_A10_v5": ("A10", 1, 24),
    "Standard_NV72ads_A10_v5": ("A10", 2, 24),
    "Standard_NC24ads_A100_v4": ("A100 80GB PCIe", 1, 80),
    "Standard_NC48ads_A100_v4": ("A100 80GB PCIe", 2, 80),
    "Standard_NC96ads_A100_v4": ("A100 80GB PCIe", 4, 80),
    "Standard_ND96asr_v4": ("A100 40GB SXM", 8, 40),
    "Standard_ND96amsr_A100_v4": ("A100 80GB SXM", 8, 80),
    "Standard_NC40ads_H100_v5": ("H100 NVL", 1, 94),
    "Standard_NC80adis_H100_v5": ("H100 NVL", 2, 94),
    "Standard_NCC40ads_H100_v5": ("H100 NVL", 1, 94),
    "Standard_ND96isr_H100_v5": ("H100 SXM", 8, 80),
    "Standard_ND96isr_H200_v5": ("H200 SXM", 8, 141),
}

NOT_CONSUMPTION = "not a pay-as-you-go meter"
WINDOWS = "Windows meter"
LOW_PRIORITY = "low-priority meter"
NOT_USD_HOURLY = "not USD per hour"
NON_PRIMARY = "non-primary meter region"
UNKNOWN_SIZE = "not a known GPU VM size"
BAD_ITEM = "item without a usable region, size or price"
SEVERAL_METERS = "several meters for one size and region (lowest kept)"


def odata_filter(regions: Iterable[str] = ()) -> str:
    """The ``$filter`` for the GPU sizes of :data:`GPU_SIZES`, optionally some regions."""
    sizes = " or ".join(f"armSkuName eq '{sku}'" for sku in GPU_SIZES)
    text = f"serviceName eq 'Virtual Machines' and priceType eq 'Consumption' and ({sizes})"
    wanted = [r.strip() for r in regions if r.strip()]
    if wanted:
        text += " and (" + " or ".join(f"armRegionName eq '{r}'" for r in wanted) + ")"
    return text


def fetch(client: httpx.Client, ctx: FetchContext) -> FetchResult:
    """All pages of the GPU-size query, turned into offers."""
    regions = ctx.env.get(REGIONS_ENV, "").split(",")
    params = {"api-version": API_VERSION, "$filter": odata_filter(regions)}
    items = list(_pages(client, ctx, params))
    return parse_items(items, ctx.stamp)


def _pages(
    client: httpx.Client, ctx: FetchContext, params: Mapping[str, str]
) -> Iterable[Mapping[str, object]]:
    url: str | None = ctx.url(URL_ENV, API_URL)
    query: Mapping[str, str] | None = params
    seen: set[str] = set()
    while url:
        if len(seen) >= MAX_PAGES or url in seen:
            raise FetchError(f"{LABEL}: pagination does not end (page {len(seen) + 1})")
        seen.add(url)
        page = get_json(client, url, policy=ctx.policy, params=query)
        items, url = _page_items(page, len(seen))
        query = None  # NextPageLink carries the whole query
        yield from items


def _page_items(page: object, number: int) -> tuple[list[Mapping[str, object]], str | None]:
    if not isinstance(page, dict) or not isinstance(page.get("Items"), list):
        raise PricingError(f"{LABEL} page {number}: expected an object with an 'Items' list")
    link = page.get("NextPageLink")
    if link is not None and not isinstance(link, str):
        raise PricingError(f"{LABEL} page {number}: 'NextPageLink' is not a string")
    items: list[Mapping[str, object]] = [i for i in page["Items"] if isinstance(i, dict)]
    if len(items) != len(page["Items"]):
        raise PricingError(f"{LABEL} page {number}: an item of 'Items' is not an object")
    return items, link or None


def parse_items(items: Iterable[Mapping[str, object]], fetched_at: str) -> FetchResult:
    """One offer per (region, size) with its on-demand and spot rate."""
    dropped: Counter[str] = Counter()
    adjusted: Counter[str] = Counter()
    rates: dict[tuple[str, str], dict[bool, list[float]]] = defaultdict(lambda: defaultdict(list))
    for item in items:
        reason = _skip_reason(item)
        if reason:
            dropped[reason] += 1
            continue
        sku, region = str(item["armSkuName"]), str(item["armRegionName"])
        is_spot = str(item.get("skuName", "")).endswith(" Spot")
        rates[(region, sku)][is_spot].append(_price(item) or 0.0)
    offers = []
    for (region, sku), by_kind in sorted(rates.items()):
        if any(len(prices) > 1 for prices in by_kind.values()):
            adjusted[SEVERAL_METERS] += 1
        on_demand, spot = min(by_kind[False], default=None), min(by_kind[True], default=None)
        offers.append(_offer(region, sku, on_demand, spot, fetched_at))
    return FetchResult(tuple(offers), dict(dropped), dict(adjusted))


def _skip_reason(item: Mapping[str, object]) -> str | None:
    names = f"{item.get('skuName', '')} {item.get('meterName', '')}"
    if item.get("type") != "Consumption":
        return NOT_CONSUMPTION
    if "Windows" in str(item.get("productName", "")):
        return WINDOWS
    if "Low Priority" in names:
        return LOW_PRIORITY
    if item.get("currencyCode") != "USD" or item.get("unitOfMeasure") != "1 Hour":
        return NOT_USD_HOURLY
    if item.get("isPrimaryMeterRegion") is False:
        return NON_PRIMARY
    if item.get("armSkuName") not in GPU_SIZES:
        return UNKNOWN_SIZE
    price = _price(item)
    if not item.get("armRegionName") or price is None or price < 0:
        return BAD_ITEM
    return None


def _price(item: Mapping[str, object]) -> float | None:
    value = item.get("retailPrice")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _offer(
    region: str, sku: str, on_demand: float | None, spot: float | None, fetched_at: str
) -> Offer:
    raw, count, memory = GPU_SIZES[sku]
    gpu = canonical_gpu(raw, memory_gib=memory, instance_type=sku) or raw
    return Offer(
        provider="azure",
        region=region,
        instance_type=sku,
        gpu=gpu,
        gpu_count=count,
        gpu_memory_gib=memory,
        vcpus=None,
        ram_gib=None,
        price_hour=on_demand,
        spot_hour=spot,
        source=LABEL,
        fetched_at=fetched_at,
    )
