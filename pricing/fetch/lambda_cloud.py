"""Fetch Lambda Cloud on-demand prices (needs ``$LAMBDA_API_KEY``; no spot market).

``GET https://cloud.lambdalabs.com/api/v1/instance-types`` with a Bearer key returns
``{"data": {"gpu_1x_a10": {"instance_type": {"name", "description",
"price_cents_per_hour", "specs": {"vcpus", "memory_gib"}},
"regions_with_capacity_available": [{"name"}]}}}``. One offer per type and region with
capacity; types with no capacity anywhere are counted and left out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import httpx

from gacost.base.errors import PricingError
from gacost.base.gpu_names import canonical_gpu
from gacost.base.records import Offer
from gacost.pricing.fetch.fetcher import FetchContext, FetchResult, collect_offers
from gacost.pricing.fetch.http import FetchError, get_json

API_URL = "https://cloud.lambdalabs.com/api/v1/instance-types"
URL_ENV = "GACOST_LAMBDA_URL"
KEY_ENV = "LAMBDA_API_KEY"
LABEL = "Lambda Cloud API"

NO_CAPACITY = "no region with capacity"
BAD_TYPE = "instance type without a usable name, GPU or price"

_NAME = re.compile(r"^gpu_(\d+)x_(.+)$")
_MEMORY = re.compile(r"\((\d+)\s*GB\b", re.IGNORECASE)


def fetch(client: httpx.Client, ctx: FetchContext) -> FetchResult:
    """The instance types of the account's view of Lambda Cloud."""
    key = ctx.env.get(KEY_ENV, "").strip()
    if not key:
        raise FetchError(f"{LABEL}: ${KEY_ENV} is not set; export it to use this source")
    url = ctx.url(URL_ENV, API_URL)
    data = get_json(client, url, policy=ctx.policy, headers={"Authorization": f"Bearer {key}"})
    if not isinstance(data, dict) or not isinstance(data.get("data"), dict):
        raise PricingError(f"{LABEL}: expected an object with a 'data' object")
    return parse_types(data["data"], ctx.stamp)


def parse_types(types: Mapping[str, object], fetched_at: str) -> FetchResult:
    """One offer per (instance type, region with capacity)."""
    return collect_offers(types.values(), lambda entry: _offers(entry, fetched_at))


def _offers(entry: object, fetched_at: str) -> list[Offer] | str:
    """The offers of one entry, or the reason it has none."""
    if not isinstance(entry, dict) or not isinstance(entry.get("instance_type"), dict):
        return BAD_TYPE
    spec = entry["instance_type"]
    name, cents = spec.get("name"), spec.get("price_cents_per_hour")
    match = _NAME.match(name) if isinstance(name, str) else None
    if match is None or isinstance(cents, bool) or not isinstance(cents, int | float):
        return BAD_TYPE
    memory = _memory_gib(spec.get("description"))
    gpu = canonical_gpu(match.group(2).replace("_", " "), memory_gib=memory, instance_type=name)
    if gpu is None:
        return BAD_TYPE
    regions = [
        r["name"]
        for r in entry.get("regions_with_capacity_available") or []
        if isinstance(r, dict) and isinstance(r.get("name"), str)
    ]
    if not regions:
        return NO_CAPACITY
    specs = spec.get("specs") if isinstance(spec.get("specs"), dict) else {}
    return [
        Offer(
            provider="lambda",
            region=region,
            instance_type=name,
            gpu=gpu,
            gpu_count=float(match.group(1)),
            gpu_memory_gib=memory,
            vcpus=_num(specs.get("vcpus")),
            ram_gib=_num(specs.get("memory_gib")),
            price_hour=cents / 100,
            spot_hour=None,
            source=LABEL,
            fetched_at=fetched_at,
        )
        for region in regions
    ]


def _memory_gib(description: object) -> float | None:
    """``"8x H100 (80 GB SXM5)"`` -> 80.0; None when the description gives no size."""
    found = _MEMORY.search(description) if isinstance(description, str) else None
    return float(found.group(1)) if found else None


def _num(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
