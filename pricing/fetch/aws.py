"""Fetch AWS on-demand GPU prices from the Price List bulk API (no key; no spot).

``GET https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/<region>/index.csv``
for each region of ``$GACOST_AWS_REGIONS`` (comma-separated, default ``us-east-1``). The
file is hundreds of MB, so it is streamed line by line and only GPU instance families
(:data:`GPU_FAMILIES`) are kept, with SkyPilot's filter: ``TermType=OnDemand``, Linux, no
pre-installed software, ``CapacityStatus=Used``, shared tenancy, USD per hour, price > 0.
The CSV opens with a few metadata lines before its header; the header is found by name.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from collections.abc import Iterable, Iterator

import httpx

from gacost.base.errors import PricingError
from gacost.base.gpu_names import canonical_gpu
from gacost.base.records import Offer
from gacost.pricing.fetch.fetcher import FetchContext, FetchResult
from gacost.pricing.fetch.http import iter_lines, open_stream

BULK_URL = (
    "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/{region}/index.csv"
)
URL_ENV = "GACOST_AWS_BULK_URL"  # a template with {region}
REGIONS_ENV = "GACOST_AWS_REGIONS"
DEFAULT_REGIONS = ("us-east-1",)
LABEL = "AWS Price List bulk API"
MAX_PREAMBLE_LINES = 10

#: instance family -> (GPU as AWS names it, GiB per GPU).
GPU_FAMILIES: dict[str, tuple[str, float]] = {
    "g4dn": ("T4", 16),
    "g5g": ("T4G", 16),
    "g5": ("A10G", 24),
    "g6": ("L4", 24),
    "gr6": ("L4", 24),
    "g6e": ("L40S", 48),
    "p3": ("V100", 16),
    "p3dn": ("V100", 32),
    "p4d": ("A100", 40),
    "p4de": ("A100", 80),
    "p5": ("H100 SXM", 80),
    "p5e": ("H200", 141),
    "p5en": ("H200", 141),
}
REQUIRED_COLUMNS = (
    "Instance Type", "TermType", "PricePerUnit", "Unit", "Currency", "Operating System",
    "Tenancy", "CapacityStatus", "Pre Installed S/W", "GPU", "vCPU", "Memory",
)  # fmt: skip

NOT_GPU_FAMILY = "not a GPU instance family"
NOT_LINUX_ON_DEMAND = "not Linux on-demand shared capacity"
BAD_ROW = "row without a usable price or GPU count"
DUPLICATE_ROWS = "several price rows for one instance type (lowest kept)"

_NUMBER = re.compile(r"^\s*(\d+(?:\.\d+)?)")


def fetch(client: httpx.Client, ctx: FetchContext) -> FetchResult:
    """Stream each region's price list and keep its GPU on-demand rows."""
    regions = [r.strip() for r in ctx.env.get(REGIONS_ENV, "").split(",") if r.strip()]
    offers: list[Offer] = []
    dropped: Counter[str] = Counter()
    adjusted: Counter[str] = Counter()
    for region in regions or DEFAULT_REGIONS:
        url = ctx.url(URL_ENV, BULK_URL).format(region=region)
        with open_stream(client, url, policy=ctx.policy) as response:
            result = parse_bulk_csv(iter_lines(response, ctx.policy), region, ctx.stamp)
        offers += result.offers
        dropped.update(result.dropped)
        adjusted.update(result.adjusted)
    return FetchResult(tuple(offers), dict(dropped), dict(adjusted))


def parse_bulk_csv(lines: Iterable[str], region: str, fetched_at: str) -> FetchResult:
    """Offers for ``region`` from the lines of a bulk price CSV."""
    where = f"{LABEL} {region}"
    rows = _records(lines, where)
    header = _find_header(rows, where)
    dropped: Counter[str] = Counter()
    best: dict[str, tuple[float, dict[str, str]]] = {}
    duplicates = 0
    for cells in _cells(rows, header, where):
        price, reason = _row_price(cells)
        if price is None:
            dropped[reason] += 1
            continue
        name = cells["Instance Type"]
        duplicates += name in best
        if name not in best or price < best[name][0]:
            best[name] = (price, cells)
    offers = []
    for price, cells in best.values():
        offer = _offer(cells, price, region, fetched_at)
        if offer is None:
            dropped[BAD_ROW] += 1
        else:
            offers.append(offer)
    offers.sort(key=lambda o: o.instance_type)
    adjusted = {DUPLICATE_ROWS: duplicates} if duplicates else {}
    return FetchResult(tuple(offers), dict(dropped), adjusted)


def _cells(rows: Iterator[list[str]], header: list[str], where: str) -> Iterator[dict[str, str]]:
    for record in rows:
        if not record:
            continue
        if len(record) != len(header):
            raise PricingError(
                f"{where}: a row has {len(record)} fields, the header {len(header)} "
                "(truncated or malformed file?); try again later"
            )
        yield dict(zip(header, record, strict=True))


def _records(lines: Iterable[str], where: str) -> Iterator[list[str]]:
    reader = csv.reader(iter(lines), strict=True)
    try:
        yield from reader
    except csv.Error as exc:
        raise PricingError(f"{where} line {reader.line_num}: malformed CSV ({exc})") from None


def _find_header(rows: Iterator[list[str]], where: str) -> list[str]:
    for _ in range(MAX_PREAMBLE_LINES):
        record = next(rows, None)
        if record is None:
            break
        if "SKU" in record and "Instance Type" in record:
            missing = [c for c in REQUIRED_COLUMNS if c not in record]
            if missing:
                raise PricingError(f"{where}: price list lacks column(s) {', '.join(missing)}")
            return record
    raise PricingError(f"{where}: no price-list header (SKU, Instance Type, ...) found")


def _row_price(cells: dict[str, str]) -> tuple[float | None, str]:
    family = cells["Instance Type"].split(".")[0]
    if family not in GPU_FAMILIES:
        return None, NOT_GPU_FAMILY
    if (
        cells["TermType"] != "OnDemand"
        or cells["Operating System"] != "Linux"
        or cells["Pre Installed S/W"] not in ("", "NA")
        or cells["CapacityStatus"] != "Used"
        or cells["Tenancy"] != "Shared"
        or cells["Currency"] != "USD"
        or cells["Unit"] != "Hrs"
    ):
        return None, NOT_LINUX_ON_DEMAND
    price = _number(cells["PricePerUnit"])
    if price is None:
        return None, BAD_ROW
    return price, ""


def _offer(cells: dict[str, str], price: float, region: str, fetched_at: str) -> Offer | None:
    name = cells["Instance Type"]
    raw, memory = GPU_FAMILIES[name.split(".")[0]]
    count = _number(cells["GPU"])
    if not count:
        return None
    return Offer(
        provider="aws",
        region=region,
        instance_type=name,
        gpu=canonical_gpu(raw, memory_gib=memory, instance_type=name) or raw,
        gpu_count=count,
        gpu_memory_gib=memory,
        vcpus=_number(cells["vCPU"]),
        ram_gib=_number(cells["Memory"]),
        price_hour=price,
        spot_hour=None,
        source=LABEL,
        fetched_at=fetched_at,
    )


def _number(text: str) -> float | None:
    """The leading number of ``"16 GiB"``, ``"0.5260000000"`` or ``"8"``; None if none."""
    match = _NUMBER.match(text.replace(",", ""))
    return float(match.group(1)) if match else None
