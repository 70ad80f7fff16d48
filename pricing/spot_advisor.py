"""AWS Spot Instance Advisor: interruption risk per instance type and region (no httpx here).

The advisor publishes ``spot-advisor-data.json``: ``ranges`` (the interruption buckets,
``{"index": 0, "label": "<5%", ...}``) and ``spot_advisor[region]["Linux"][type] =
{"s": savings %, "r": bucket index}``. The bucket is the share of spot instances of that
type and region AWS interrupted over the trailing month. gacost turns a bucket into
interruptions per instance-hour at the bucket's middle (2.5, 7.5, 12.5, 17.5 %, and 25 %
for ">20%"), assuming interruptions arrive as a Poisson process over a 730-hour month:
``rate = -ln(1 - share) / 730``. :func:`apply_rates` puts the rate on AWS offers that have a
spot price (``Offer.interruption_per_hour``); the planner charges the expected restarts.

The parsed rates are cached as ``<cache>/prices/aws-spot-advisor.json``; the raw file
(about 1.2 MB) is not kept.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from gacost.base.atomic import atomic_open
from gacost.base.errors import DataError, PricingError
from gacost.base.records import Offer

NAME = "aws-spot-advisor"
URL = "https://spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json"
URL_ENV = "GACOST_AWS_SPOT_ADVISOR_URL"
HOURS_PER_MONTH = 730.0
TOP_BUCKET_SHARE = 0.25  # the ">20%" bucket has no upper bound; its middle is taken as 25 %
_LABEL = re.compile(r"^\s*(?:<\s*(\d+)|(\d+)\s*-\s*(\d+)|>\s*(\d+))\s*%\s*$")


def interruptions_per_hour(monthly_share: float) -> float:
    """Interruptions per instance-hour from the share interrupted over a 730-hour month."""
    if not 0.0 <= monthly_share < 1.0:
        raise ValueError(f"monthly interruption share must be in [0, 1), got {monthly_share}")
    return -math.log1p(-monthly_share) / HOURS_PER_MONTH


def bucket_share(label: str) -> float:
    """The middle of a bucket label: ``"<5%"`` 0.025, ``"5-10%"`` 0.075, ``">20%"`` 0.25."""
    match = _LABEL.match(label)
    if not match:
        raise ValueError(f"not an interruption bucket: {label!r}")
    below, low, high, above = match.groups()
    if below is not None:
        return float(below) / 200
    if low is not None:
        return (float(low) + float(high)) / 200
    return max(TOP_BUCKET_SHARE, float(above) / 100)


@dataclass(frozen=True)
class SpotRisk:
    """The parsed advisor: interruptions per hour by (region, instance type)."""

    rates: dict[tuple[str, str], float]
    labels: dict[tuple[str, str], str]
    fetched_at: str


def parse_advisor(data: object, fetched_at: str) -> SpotRisk:
    """The Linux rates of every region; :class:`PricingError` when the shape is wrong."""
    if not isinstance(data, dict) or not isinstance(data.get("spot_advisor"), dict):
        raise PricingError("AWS spot advisor: expected an object with 'spot_advisor' and 'ranges'")
    ranges = data.get("ranges")
    if not isinstance(ranges, list) or not ranges:
        raise PricingError("AWS spot advisor: 'ranges' is missing or empty")
    by_index: dict[int, str] = {}
    for item in ranges:
        if not isinstance(item, dict) or not isinstance(item.get("index"), int):
            raise PricingError("AWS spot advisor: a 'ranges' entry has no integer 'index'")
        by_index[item["index"]] = str(item.get("label", ""))
    rate_of = {}
    for index, label in by_index.items():
        try:
            rate_of[index] = interruptions_per_hour(bucket_share(label))
        except ValueError as exc:
            raise PricingError(f"AWS spot advisor: {exc}") from None
    rates: dict[tuple[str, str], float] = {}
    labels: dict[tuple[str, str], str] = {}
    for region, systems in data["spot_advisor"].items():
        linux = systems.get("Linux") if isinstance(systems, dict) else None
        if not isinstance(linux, dict):
            continue
        for instance, cell in linux.items():
            bucket = cell.get("r") if isinstance(cell, dict) else None
            if isinstance(bucket, int) and bucket in rate_of:
                rates[(region, instance)] = rate_of[bucket]
                labels[(region, instance)] = by_index[bucket]
    if not rates:
        raise PricingError("AWS spot advisor: no Linux instance type has a known bucket")
    return SpotRisk(rates, labels, fetched_at)


def apply_rates(offers: Iterable[Offer], risk: SpotRisk | None) -> tuple[Offer, ...]:
    """AWS offers with a spot price get their interruption rate; others are unchanged."""
    if risk is None:
        return tuple(offers)
    out = []
    for offer in offers:
        rate = risk.rates.get((offer.region, offer.instance_type))
        if offer.provider == "aws" and offer.spot_hour is not None and rate is not None:
            offer = replace(offer, interruption_per_hour=rate)
        out.append(offer)
    return tuple(out)


# --- the cache file ------------------------------------------------------------------------


def write_risk(path: Path, risk: SpotRisk) -> None:
    """Store the parsed rates atomically."""
    rows = [
        {"region": r, "instance_type": t, "label": risk.labels[(r, t)], "per_hour": v}
        for (r, t), v in sorted(risk.rates.items())
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(path) as handle:
        handle.write(json.dumps({"fetched_at": risk.fetched_at, "rates": rows}) + "\n")


def read_risk(path: Path) -> SpotRisk | None:
    """The cached rates; None when absent; :class:`DataError` when unreadable."""
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        rows = data["rates"]
        rates = {(str(r["region"]), str(r["instance_type"])): float(r["per_hour"]) for r in rows}
        labels = {(str(r["region"]), str(r["instance_type"])): str(r["label"]) for r in rows}
        stamp = str(data["fetched_at"])
        datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DataError(
            f"{path}: unreadable spot advisor cache ({exc}); delete it or run "
            f"`gacost prices --refresh --source {NAME}`"
        ) from None
    return SpotRisk(rates, labels, stamp)
