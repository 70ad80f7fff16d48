"""Recompute every snapshot offer's prices from the raw catalog rows, independently.

    python bench/price_recompute.py [--from tests/fixtures/pricing/full] [--snapshot data/prices]

Independent of ``pricing/``: only the csv module and the rules as ``data/prices/SOURCES.md``
states them, written again here. Per cloud, instance type and region: on-demand = the lowest
zone price, spot = the lowest spot price of a regular zone (AWS Local Zones only where no
regular zone has one), a price of 0 or empty is none, a spot price equal to its row's price
(within 1e-5 relative: AWS writes spot prices to 4 decimals, 34.2912 against 34.29122) is no
spot market, except in Mithril's catalog, which writes its spot rate into both columns (there
the price is spot only: SOURCES.md rule 7a); Vast's "State, CC, continent" regions lose
their empty parts (", US, NA"). GCP: a machine's price per zone is its host row plus the
zone's GPU-only row (a2/a3/a4/g2 machines by their GPU and count; ``<n1 host>+<N>x<GPU>``
spelled out).

Every snapshot offer is then one of: **exact** (on-demand and spot equal to the recompute
after rounding to 6 decimals), **listed** (no on-demand price, the recomputed spot price, and
``rejected.csv`` lists the offer as ``on-demand cleared``), or **unexplained**. Exit 1
if any offer is unexplained. Numbers go to ``bench/RESULTS.md`` by hand.
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
Key = tuple[str, str, str]  # provider, region, instance type
_LOCAL_ZONE = re.compile(r"^[a-z]+\d-[a-z]+\d+-az\d+$")  # usw2-lax1-az1 (AWS Local Zone)
_GCP_MACHINE = re.compile(r"^(a2-highgpu|a2-megagpu|a2-ultragpu|a3-highgpu|a3-edgegpu|"
                          r"a3-megagpu|a3-ultragpu|a4-highgpu)-(\d+)g$")
_GCP_GPU = {"a2-highgpu": "A100", "a2-megagpu": "A100", "a2-ultragpu": "A100-80GB",
            "a3-highgpu": "H100", "a3-edgegpu": "H100", "a3-megagpu": "H100-MEGA",
            "a3-ultragpu": "H200", "a4-highgpu": "B200"}
_G2_GPUS = {4: 1, 8: 1, 12: 1, 16: 1, 32: 1, 24: 2, 48: 4, 96: 8}  # g2-standard-N: L4 count


def _price(text: str | None) -> float | None:
    try:
        value = float(text or "")
    except ValueError:
        return None
    return value if value > 0 else None


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _regional(zones: list[tuple[str, float | None, float | None]], cloud: str,
              ) -> tuple[float | None, float | None]:
    """(on-demand, spot) of one region from its zones' (zone, price, spot)."""
    prices = [p for _, p, _ in zones if p is not None]
    spots = [(z, s) for z, _, s in zones if s is not None]
    regular = [s for z, s in spots if not (cloud == "aws" and _LOCAL_ZONE.match(z))]
    spot_pool = regular or [s for _, s in spots]
    return (min(prices) if prices else None), (min(spot_pool) if spot_pool else None)


def _zone_row(row: dict[str, str], cloud: str) -> tuple[str, float | None, float | None]:
    price, spot = _price(row.get("Price")), _price(row.get("SpotPrice"))
    if spot is not None and price is not None and math.isclose(spot, price, rel_tol=1e-5):
        price, spot = (None, spot) if cloud == "mithril" else (price, None)
    return row.get("AvailabilityZone", "") or "", price, spot


def recompute_cloud(cloud: str, folder: Path) -> dict[Key, tuple[float | None, float | None]]:
    """Every (region, instance type) of one cloud's raw rows, priced."""
    rows = _rows(folder / "vms.csv")
    if cloud == "gcp":
        return _recompute_gcp(rows + _rows(folder / "host_vms.csv"))
    zones: dict[Key, list[tuple[str, float | None, float | None]]] = defaultdict(list)
    for row in rows:
        region = row.get("Region", "").strip()
        if cloud == "vast":
            region = ", ".join(p.strip() for p in region.split(",") if p.strip())
        zones[(cloud, region, row["InstanceType"])].append(_zone_row(row, cloud))
    return {k: _regional(v, cloud) for k, v in zones.items()}


