"""Parse a SkyPilot catalog ``vms.csv`` (schema v8) into normalised :class:`Offer` rows.

Columns are read by header name (their order differs per cloud). The per-cloud quirks
handled here are listed in ``data/prices/SOURCES.md``; in short:

* GCP stores host VMs and attached GPUs as separate rows: they are joined per zone
  into host + GPU rates (a2/a3/a4/g2 families, and T4/P4/P100/V100 on the n1 host SkyPilot
  picks: the zone's cheapest n1 type with enough vCPUs and memory for the GPU count). A
  GPU part priced far below the same machine's usual GPU part in other regions, measured
  against the region's own host price, is dropped (:func:`_gcp_low_gpu_parts`).
* One row per availability zone is collapsed to one offer per region: on-demand is the
  lowest zone price (zones agree in practice), spot the cheapest regular zone's (AWS
  Local Zones count only where no regular zone has a spot price).
* A zero price means "unknown"; a spot price equal to on-demand means "no spot".
* GPU counts and names come from small fix and inference tables, each fix with its
  source (Azure ND H100 v5 says 12 GPUs but has 8; NVv4 sizes are 1/8 to 1/2 of an MI25;
  Spheron's ``n3-H100x8-NVLink`` is the 80 GB H100 PCIe, not the 94 GB NVL); every row
  corrected is listed. Per-GPU memory is derived from ``GpuInfo`` per cloud.
* A catalog whose only price is a spot rate written into both columns (Mithril) keeps it
  as spot; its on-demand is cleared and listed.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from gacost.base.errors import PricingError
from gacost.base.gpu_names import canonical_gpu
from gacost.base.records import Offer
from gacost.pricing.quality import (
    CORRECTED,
    DROPPED,
    ON_DEMAND_CLEARED,
    Rejection,
    regional_medians,
)

REQUIRED_COLUMNS = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region")

# Drop and adjustment reasons, as they appear in the reports.
NO_ACCELERATOR = "no accelerator (CPU or host-only row)"
NOT_A_GPU = "accelerator is not a GPU"
COUNT_UNKNOWN = "accelerator count unknown"
NO_PRICE = "no on-demand or spot price"
NO_REGION = "no region"
# Seeweb's catalog writes an empty region for a plan the Seeweb API lists in no region
# (skypilot-org/skypilot sky/catalog/data_fetchers/fetch_seeweb.py, create_catalog), and
# SkyPilot's own listing drops such rows as unavailable (sky/catalog/seeweb_catalog.py,
# list_accelerators); read 2026-12-03.
NO_REGION_REASONS: dict[str, str] = {
    "seeweb": "no region: Seeweb's API listed no region where the plan is available",
}
GCP_GPU_UNMATCHED = "gcp GPU price with no host row in its zone"
GCP_HOST_UNMATCHED = "gcp GPU host with no GPU price in its zone"
GCP_HOST_UNPRICED = "gcp GPU host priced 0 (unknown) in the catalog"
GCP_GPU_PART_LOW = (
    "gcp GPU part below 3/4 of the same machine's usual GPU part, "
    "relative to the region's host price"
)
GCP_OD_BELOW_SPOT = (
    "gcp GPU on-demand below its own spot price: not a list price (on-demand cleared)"
)
COUNT_FIXED = "gpu count corrected (the catalog's count is wrong or a fraction is shown as 1)"
GPU_NAME_FIXED = "gpu variant corrected (the catalog's name contradicts its GPU memory)"
SPOT_AS_ON_DEMAND = (
    "on-demand equal to spot in a catalog that writes its spot rate into both columns "
    "(on-demand cleared)"
)
NAME_INFERRED = "accelerator inferred from instance name"
SPOT_IS_ON_DEMAND = "spot equal to on-demand cleared"
ZERO_PRICE = "zero price treated as unknown"
ZONES_MERGED = "zone rows merged into their region"
ZONE_PRICES_DIFFER = "on-demand differs across zones (lowest kept)"
LOCAL_ZONE_SPOT = "local-zone spot ignored (a regular zone has spot)"
HOST_SPECS_CLEARED = "normalised vCPU/RAM cleared"
GPU_INFO_UNREADABLE = "GpuInfo unreadable (GPU memory unknown)"

# Wrong GPU counts in the catalog: (provider, instance type) -> real count.
_COUNT_FIXES: dict[tuple[str, str], float] = {
    ("azure", "Standard_ND96isr_H100_v5"): 8.0,  # the catalog says 12
    # NVv4 sizes are partitions of one Radeon Instinct MI25 (the catalog says 1 GPU each):
    # NV4as_v4 1/8 (2 GiB), NV8as_v4 1/4 (4 GiB), NV16as_v4 1/2 (8 GiB), NV32as_v4 1
    # (16 GiB). Source: Microsoft Learn, NVv4-series sizes, and Azure Stack Hub GPU VMs
    # ("partitioned GPU VM size": Standard_NV4as_v4 1/8 GPU, 2 GiB); read 2026-12-03.
    ("azure", "Standard_NV4as_v4"): 0.125,
    ("azure", "Standard_NV8as_v4"): 0.25,
    ("azure", "Standard_NV16as_v4"): 0.5,
}

# GPU names the catalog gets wrong: (provider, instance-type pattern) -> canonical name.
_GPU_NAME_FIXES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    # Spheron resells Hyperstack's n3-H100x8-NVLink as "H100_NVL" with 80 GB per GPU;
    # Hyperstack's own catalog names that flavour "H100-80G-PCIe-NVLink" (80 GB PCIe
    # cards with NVLink bridges; skypilot-catalog hyperstack/vms.csv @ fdc9d908), and the
    # H100 NVL has 94 GB (NVIDIA H100 datasheet). Read 2026-12-03.
    ("spheron", re.compile(r"^n3-H100x8-NVLink(-bigroot)?__"), "H100-PCIe"),
)

# Catalogs whose one price is a spot rate written as both Price and SpotPrice: Mithril's
# fetcher writes the spot auction's current minimum price (/v2/pricing/current) into both
# columns (skypilot-org/skypilot sky/catalog/data_fetchers/fetch_mithril.py,
# create_catalog; read 2026-12-03). Where they are equal the price is kept as spot only.
SPOT_PRICED_CATALOGS = frozenset({"mithril"})

# Blank AcceleratorName: instance-name pattern -> (accelerator, count or None if unknown).
_INFERRED_ACCELERATORS: tuple[tuple[re.Pattern[str], str, float | None], ...] = (
    (re.compile(r"^Standard_NCC\d+ads_H100_v5$"), "H100", 1.0),  # confidential NC H100 v5
    (re.compile(r"^Standard_NC\d+ads_A10_v4$"), "A10", None),  # GPU share per size unsure
)

# No GPU has more memory than this (B300: 288 GB = 268 GiB); above it a field is a total.
MAX_GPU_GIB = 300.0
# Clouds whose vCPU/RAM columns are placeholders, not a real host.
_PLACEHOLDER_HOST_SPECS = frozenset({"vast"})
# Clouds whose TotalGpuMemoryInMiB is per GPU (not multiplied by the count).
_TOTAL_MEMORY_PER_GPU = frozenset({"lambda"})
# Clouds whose per-GPU MemoryInfo holds the whole instance's GPU memory
# (primeintellect: 2xV100_16GB says 32768 MiB, 8xA100_80GB says 655360 MiB).
_GPU_MEMORY_IS_INSTANCE_TOTAL = frozenset({"primeintellect"})


@dataclass(frozen=True)
class _GcpHost:
    """A GCP machine family with built-in GPUs; group 1 of ``pattern`` gives the count."""

    pattern: re.Pattern[str]
    accelerator: str
    counts: dict[str, int] | None = None  # group 1 -> GPU count, where it is not the count


_GCP_HOSTS: tuple[_GcpHost, ...] = (
    _GcpHost(re.compile(r"^a2-highgpu-(\d+)g$"), "A100"),
    _GcpHost(re.compile(r"^a2-megagpu-(\d+)g$"), "A100"),
    _GcpHost(re.compile(r"^a2-ultragpu-(\d+)g$"), "A100-80GB"),
    _GcpHost(re.compile(r"^a3-highgpu-(\d+)g$"), "H100"),
    _GcpHost(re.compile(r"^a3-edgegpu-(\d+)g$"), "H100"),
    _GcpHost(re.compile(r"^a3-megagpu-(\d+)g$"), "H100-MEGA"),
    _GcpHost(re.compile(r"^a3-ultragpu-(\d+)g$"), "H200"),
    _GcpHost(re.compile(r"^a4-highgpu-(\d+)g$"), "B200"),
    _GcpHost(
        re.compile(r"^g2-standard-(\d+)$"),
        "L4",
        {"4": 1, "8": 1, "12": 1, "16": 1, "32": 1, "24": 2, "48": 4, "96": 8},
    ),
)
# GPUs attached to general n1 VMs, and the host SkyPilot gives them (skypilot-org/skypilot
# sky/catalog/gcp_catalog.py @ 005261080a6b, read 2026-12-03: _NUM_ACC_TO_NUM_CPU, and
# _get_host_instance_type in list_accelerators): per zone, the cheapest priced
# n1-standard/-highmem/-highcpu type with at least N vCPUs and 4 GiB of memory per vCPU,
# N per GPU kind and count below (P4 takes SkyPilot's DEFAULT row). With the catalog's
# prices that is n1-highmem-4/-8/n1-standard-64 for 1/2/4 T4 and n1-highmem-8/16/32/64
# for 1/2/4/8 P4, P100 or V100.
_GCP_N1_GPUS = frozenset({"T4", "V100", "P100", "P4"})
_GCP_N1_DEFAULT_VCPUS: dict[int, int] = {1: 8, 2: 16, 4: 32, 8: 64, 16: 128}
_GCP_N1_VCPUS: dict[str, dict[int, int]] = {
    "T4": {1: 4, 2: 8, 4: 48},  # no 8x T4 on GCP
    "V100": _GCP_N1_DEFAULT_VCPUS,
    "P100": _GCP_N1_DEFAULT_VCPUS,
}
_GCP_N1_FAMILIES = ("n1-standard-", "n1-highmem-", "n1-highcpu-")
_GCP_N1_GIB_PER_VCPU = 4.0
# A GPU part below this share of its machine's usual part (per unit of the region's host
# price) is a wrong row. In the 2026-12 catalog real regions sit within 0.94-1.24 of the
# usual part (a2-highgpu: 3.72-3.97 x the host, a3-highgpu: 8.29-10.26 x) and the wrong
# rows at 0.39-0.50 (A100 at $1.61-1.71/GPU, a3-megagpu's 35.39 part, H100 at $4.20).
GCP_PART_MIN_SHARE = 0.75

_AWS_REGULAR_ZONE = re.compile(r"^[a-z]+\d+-az\d+$")


@dataclass(frozen=True)
class ParseResult:
    """Offers of one catalog plus what was dropped or adjusted, counted per reason."""

    offers: tuple[Offer, ...]
    rows: int
    dropped: dict[str, int] = field(default_factory=dict)
    adjusted: dict[str, int] = field(default_factory=dict)
    rejections: tuple[Rejection, ...] = ()


@dataclass(frozen=True)
class _Row:
    """One catalog row with its cells parsed."""

    line: int
    instance_type: str
    accelerator: str
    count: float | None
    vcpus: float | None
    ram_gib: float | None
    gpu_memory_gib: float | None
    price: float | None
    spot: float | None
    region: str
    zone: str
    price_is_spot: bool = False  # the catalog's on-demand was its spot rate (cleared)


@dataclass
class _Report:
    dropped: Counter[str] = field(default_factory=Counter)
    adjusted: Counter[str] = field(default_factory=Counter)
    rejections: list[Rejection] = field(default_factory=list)


def parse_catalog(text: str, provider: str, *, source: str, fetched_at: str) -> ParseResult:
    """Parse one cloud's SkyPilot v8 ``vms.csv`` text into per-region offers.

    Raises :class:`PricingError` for an empty or malformed file, a missing column or an
    unparsable cell; rows that are merely unusable are dropped and counted instead.
    """
    provider = provider.strip().lower()
    report = _Report()
    rows = _read_rows(text, provider, source, report)
    if provider == "gcp":
        zonal = _gcp_offers(rows, provider, source, fetched_at, report)
    else:
        zonal = _plain_offers(rows, provider, source, fetched_at, report)
    offers = _collapse_zones(zonal, provider, report)
    offers.sort(key=lambda o: (o.instance_type, o.region))
    return ParseResult(
        tuple(offers),
        len(rows),
        dict(report.dropped),
        dict(report.adjusted),
        tuple(report.rejections),
    )


# --- reading -------------------------------------------------------------------------


def _read_rows(text: str, provider: str, source: str, report: _Report) -> list[_Row]:
    if not text.strip():
        raise PricingError(f"{source}: the catalog is empty; fetch or copy it again")
    reader = csv.reader(io.StringIO(text), strict=True)
    try:
        header = [h.strip() for h in next(reader)]
        _check_header(header, source)
        rows = []
        for record in reader:
            if not record:
                continue
            if len(record) != len(header):
                raise PricingError(
                    f"{source} line {reader.line_num}: {len(record)} fields but the header "
                    f"has {len(header)} (truncated or malformed file?); fetch it again"
                )
            cells = dict(zip(header, record, strict=True))
            rows.append(_parse_row(cells, reader.line_num, provider, source, report))
    except csv.Error as exc:
        raise PricingError(
            f"{source} line {reader.line_num}: malformed CSV ({exc}); fetch it again"
        ) from exc
    return rows


def _check_header(header: list[str], source: str) -> None:
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise PricingError(
            f"{source}: not a SkyPilot v8 vms.csv, missing column(s) {', '.join(missing)} "
            f"(header: {','.join(header)[:200]})"
        )


def _parse_row(
    cells: dict[str, str], line: int, provider: str, source: str, report: _Report
) -> _Row:
    def num(column: str) -> float | None:
        return _number(cells.get(column, ""), column, line, source)

    count = num("AcceleratorCount")
    info = _gpu_info(cells.get("GpuInfo", ""), line, source)
    if info is None and cells.get("GpuInfo", "").strip():
        report.adjusted[GPU_INFO_UNREADABLE] += 1
    raw_price, raw_spot = num("Price"), num("SpotPrice")
    price_is_spot = (
        provider in SPOT_PRICED_CATALOGS
        and bool(raw_price)
        and raw_price == raw_spot
    )
    # a spot-priced catalog's equal on-demand is its spot rate: kept as spot only
    price, spot = _clean_prices(None if price_is_spot else raw_price, raw_spot, report)
    placeholder = provider in _PLACEHOLDER_HOST_SPECS
    if placeholder:
        report.adjusted[HOST_SPECS_CLEARED] += 1
    return _Row(
        line=line,
        instance_type=cells["InstanceType"].strip(),
        accelerator=cells["AcceleratorName"].strip(),
        count=count,
        vcpus=None if placeholder else num("vCPUs"),
        ram_gib=None if placeholder else num("MemoryGiB"),
        gpu_memory_gib=_gpu_memory_gib(info, count, provider),
        price=price,
        spot=spot,
        region=_clean_region(cells["Region"]),
        zone=cells.get("AvailabilityZone", "").strip(),
        price_is_spot=price_is_spot,
    )


def _number(value: str, column: str, line: int, source: str) -> float | None:
    text = value.strip()
    if not text or text.lower() == "nan":
        return None
    try:
        number = float(text)
    except ValueError:
        raise PricingError(
            f"{source} line {line}, column {column}: {value!r} is not a number"
        ) from None
    return None if math.isnan(number) else number


def _gpu_info(value: str, line: int, source: str) -> object:
    """``GpuInfo`` as a dict (a Python literal, or JSON as some clouds write it), a bare
    name, or None when empty or unreadable (the memory is then unknown)."""
    text = value.strip()
    if not text.startswith("{"):
        return text or None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        pass
    try:
        return json.loads(text)  # JSON (double quotes, null) as primeintellect/spheron write
    except (ValueError, RecursionError):
        pass
    try:  # a Python literal with JSON's null (hyperstack: 'Manufacturer': null)
        return ast.literal_eval(re.sub(r"\bnull\b", "None", text))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def _gpu_memory_gib(info: object, count: float | None, provider: str) -> float | None:
    """Memory of one whole GPU in GiB (RunPod writes GB into the MiB fields)."""
    if not isinstance(info, dict):
        return None
    gpus = info.get("Gpus")
    first = gpus[0] if isinstance(gpus, list) and gpus and isinstance(gpus[0], dict) else {}
    memory_info = first.get("MemoryInfo")
    per_gpu = memory_info.get("SizeInMiB") if isinstance(memory_info, dict) else None
    total = info.get("TotalGpuMemoryInMiB")
    mib: object = per_gpu
    if provider in _GPU_MEMORY_IS_INSTANCE_TOTAL and isinstance(per_gpu, int | float) and count:
        mib = per_gpu / count
    elif provider in _TOTAL_MEMORY_PER_GPU:
        mib = per_gpu if per_gpu is not None else total
    elif isinstance(total, int | float) and count:
        mib = total / count  # also right for fractional GPUs and Vast's totals
    if not isinstance(mib, int | float) or mib <= 0:
        return None
    gib = float(mib) if mib < 512 else mib / 1024
    if gib > MAX_GPU_GIB and count and count > 1:
        gib /= count  # a per-GPU field holding the whole instance's memory (primeintellect)
    if gib > MAX_GPU_GIB:
        return None
    return round(gib, 2)


def _clean_prices(
    price: float | None, spot: float | None, report: _Report
) -> tuple[float | None, float | None]:
    if price == 0 or spot == 0:
        report.adjusted[ZERO_PRICE] += 1
    price = None if not price else round(price, 6)  # 0.36979999999999996 -> 0.3698
    spot = None if not spot else round(spot, 6)
    if price is not None and spot is not None and math.isclose(spot, price, rel_tol=1e-5):
        report.adjusted[SPOT_IS_ON_DEMAND] += 1
        spot = None
    return price, spot


def _clean_region(value: str) -> str:
    """Trim a region; Vast's "State, CC, continent" loses empty parts (", US, NA")."""
    if "," not in value:
        return value.strip()
    return ", ".join(part.strip() for part in value.split(",") if part.strip())


