"""Data-quality checks over offers: pure functions returning kept offers and counts.

Checks, in order: exact duplicates; on-demand prices that are zero, negative or absurd per
GPU-hour (the offer is dropped); spot prices that are absurd or above on-demand (only the
spot price is cleared); and low outliers, an on-demand per-GPU price below a fraction of
the median over regions for the same provider and GPU (GCP has such rows, see SOURCES.md).
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TypeVar

from gacost.base.records import Offer

DUPLICATE = "exact duplicate"
BAD_COUNT = "gpu count zero or negative"
BAD_PRICE = "on-demand price zero or negative"
ABSURD_PRICE = "on-demand per-GPU price out of range"
BAD_SPOT = "spot price invalid or out of range (spot cleared)"
SPOT_ABOVE = "spot above on-demand (spot cleared)"
NO_VALID_PRICE = "no valid price left"
LOW_OUTLIER = "on-demand below half the provider median for the GPU"

K = TypeVar("K")


@dataclass(frozen=True)
class QualityRules:
    """Thresholds for :func:`check_offers` (USD per GPU-hour)."""

    min_gpu_hour: float = 0.01
    max_gpu_hour: float = 150.0
    outlier_ratio: float = 0.5
    outlier_min_group: int = 3  # fewer regions than this: no median test


DEFAULT_RULES = QualityRules()


def check_offers(
    offers: Iterable[Offer], rules: QualityRules = DEFAULT_RULES
) -> tuple[list[Offer], dict[str, int]]:
    """Return the offers that pass every check, and the number dropped or fixed per reason."""
    counts: Counter[str] = Counter()
    unique = _drop_duplicates(offers, counts)
    priced = [o for o in (_check_prices(o, rules, counts) for o in unique) if o is not None]
    kept = _drop_low_outliers(priced, rules, counts)
    return kept, dict(counts)


def _drop_duplicates(offers: Iterable[Offer], counts: Counter[str]) -> list[Offer]:
    """Keep the first of offers that are equal in every field."""
    seen: set[Offer] = set()
    kept = []
    for offer in offers:
        if offer in seen:
            counts[DUPLICATE] += 1
            continue
        seen.add(offer)
        kept.append(offer)
    return kept


def _check_prices(offer: Offer, rules: QualityRules, counts: Counter[str]) -> Offer | None:
    """The offer with an invalid spot price cleared, or None when it has no valid price."""
    if offer.gpu_count <= 0:
        counts[BAD_COUNT] += 1
        return None
    price, spot = offer.price_hour, offer.spot_hour
    if price is not None and price <= 0:
        counts[BAD_PRICE] += 1
        return None
    if price is not None and not _in_range(price / offer.gpu_count, rules):
        counts[ABSURD_PRICE] += 1
        return None
    if spot is not None and (spot <= 0 or not _in_range(spot / offer.gpu_count, rules)):
        counts[BAD_SPOT] += 1
        spot = None
    if spot is not None and price is not None and spot > price:
        counts[SPOT_ABOVE] += 1
        spot = None
    if price is None and spot is None:
        counts[NO_VALID_PRICE] += 1
        return None
    return offer if spot == offer.spot_hour else replace(offer, spot_hour=spot)


def _drop_low_outliers(
    offers: list[Offer], rules: QualityRules, counts: Counter[str]
) -> list[Offer]:
    """Drop offers priced below ``outlier_ratio`` x the median of their provider and GPU."""
    medians = regional_medians(
        ((o.provider, o.gpu), o.region, o.per_gpu_hour)
        for o in offers
        if o.per_gpu_hour is not None
    )
    kept = []
    for offer in offers:
        median = medians.get((offer.provider, offer.gpu))
        per_gpu = offer.per_gpu_hour
        if median is not None and per_gpu is not None and is_low_outlier(per_gpu, median, rules):
            counts[LOW_OUTLIER] += 1
            continue
        kept.append(offer)
    return kept


def regional_medians(
    values: Iterable[tuple[K, str, float]], rules: QualityRules = DEFAULT_RULES
) -> dict[K, float]:
    """Per key, the median over regions of each region's median value.

    Keys seen in fewer than ``rules.outlier_min_group`` regions get no median, so one
    region with many instance types cannot outvote the others.
    """
    by_region: dict[K, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for key, region, value in values:
        by_region[key][region].append(value)
    return {
        key: statistics.median(statistics.median(v) for v in regions.values())
        for key, regions in by_region.items()
        if len(regions) >= rules.outlier_min_group
    }


def is_low_outlier(value: float, median: float, rules: QualityRules = DEFAULT_RULES) -> bool:
    """True when ``value`` is below ``rules.outlier_ratio`` x ``median``."""
    return value < rules.outlier_ratio * median


def _in_range(per_gpu_hour: float, rules: QualityRules) -> bool:
    return rules.min_gpu_hour <= per_gpu_hour <= rules.max_gpu_hour
