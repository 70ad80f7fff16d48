"""Fetch live Vast.ai marketplace offers from the public bundles search (no key needed).

``POST https://console.vast.ai/api/v0/bundles/`` with a JSON query (falling back to
``GET ...?q=<query>`` when the POST is refused with 400/405); ``$VAST_API_KEY``, when set,
is sent as a Bearer token. Offers are volatile single machines, so they are reduced to one
offer per (GPU, GPU count, country): the median ``dph_total`` (whole offer, USD/h) of the
offers with ``reliability2 >= 0.95``, and the median ``min_bid`` as the spot (interruptible)
rate. The per-GPU rate is ``dph_total / num_gpus``.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import httpx

from gacost.base.errors import PricingError
from gacost.base.gpu_names import canonical_gpu
from gacost.base.records import Offer
from gacost.pricing.fetch.fetcher import FetchContext, FetchResult
from gacost.pricing.fetch.http import FetchError, get_json

API_URL = "https://console.vast.ai/api/v0/bundles/"
URL_ENV = "GACOST_VAST_URL"
KEY_ENV = "VAST_API_KEY"
LABEL = "Vast.ai bundles API"
MIN_RELIABILITY = 0.95
QUERY: dict[str, object] = {
    "rentable": {"eq": True},
    "verified": {"eq": True},
    "rented": {"eq": False},  # as vast-cli's search: offers nobody holds now
    "external": {"eq": False},  # and not offers relayed from other marketplaces
    "type": "on-demand",
    "order": [["dph_total", "asc"]],
    "limit": 5000,
}

BAD_OFFER = "offer without a usable GPU name, GPU count or price"
UNRELIABLE = f"host reliability below {MIN_RELIABILITY}"
NOT_A_GPU = "accelerator is not a GPU"
MERGED = "offers merged into per-GPU/count/country medians"


@dataclass(frozen=True)
class _Machine:
    gpu: str
    count: int
    country: str
    price: float
    bid: float | None
    gpu_gib: float | None
    cpus: float | None
    ram_gib: float | None


def fetch(client: httpx.Client, ctx: FetchContext) -> FetchResult:
    """Search the marketplace and reduce the offers to medians."""
    key = ctx.env.get(KEY_ENV, "").strip()
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    url = ctx.url(URL_ENV, API_URL)
    try:
        data = get_json(
            client, url, policy=ctx.policy, method="POST", json_body=QUERY, headers=headers
        )
    except FetchError as exc:
        if exc.status not in (400, 405):
            raise
        query = {"q": json.dumps(QUERY, separators=(",", ":"))}
        data = get_json(client, url, policy=ctx.policy, params=query, headers=headers)
    if not isinstance(data, dict) or not isinstance(data.get("offers"), list):
        raise PricingError(f"{LABEL}: expected an object with an 'offers' list")
    return parse_offers(data["offers"], ctx.stamp)


def parse_offers(raw_offers: Iterable[object], fetched_at: str) -> FetchResult:
    """Median offers per (GPU, count, country); bad and unreliable offers are counted."""
    dropped: Counter[str] = Counter()
    groups: dict[tuple[str, int, str], list[_Machine]] = defaultdict(list)
    total = 0
    for raw in raw_offers:
        machine, reason = _machine(raw)
        if machine is None:
            dropped[reason] += 1
            continue
        total += 1
        groups[(machine.gpu, machine.count, machine.country)].append(machine)
    offers = [_offer(key, machines, fetched_at) for key, machines in sorted(groups.items())]
    adjusted = {MERGED: total - len(offers)} if total > len(offers) else {}
    return FetchResult(tuple(offers), dict(dropped), adjusted, f"{total} marketplace offers")


def _machine(raw: object) -> tuple[_Machine | None, str]:
    if not isinstance(raw, dict):
        return None, BAD_OFFER
    name, count, price = raw.get("gpu_name"), raw.get("num_gpus"), _num(raw.get("dph_total"))
    if not isinstance(name, str) or not name.strip() or price is None:
        return None, BAD_OFFER
    if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
        return None, BAD_OFFER
    reliability = _num(raw.get("reliability2", raw.get("reliability")))
    if reliability is not None and reliability < MIN_RELIABILITY:
        return None, UNRELIABLE
    gpu_mb = _num(raw.get("gpu_ram"))
    gpu_gib = round(gpu_mb / 1024, 2) if gpu_mb else None
    gpu = canonical_gpu(name, memory_gib=gpu_gib)
    if gpu is None:
        return None, NOT_A_GPU
    ram_mb = _num(raw.get("cpu_ram"))
    machine = _Machine(
        gpu=gpu,
        count=count,
        country=_country(raw.get("geolocation")),
        price=price,
        bid=_num(raw.get("min_bid")) or None,
        gpu_gib=gpu_gib,
        cpus=_num(raw.get("cpu_cores_effective")),
        ram_gib=round(ram_mb / 1024, 1) if ram_mb else None,
    )
    return machine, ""


def _country(geolocation: object) -> str:
    """``"Texas, US"`` -> ``"US"``; unknown locations become ``"unknown"``."""
    if not isinstance(geolocation, str) or not geolocation.strip():
        return "unknown"
    return geolocation.split(",")[-1].strip() or "unknown"


def _offer(key: tuple[str, int, str], machines: list[_Machine], fetched_at: str) -> Offer:
    gpu, count, country = key
    bids = [m.bid for m in machines if m.bid is not None]
    return Offer(
        provider="vast",
        region=country,
        instance_type=f"{count}x-{gpu}",
        gpu=gpu,
        gpu_count=float(count),
        gpu_memory_gib=_median(m.gpu_gib for m in machines),
        vcpus=_median(m.cpus for m in machines),
        ram_gib=_median(m.ram_gib for m in machines),
        price_hour=round(statistics.median(m.price for m in machines), 6),
        spot_hour=round(statistics.median(bids), 6) if bids else None,
        source=LABEL,
        fetched_at=fetched_at,
    )


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 2) if present else None


def _num(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
