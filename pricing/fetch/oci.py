"""Fetch OCI GPU shape prices from Oracle's public Cost Estimator data (no key, no account).

Two documents behind https://www.oracle.com/cloud/costestimator.html, both public:

- ``shapes.json``: ``{"items": [{"name": "BM.GPU.H100.8", "status": "ACTIVE", "hidden":
  false, "subType": {"value": "gpu"}, "gpuQty": 8, "gpuMemoryQty": 640, "bundleMemoryQty":
  2048, "allowPreemptible": false, "products": [{"partNumber": "B98415", "qty": 112, "type":
  {"value": "ocpu"}}]}]}``: a shape's GPUs and the part it is billed under;
- ``products.json``: ``{"items": [{"partNumber": "B98415", "currencyCodeLocalizations":
  [{"currencyCode": "USD", "prices": [{"model": "PAY_AS_YOU_GO", "value": 10}]}]}]}``: the
  list price of each part, the same data as Oracle's price list API
  (apexapps.oracle.com/pls/apex/cetools/api/v1/products/).

A GPU shape's part is priced **per GPU-hour** (the price list's metric "GPU Per Hour"), so
the instance price is the part's price times ``gpuQty`` (BM.GPU.H100.8: 10 x 8 = 80, the
rate the embedded snapshot holds). Preemptible capacity, where a shape allows it, costs half
(docs.oracle.com, Compute, "Preemptible Instances"). Oracle charges one list price in every
commercial region and does not publish which region offers which shape, so every shape is
listed in each region of :data:`REGIONS`, as SkyPilot's catalog does. Payload shapes: the
trimmed real payloads of dstackai/gpuhunt's OCI provider test (``test_oci.py``; reported by the
estimator on 2026-09-18) and SkyPilot's ``fetch_oci.py``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import httpx

from gacost.base.errors import PricingError
from gacost.base.gpu_names import canonical_gpu
from gacost.base.records import Offer
from gacost.pricing.fetch.fetcher import FetchContext, FetchResult, collect_offers
from gacost.pricing.fetch.http import get_json

BASE_URL = "https://www.oracle.com/a/ocom/docs/cloudestimator2/data/"
URL_ENV = "GACOST_OCI_URL"  # a base URL holding shapes.json and products.json
LABEL = "OCI Cost Estimator"
PREEMPTIBLE_DISCOUNT = 0.5

#: OCI's commercial (OC1) regions (docs.oracle.com/en-us/iaas/Content/General/Concepts/
#: regions.htm as listed in SkyPilot's fetch_oci.py; the 44 regions of the snapshot's rows).
REGIONS: tuple[str, ...] = (
    "af-casablanca-1", "af-johannesburg-1", "ap-batam-1", "ap-chuncheon-1", "ap-hyderabad-1",
    "ap-kulai-2", "ap-melbourne-1", "ap-mumbai-1", "ap-osaka-1", "ap-seoul-1",
    "ap-singapore-1", "ap-singapore-2", "ap-sydney-1", "ap-tokyo-1", "ca-montreal-1",
    "ca-toronto-1", "eu-amsterdam-1", "eu-frankfurt-1", "eu-madrid-1", "eu-madrid-3",
    "eu-marseille-1", "eu-milan-1", "eu-paris-1", "eu-stockholm-1", "eu-turin-1",
    "eu-zurich-1", "il-jerusalem-1", "me-abudhabi-1", "me-dubai-1", "me-jeddah-1",
    "me-riyadh-1", "mx-monterrey-1", "mx-queretaro-1", "sa-bogota-1", "sa-santiago-1",
    "sa-saopaulo-1", "sa-valparaiso-1", "sa-vinhedo-1", "uk-cardiff-1", "uk-london-1",
    "us-ashburn-1", "us-chicago-1", "us-phoenix-1", "us-sanjose-1",
)  # fmt: skip

#: shape-name token -> the GPU as a catalog names it, where the name does not spell it out
_TOKENS = {"GPU2": "P100", "GPU3": "V100", "GPU4": "A100", "A100-v2": "A100-80GB",
           "RTXPRO": "RTX PRO 6000"}  # fmt: skip
#: GiB per GPU (docs.oracle.com Compute Shapes table): the estimator's gpuMemoryQty is a
#: total for most shapes but per GPU for a few (MI355X), so it is only the fallback
_MEMORY = {"P100": 16, "V100": 16, "A10": 24, "A100": 40, "A100-80GB": 80, "H100": 80,
           "H200": 141, "L40S": 48, "B200": 180, "B300": 262.5, "GB200": 192, "GB300": 278,
           "MI300X": 192, "MI355X": 288, "RTX PRO 6000": 96}  # fmt: skip
#: (vCPUs, GiB) where the estimator has none or a wrong count (the Compute Shapes table, as
#: SkyPilot's fetch_oci.py SHAPE_SPEC_OVERRIDES has it: Grace CPUs are 1 vCPU per OCPU)
_HOSTS = {"BM.GPU.GB200.4": (144.0, 960.0), "BM.GPU.GB300.4": (144.0, 960.0),
          "BM.GPU.B300.8": (256.0, 4096.0), "BM.GPU.RTXPRO.8": (288.0, 3072.0)}
_SHAPE = re.compile(r"^(?:BM|VM)\.(GPU\d?)(?:\.([A-Za-z0-9-]+))?\.(\d+)$")

INACTIVE = "shape not active, or hidden"
NOT_GPU = "not a GPU shape"
NO_PRICE = "no USD pay-as-you-go price for its part"
BAD_SHAPE = "shape without a usable name, GPU count or part"


def fetch(client: httpx.Client, ctx: FetchContext) -> FetchResult:
    """Both documents, joined into offers."""
    base = ctx.url(URL_ENV, BASE_URL).rstrip("/") + "/"
    shapes = _items(get_json(client, base + "shapes.json", policy=ctx.policy), "shapes.json")
    products = _items(get_json(client, base + "products.json", policy=ctx.policy),
                      "products.json")
    return parse(shapes, products, ctx.stamp)


def _items(data: object, name: str) -> list[Mapping[str, object]]:
    if not isinstance(data, dict) or not isinstance(data.get("items"), list):
        raise PricingError(f"{LABEL} {name}: expected an object with an 'items' list")
    items: list[Mapping[str, object]] = [i for i in data["items"] if isinstance(i, dict)]
    if len(items) != len(data["items"]):
        raise PricingError(f"{LABEL} {name}: an item of 'items' is not an object")
    return items


def usd_prices(products: list[Mapping[str, object]]) -> dict[str, float]:
    """partNumber -> USD pay-as-you-go price."""
    out = {}
    for product in products:
        for local in _list(product.get("currencyCodeLocalizations")):
            if local.get("currencyCode") != "USD":
                continue
            for price in _list(local.get("prices")):
                value = _float(price.get("value"))
                if price.get("model") == "PAY_AS_YOU_GO" and value is not None:
                    out[str(product.get("partNumber"))] = value
    return out


def parse(shapes: list[Mapping[str, object]], products: list[Mapping[str, object]],
          fetched_at: str) -> FetchResult:
    """One offer per GPU shape and region; skipped shapes counted per reason."""
    prices = usd_prices(products)
    return collect_offers(shapes, lambda shape: _shape_offers(shape, prices, fetched_at))


def _shape_offers(shape: Mapping[str, object], prices: Mapping[str, float],
                  fetched_at: str) -> list[Offer] | str:
    if shape.get("status") != "ACTIVE" or shape.get("hidden"):
        return INACTIVE
    if _value(shape.get("subType")) != "gpu":
        return NOT_GPU
    name = re.sub(r"\s*\(.*\)\s*$", "", str(shape.get("name", ""))).strip()
    raw = _gpu_of(name)
    gpus = _float(shape.get("gpuQty")) or 0.0
    part = next((p for p in _list(shape.get("products")) if _value(p.get("type")) == "ocpu"),
                None)
    if raw is None or gpus <= 0 or part is None:
        return BAD_SHAPE
    unit = prices.get(str(part.get("partNumber")))
    if unit is None or unit <= 0:
        return NO_PRICE
    on_demand = round(unit * gpus, 6)
    spot = round(on_demand * PREEMPTIBLE_DISCOUNT, 6) if shape.get("allowPreemptible") else None
    total = _float(shape.get("gpuMemoryQty"))
    memory = _MEMORY.get(raw) or (total / gpus if total else None)
    ocpus, ram = _float(part.get("qty")), _float(shape.get("bundleMemoryQty"))
    vcpus, ram = _HOSTS.get(name, (ocpus * 2 if ocpus else None, ram or None))  # x86: SMT
    gpu = canonical_gpu(raw, memory_gib=memory, instance_type=name) or raw
    return [
        Offer(
            provider="oci", region=region, instance_type=name, gpu=gpu, gpu_count=gpus,
            gpu_memory_gib=memory, vcpus=vcpus, ram_gib=ram, price_hour=on_demand,
            spot_hour=spot, source=LABEL, fetched_at=fetched_at,
        )
        for region in REGIONS
    ]  # fmt: skip


def _gpu_of(name: str) -> str | None:
    """``BM.GPU.H100.8`` -> ``H100``, ``VM.GPU3.1`` -> ``V100``; None if not a GPU shape."""
    match = _SHAPE.match(name)
    if match is None:
        return None
    token = match.group(2) or match.group(1)
    return _TOKENS.get(token, token)


def _list(value: object) -> list[Mapping[str, object]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _value(field: object) -> object:
    return field.get("value") if isinstance(field, dict) else None


def _float(value: object) -> float | None:
    """A JSON number as a float; None for anything else (null, text, booleans)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