# --- rows to zonal offers ------------------------------------------------------------


@dataclass(frozen=True)
class _Zonal:
    zone: str
    offer: Offer


def _plain_offers(
    rows: Iterable[_Row], provider: str, source: str, fetched_at: str, report: _Report
) -> list[_Zonal]:
    zonal = []
    for row in rows:
        offer = _row_offer(row, provider, source, fetched_at, report)
        if offer is not None:
            zonal.append(_Zonal(row.zone, offer))
    return zonal


def _row_offer(
    row: _Row, provider: str, source: str, fetched_at: str, report: _Report
) -> Offer | None:
    accelerator, count = _accelerator(row, provider, report)
    if not accelerator:
        report.dropped[NO_ACCELERATOR] += 1
        return None
    if count is None or count <= 0:
        report.dropped[COUNT_UNKNOWN] += 1
        return None
    offer = _make_offer(row, row, accelerator, count, provider, source, fetched_at, report)
    if offer is not None and row.count and count != row.count and row.accelerator:
        report.rejections.append(
            Rejection(replace(offer, gpu_count=row.count), COUNT_FIXED, CORRECTED)
        )
    if offer is not None and row.price_is_spot:
        report.adjusted[SPOT_AS_ON_DEMAND] += 1
        as_read = replace(offer, price_hour=offer.spot_hour)
        report.rejections.append(Rejection(as_read, SPOT_AS_ON_DEMAND, ON_DEMAND_CLEARED))
    return offer