def _recompute_gcp(rows: list[dict[str, str]]) -> dict[Key, tuple[float | None, float | None]]:
    hosts: dict[tuple[str, str], tuple[float | None, float | None]] = {}
    gpus: dict[tuple[str, str, int], tuple[float | None, float | None]] = {}
    region_of: dict[str, str] = {}
    for row in rows:
        zone = row["AvailabilityZone"]
        region_of[zone] = row["Region"]
        price, spot = _price(row["Price"]), _price(row["SpotPrice"])
        if row["InstanceType"]:
            hosts[(row["InstanceType"], zone)] = (price, spot)
        elif row["AcceleratorName"]:
            count = int(float(row["AcceleratorCount"]))
            gpus[(row["AcceleratorName"], zone, count)] = (price, spot)
    zones: dict[Key, list[tuple[str, float | None, float | None]]] = defaultdict(list)
    for (machine, zone), (h_price, h_spot) in hosts.items():
        for name, gpu, count in _gcp_parts(machine):
            part = gpus.get((gpu, zone, count))
            if part is None:
                continue
            price = None if h_price is None or part[0] is None else h_price + part[0]
            spot = None if h_spot is None or part[1] is None else h_spot + part[1]
            zones[("gcp", region_of[zone], name)].append((zone, price, spot))
    return {k: _regional(v, "gcp") for k, v in zones.items()}


def _gcp_parts(machine: str) -> list[tuple[str, str, int]]:
    """(offer name, GPU, count) a GCP host type makes: a2/a3/a4 and g2 by name, n1 hosts with
    every GPU kind and count (the snapshot names them ``host+NxGPU``)."""
    match = _GCP_MACHINE.match(machine)
    if match:
        return [(machine, _GCP_GPU[match.group(1)], int(match.group(2)))]
    if machine.startswith("g2-standard-"):
        size = int(machine.rsplit("-", 1)[1])
        return [(machine, "L4", _G2_GPUS[size])] if size in _G2_GPUS else []
    if machine.startswith("n1-"):
        return [(f"{machine}+{n}x{gpu}", gpu, n)
                for gpu in ("T4", "P4", "P100", "V100") for n in (1, 2, 4, 8)]
    return []


def _changed(snapshot: Path) -> set[Key]:
    """Offers whose on-demand price ``rejected.csv`` says a rule cleared."""
    out = set()
    for row in _rows(snapshot / "rejected.csv"):
        if row["action"] == "on-demand cleared":
            out.add((row["provider"], row["region"], row["instance_type"]))
    return out


def _same(a: float | None, b: float | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None
                                         and round(a, 6) == round(b, 6))


def main(argv: list[str] | None = None) -> int:
    """Print the counts and every unexplained offer; 1 if there is one."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="source", type=Path,
                        default=ROOT / "tests" / "fixtures" / "pricing" / "full")
    parser.add_argument("--snapshot", type=Path, default=ROOT / "data" / "prices")
    args = parser.parse_args(argv)
    raw: dict[Key, tuple[float | None, float | None]] = {}
    for folder in sorted(p for p in args.source.iterdir() if (p / "vms.csv").is_file()):
        raw.update(recompute_cloud(folder.name, folder))
    changed = _changed(args.snapshot)
    counts = {"exact": 0, "listed": 0, "unexplained": 0}
    bad = []
    offers = _rows(args.snapshot / "snapshot.csv")
    for offer in offers:
        key = (offer["provider"], offer["region"], offer["instance_type"])
        want = raw.get(key)
        got = (_price(offer["price_hour"]), _price(offer["spot_hour"]))
        if want is not None and _same(want[0], got[0]) and _same(want[1], got[1]):
            counts["exact"] += 1
        elif key in changed and want is not None and got[0] is None and _same(want[1], got[1]):
            counts["listed"] += 1
        else:
            counts["unexplained"] += 1
            bad.append(f"  {'/'.join(key)}: snapshot {got}, raw rows {want}")
    print(f"{len(offers)} snapshot offers recomputed from {len(raw)} raw (region, instance) "
          f"groups: {counts['exact']} exact, {counts['listed']} with the on-demand price a rule "
          f"cleared (listed in rejected.csv), {counts['unexplained']} unexplained")
    print("\n".join(bad[:50]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