def _accelerator(row: _Row, provider: str, report: _Report) -> tuple[str, float | None]:
    name, count = row.accelerator, row.count
    if not name:
        for pattern, inferred, inferred_count in _INFERRED_ACCELERATORS:
            if pattern.match(row.instance_type):
                name, count = inferred, inferred_count
                if count is not None:
                    report.adjusted[NAME_INFERRED] += 1
                break
    fixed = _COUNT_FIXES.get((provider, row.instance_type))
    if name and fixed is not None and fixed != count:
        report.adjusted[COUNT_FIXED] += 1
        count = fixed
    return name, count


def _make_offer(
    host: _Row,
    gpu_row: _Row,
    accelerator: str,
    count: float,
    provider: str,
    source: str,
    fetched_at: str,
    report: _Report,
    instance_type: str | None = None,
) -> Offer | None:
    """Build one zonal offer from a host row and the row carrying the GPU and its price."""
    instance = instance_type or host.instance_type
    gpu = canonical_gpu(accelerator, memory_gib=gpu_row.gpu_memory_gib, instance_type=instance)
    if gpu is None:
        report.dropped[NOT_A_GPU] += 1
        return None
    fixed_gpu = _gpu_name_fix(provider, instance)
    named = gpu
    if fixed_gpu is not None and fixed_gpu != gpu:
        report.adjusted[GPU_NAME_FIXED] += 1
        gpu = fixed_gpu
    price, spot = host.price, host.spot
    if not host.region:
        reason = NO_REGION_REASONS.get(provider, NO_REGION)
        report.dropped[reason] += 1
        report.rejections.append(Rejection(Offer(
            provider, "", instance, gpu, count, gpu_row.gpu_memory_gib, host.vcpus,
            host.ram_gib, price, spot, source, fetched_at,
        ), reason, DROPPED))  # fmt: skip
        return None
    suspect = host is not gpu_row and _on_demand_below_spot(gpu_row)
    if host is not gpu_row:
        price, spot = _add(host.price, gpu_row.price), _add(host.spot, gpu_row.spot)
        price, spot = _clean_prices(price, spot, report)
    offer = Offer(
        provider=provider,
        region=host.region,
        instance_type=instance,
        gpu=gpu,
        gpu_count=count,
        gpu_memory_gib=gpu_row.gpu_memory_gib,
        vcpus=host.vcpus,
        ram_gib=host.ram_gib,
        price_hour=price,
        spot_hour=spot,
        source=source,
        fetched_at=fetched_at,
    )
    if gpu != named:
        report.rejections.append(Rejection(replace(offer, gpu=named), GPU_NAME_FIXED, CORRECTED))
    if suspect and offer.price_hour is not None:
        report.adjusted[GCP_OD_BELOW_SPOT] += 1
        report.rejections.append(Rejection(offer, GCP_OD_BELOW_SPOT, ON_DEMAND_CLEARED))
        offer = replace(offer, price_hour=None)
    return offer


def _gpu_name_fix(provider: str, instance_type: str) -> str | None:
    for fix_provider, pattern, gpu in _GPU_NAME_FIXES:
        if provider == fix_provider and pattern.match(instance_type):
            return gpu
    return None


def _on_demand_below_spot(gpu_row: _Row) -> bool:
    """A GCP GPU-only row whose on-demand is below its spot: spot is discounted from the
    list price, so such an on-demand value is not the list price (A100-80GB a2-ultragpu
    rows at about $1.85/GPU-h in us-central1 against $1.96 spot; the list is about $3.9)."""
    return gpu_row.spot is not None and gpu_row.price is not None and gpu_row.spot > gpu_row.price


def _add(a: float | None, b: float | None) -> float | None:
    """Host price + GPU price, or None when either is unknown."""
    if a is None or b is None:
        return None
    return round(a + b, 6)


# --- GCP: host + GPU -----------------------------------------------------------------


_GpuKey = tuple[str, str, int]  # (zone, accelerator, count) of a GCP GPU-only row


@dataclass(frozen=True)
class _GcpPair:
    """A GCP GPU-only row joined with a host row of its zone."""

    host: _Row
    key: _GpuKey
    name: str | None  # the offer's instance name for n1 combinations (host+GPUs)


def _gcp_offers(
    rows: list[_Row], provider: str, source: str, fetched_at: str, report: _Report
) -> list[_Zonal]:
    hosts, gpus, complete = _gcp_split(rows, report)
    pairs, wanted = _gcp_pairs(hosts, gpus, report)
    low = _gcp_low_gpu_parts(pairs, gpus)
    zonal = _plain_offers(complete, provider, source, fetched_at, report)
    used: set[_GpuKey] = set()
    for pair in pairs:
        host, key = pair.host, pair.key
        used.add(key)
        if host.price is None and host.spot is None:
            report.dropped[GCP_HOST_UNPRICED] += 1
            note = f"GPU part only, host {host.instance_type} priced 0 in {key[0]}"
            part = _gpu_row_offer(key, gpus[key], provider, source, fetched_at, note)
            report.rejections.append(Rejection(part, GCP_HOST_UNPRICED, DROPPED))
            continue
        offer = _make_offer(
            host, gpus[key], key[1], float(key[2]), provider, source, fetched_at, report,
            pair.name,
        )  # fmt: skip
        if offer is not None and pair in low:
            report.dropped[GCP_GPU_PART_LOW] += 1
            report.rejections.append(Rejection(offer, GCP_GPU_PART_LOW, DROPPED))
        elif offer is not None:
            zonal.append(_Zonal(host.zone, offer))
    for key, row in gpus.items():
        if key in used:
            continue
        reason = f"{GCP_GPU_UNMATCHED} ({wanted[key]} missing)"
        report.dropped[reason] += 1
        note = f"GPU part only, no host row in {key[0]}"
        offer = _gpu_row_offer(key, row, provider, source, fetched_at, note)
        report.rejections.append(Rejection(offer, reason, DROPPED))
    return zonal


def _gpu_row_offer(
    key: _GpuKey, row: _Row, provider: str, source: str, fetched_at: str, note: str
) -> Offer:
    """A GCP GPU-only row as an offer of its GPU part alone, to list it as dropped."""
    _, accelerator, count = key
    gpu = canonical_gpu(accelerator, memory_gib=row.gpu_memory_gib) or accelerator
    return Offer(
        provider, row.region, f"{count}x{accelerator} ({note})", gpu, float(count),
        row.gpu_memory_gib, None, None, row.price, row.spot, source, fetched_at,
    )  # fmt: skip


def _gcp_split(
    rows: list[_Row], report: _Report
) -> tuple[dict[tuple[str, str], _Row], dict[_GpuKey, _Row], list[_Row]]:
    """Host-only rows by (zone, type), GPU-only rows by key, and complete rows."""
    hosts: dict[tuple[str, str], _Row] = {}
    gpus: dict[_GpuKey, _Row] = {}
    complete: list[_Row] = []
    for row in rows:
        zone = row.zone or row.region
        if row.instance_type and row.accelerator:
            complete.append(row)
        elif row.instance_type:
            hosts[(zone, row.instance_type)] = row
        elif not row.accelerator:
            report.dropped[NO_ACCELERATOR] += 1
        elif canonical_gpu(row.accelerator) is None:
            report.dropped[NOT_A_GPU] += 1  # TPU rows
        elif not row.count or row.count != int(row.count):
            report.dropped[COUNT_UNKNOWN] += 1
        else:
            gpus[(zone, row.accelerator, int(row.count))] = row
    return hosts, gpus, complete


def _gcp_pairs(
    hosts: dict[tuple[str, str], _Row], gpus: dict[_GpuKey, _Row], report: _Report
) -> tuple[list[_GcpPair], dict[_GpuKey, str]]:
    """Every host + GPU match in a zone, and for each GPU row the host type it wants
    (named in the reason when the zone has none)."""
    pairs: list[_GcpPair] = []
    used_hosts: set[tuple[str, str]] = set()
    builtin: dict[tuple[str, int], set[str]] = defaultdict(set)
    for (zone, name), host in hosts.items():
        attached = _gcp_builtin_gpu(name)
        if attached is None:
            continue
        builtin[attached].add(name)
        used_hosts.add((zone, name))
        key = (zone, attached[0], attached[1])
        if key in gpus:
            pairs.append(_GcpPair(host, key, None))
        else:
            report.dropped[GCP_HOST_UNMATCHED] += 1
    n1_by_zone: dict[str, list[_Row]] = defaultdict(list)
    for (zone, name), host in hosts.items():
        if name.startswith(_GCP_N1_FAMILIES):
            n1_by_zone[zone].append(host)
    n1_picked: dict[tuple[str, int], set[str]] = defaultdict(set)
    for key in gpus:
        zone, accelerator, count = key
        if accelerator not in _GCP_N1_GPUS:
            continue
        n1 = _gcp_n1_host(n1_by_zone[zone], accelerator, count)
        if n1 is not None:
            used_hosts.add((zone, n1.instance_type))
            n1_picked[(accelerator, count)].add(n1.instance_type)
            pairs.append(_GcpPair(n1, key, f"{n1.instance_type}+{count}x{accelerator}"))
    _add_count(report.dropped, NO_ACCELERATOR, len(hosts) - len(used_hosts))
    wanted = {
        key: _gcp_wanted_host(key[1], key[2], builtin, n1_picked)
        for key in gpus
    }  # fmt: skip
    return pairs, wanted


def _gcp_n1_vcpus(accelerator: str, count: int) -> int | None:
    return _GCP_N1_VCPUS.get(accelerator, _GCP_N1_DEFAULT_VCPUS).get(count)


def _gcp_n1_host(candidates: list[_Row], accelerator: str, count: int) -> _Row | None:
    """SkyPilot's host for ``count`` n1 GPUs in one zone: the cheapest priced n1 type with
    enough vCPUs and memory (the first in catalog order on a tie), or None."""
    vcpus = _gcp_n1_vcpus(accelerator, count)
    if vcpus is None:
        return None
    fits = [
        h
        for h in candidates
        if h.price is not None
        and (h.vcpus or 0) >= vcpus
        and (h.ram_gib or 0) >= _GCP_N1_GIB_PER_VCPU * vcpus
    ]
    return min(fits, key=lambda h: h.price or 0.0, default=None)


def _gcp_wanted_host(
    accelerator: str,
    count: int,
    builtin: dict[tuple[str, int], set[str]],
    n1_picked: dict[tuple[str, int], set[str]],
) -> str:
    """The host type(s) a GPU row needs: those that carry it elsewhere in the catalog."""
    names = builtin.get((accelerator, count)) or n1_picked.get((accelerator, count))
    if names:
        return " or ".join(sorted(names))
    if accelerator in _GCP_N1_GPUS:
        vcpus = _gcp_n1_vcpus(accelerator, count)
        if vcpus is None:
            return f"an n1 host size for {count}x {accelerator} (SkyPilot has none)"
        return f"an n1 host with >= {vcpus} vCPUs and >= {vcpus * _GCP_N1_GIB_PER_VCPU:g} GiB"
    return f"a host type carrying {count}x {accelerator}"


def _gcp_low_gpu_parts(pairs: list[_GcpPair], gpus: dict[_GpuKey, _Row]) -> set[_GcpPair]:
    """Pairs whose GPU part is below :data:`GCP_PART_MIN_SHARE` of its usual part.

    Like is compared with like: for a machine with built-in GPUs (a2, a3, g2) the GPU part
    is measured in units of the same zone's host price, since GCP prices both parts of a
    machine from one regional rate, and compared with the median of that ratio over the
    regions selling the machine; for GPUs on n1 hosts (sold separately) the per-GPU part
    is compared with the same GPU's median over regions. A region's part is one price per
    GPU, so found low on one machine it is dropped on every machine of that region (the
    a2-megagpu-16g sells in three regions, two of them with the low A100 part). Rows whose
    on-demand is below their own spot are cleared instead and left out of the medians.
    """
    measured: dict[_GcpPair, tuple[str, float]] = {}
    for pair in pairs:
        row = gpus[pair.key]
        if row.price is None or _on_demand_below_spot(row):
            continue
        if pair.name is None and pair.host.price:
            measured[pair] = (pair.host.instance_type, row.price / pair.host.price)
        elif pair.name is not None:
            measured[pair] = (pair.key[1], row.price / pair.key[2])
    usual = regional_medians((k, p.host.region, v) for p, (k, v) in measured.items())
    low = {
        (pair.key[1], pair.host.region)
        for pair, (key, value) in measured.items()
        if key in usual and value < GCP_PART_MIN_SHARE * usual[key]
    }
    # one GPU part per region: low on one machine, it is low on every machine there
    return {p for p in measured if (p.key[1], p.host.region) in low}


def _add_count(counter: Counter[str], reason: str, n: int) -> None:
    if n > 0:
        counter[reason] += n


def _gcp_builtin_gpu(instance_type: str) -> tuple[str, int] | None:
    for host in _GCP_HOSTS:
        match = host.pattern.match(instance_type)
        if match:
            group = match.group(1)
            count = host.counts.get(group) if host.counts is not None else int(group)
            return (host.accelerator, count) if count else None
    return None


# --- zones to regions ----------------------------------------------------------------


def _collapse_zones(zonal: list[_Zonal], provider: str, report: _Report) -> list[Offer]:
    groups: dict[tuple[str, str, str, float], list[_Zonal]] = defaultdict(list)
    for item in zonal:
        o = item.offer
        groups[(o.instance_type, o.region, o.gpu, o.gpu_count)].append(item)
    offers = []
    for items in groups.values():
        _add_count(report.adjusted, ZONES_MERGED, len(items) - 1)
        merged = _merge_zones(items, provider, report)
        if merged.price_hour is None and merged.spot_hour is None:
            report.dropped[NO_PRICE] += len(items)
            report.rejections.append(Rejection(merged, NO_PRICE, DROPPED))
            continue
        offers.append(merged)
    return offers


def _merge_zones(items: list[_Zonal], provider: str, report: _Report) -> Offer:
    prices = {i.offer.price_hour for i in items if i.offer.price_hour is not None}
    if len(prices) > 1:
        report.adjusted[ZONE_PRICES_DIFFER] += 1
    regular = [i.offer.spot_hour for i in items if not _is_local_zone(provider, i.zone)]
    local = [i.offer.spot_hour for i in items if _is_local_zone(provider, i.zone)]
    regular_spots = [s for s in regular if s is not None]
    local_spots = [s for s in local if s is not None]
    spot = min(regular_spots or local_spots, default=None)
    if regular_spots and local_spots and min(local_spots) < min(regular_spots):
        report.adjusted[LOCAL_ZONE_SPOT] += 1
    return replace(items[0].offer, price_hour=min(prices, default=None), spot_hour=spot)


def _is_local_zone(provider: str, zone: str) -> bool:
    """AWS Local/Wavelength Zones (``usw2-lax1-az1``): opt-in, often odd spot prices."""
    return provider == "aws" and bool(zone) and not _AWS_REGULAR_ZONE.match(zone)
