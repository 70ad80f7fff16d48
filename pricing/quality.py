"""Data-quality checks over offers: pure functions returning kept offers and every rejection.

Checks, in order (each dropped or changed offer becomes one :class:`Rejection` with its
reason, listed by ``gacost prices --rejected``):

1. exact duplicates, then conflicting duplicates (the same offer, :attr:`Offer.identity`:
   provider, region and instance type, with other fields: the first is kept; the user's
   price file follows the same rule), then alias duplicates: offers equal in every
   field but the instance name (Cudo's ``-compute``/``-graphics`` twins, Spheron's
   ``-bigroot`` copies, GCP ``a3-edgegpu-8g`` beside ``a3-highgpu-8g``). One is kept: the
   name the provider sells in the most regions, then the shortest, then the first
   alphabetically;
2. on-demand prices that are zero, negative or absurd per GPU-hour (dropped); spot prices
   that are absurd or above on-demand (only the spot is cleared);
3. known spot-only shapes (:data:`SPOT_ONLY_SHAPES`, each with its source): the on-demand
   price a catalog lists for them is cleared, so they are offered as spot only;
4. low outliers within a provider: an on-demand price below ``outlier_ratio`` of the
   median over regions of the same provider and instance type (dropped). The key is the
   instance type, not the GPU: a 1-GPU instance on a small host (AWS g4dn.xlarge, T4 at
   $0.526/h) is not an outlier against 1-GPU shapes on 96-vCPU hosts;
5. the market spread: a per-GPU on-demand price far from the same GPU's price across
   providers. Each provider's median per-GPU price is one vote; on log prices, an offer
   whose modified z-score ``0.6745 (x - median) / MAD`` exceeds 3.5 (Iglewicz and
   Hoaglin's outlier label, NIST/SEMATECH e-Handbook 1.3.5.17) *and* whose price is below
   ``outlier_ratio`` (above its inverse) times that median is dropped when cheap and
   flagged (kept) when dear. The ratio guard keeps a real cheap price when providers
   agree so closely that the MAD is tiny. GPUs with fewer than ``market_min_providers``
   providers are not judged.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from gacost.base.records import Offer

SAME_OFFER = "same provider, region and instance type"  # Offer.identity, in words
DUPLICATE = "exact duplicate"
CONFLICT = f"conflicting duplicate ({SAME_OFFER}; first kept)"
ALIAS = (
    "alias duplicate (same provider, region, GPU, host and prices as another instance "
    "name; one kept)"
)
BAD_COUNT = "gpu count zero or negative"
BAD_PRICE = "on-demand price zero or negative"
ABSURD_PRICE = "on-demand per-GPU price out of range"
BAD_SPOT = "spot price invalid or out of range (spot cleared)"
SPOT_ABOVE = "spot above on-demand (spot cleared)"
NO_VALID_PRICE = "no valid price left"
LOW_OUTLIER = "on-demand below half the median of the same instance type across regions"
SPOT_ONLY = "spot/flex-start only shape (on-demand cleared)"
MARKET_LOW = "per-GPU on-demand far below the GPU's price across providers"
MARKET_HIGH = "per-GPU on-demand far above the GPU's price across providers (flagged)"

DROPPED, ON_DEMAND_CLEARED, SPOT_CLEARED, FLAGGED, CORRECTED = (
    "dropped", "on-demand cleared", "spot cleared", "flagged", "corrected",
)  # fmt: skip

#: (provider, instance-type pattern) -> source: shapes sold only as spot or flex-start.
SPOT_ONLY_SHAPES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    (
        "gcp",
        re.compile(r"^a3-highgpu-[124]g$"),
        "cloud.google.com/compute/docs/gpus#a3-series: A3 High with 1, 2 or 4 GPUs is "
        "available only as Spot VMs or through Flex-start",
    ),
)

# Iglewicz and Hoaglin (1993): |modified z| > 3.5 labels a potential outlier; 0.6745 is
# the 0.75 quantile of the standard normal, making MAD comparable to a standard deviation.
MODIFIED_Z_LIMIT = 3.5
_MAD_SCALE = 0.6745

K = TypeVar("K")


@dataclass(frozen=True)
class QualityRules:
    """Thresholds for :func:`check_offers` (USD per GPU-hour)."""

    min_gpu_hour: float = 0.01
    max_gpu_hour: float = 150.0
    outlier_ratio: float = 0.5
    outlier_min_group: int = 3  # fewer regions than this: no median test
    market_min_providers: int = 4  # fewer providers than this: no market test
    market_z: float = MODIFIED_Z_LIMIT


DEFAULT_RULES = QualityRules()


@dataclass(frozen=True)
class Rejection:
    """One offer a check dropped, changed or flagged: the offer as it came in, and why."""

    offer: Offer
    reason: str
    action: str


@dataclass(frozen=True)
class QualityReport:
    """The offers kept (some with a price cleared) and every rejection, in check order."""

    kept: list[Offer]
    rejections: list[Rejection]

    @property
    def counts(self) -> dict[str, int]:
        """The number of rejections per reason."""
        return dict(Counter(r.reason for r in self.rejections))


def check_offers(
    offers: Iterable[Offer], rules: QualityRules = DEFAULT_RULES
) -> tuple[list[Offer], dict[str, int]]:
    """Return the offers that pass every check, and the number dropped or fixed per reason."""
    report = review_offers(offers, rules)
    return report.kept, report.counts


def review_offers(
    offers: Iterable[Offer],
    rules: QualityRules = DEFAULT_RULES,
    reference: Sequence[Offer] = (),
) -> QualityReport:
    """Run every check; the report lists each rejection with its reason.

    ``reference`` offers (the snapshot, when one source is refreshed) join the market
    spread of each GPU, for the providers ``offers`` does not cover.
    """
    out: list[Rejection] = []
    unique = _drop_aliases(drop_duplicates(offers, out), out)
    priced = [o for o in (_check_prices(o, rules, out) for o in unique) if o is not None]
    shaped = [_spot_only(o, out) for o in priced]
    kept = _drop_low_outliers(shaped, rules, out)
    kept = _market_spread(kept, rules, out, reference)
    return QualityReport(kept, out)


def drop_duplicates(offers: Iterable[Offer], out: list[Rejection]) -> list[Offer]:
    """Keep the first of rows equal in every field (the others: :data:`DUPLICATE`) and the
    first of rows that are the same offer (:attr:`Offer.identity`) but differ elsewhere
    (the others: :data:`CONFLICT`); each row dropped is appended to ``out``."""
    seen: set[Offer] = set()
    offers_seen: set[tuple[str, str, str]] = set()
    kept = []
    for offer in offers:
        if offer in seen:
            out.append(Rejection(offer, DUPLICATE, DROPPED))
            continue
        seen.add(offer)
        if offer.identity in offers_seen:
            out.append(Rejection(offer, CONFLICT, DROPPED))
            continue
        offers_seen.add(offer.identity)
        kept.append(offer)
    return kept


def _drop_aliases(offers: list[Offer], out: list[Rejection]) -> list[Offer]:
    """Keep one of the offers that differ only in their instance name (see module doc)."""
    regions: dict[tuple[str, str], set[str]] = defaultdict(set)
    groups: dict[tuple[object, ...], list[Offer]] = defaultdict(list)
    for offer in offers:
        regions[(offer.provider, offer.instance_type)].add(offer.region)
        groups[_alias_key(offer)].append(offer)

    def rank(offer: Offer) -> tuple[int, int, str]:
        spread = len(regions[(offer.provider, offer.instance_type)])
        return (-spread, len(offer.instance_type), offer.instance_type)

    dropped: set[int] = set()
    for group in groups.values():
        if len(group) > 1:
            keep = min(group, key=rank)
            dropped.update(id(o) for o in group if o is not keep)
    kept = []
    for offer in offers:
        if id(offer) in dropped:
            out.append(Rejection(offer, ALIAS, DROPPED))
        else:
            kept.append(offer)
    return kept


def _alias_key(offer: Offer) -> tuple[object, ...]:
    return (
        offer.provider, offer.region, offer.gpu, offer.gpu_count, offer.gpu_memory_gib,
        offer.vcpus, offer.ram_gib, offer.price_hour, offer.spot_hour, offer.source,
        offer.fetched_at, offer.interruption_per_hour,
    )  # fmt: skip


def _check_prices(offer: Offer, rules: QualityRules, out: list[Rejection]) -> Offer | None:
    """The offer with an invalid spot price cleared, or None when it has no valid price."""
    if offer.gpu_count <= 0:
        out.append(Rejection(offer, BAD_COUNT, DROPPED))
        return None
    price, spot = offer.price_hour, offer.spot_hour
    if price is not None and price <= 0:
        out.append(Rejection(offer, BAD_PRICE, DROPPED))
        return None
    if price is not None and not _in_range(price / offer.gpu_count, rules):
        out.append(Rejection(offer, ABSURD_PRICE, DROPPED))
        return None
    if spot is not None and (spot <= 0 or not _in_range(spot / offer.gpu_count, rules)):
        out.append(Rejection(offer, BAD_SPOT, SPOT_CLEARED))
        spot = None
    if spot is not None and price is not None and spot > price:
        out.append(Rejection(offer, SPOT_ABOVE, SPOT_CLEARED))
        spot = None
    if price is None and spot is None:
        out.append(Rejection(offer, NO_VALID_PRICE, DROPPED))
        return None
    return offer if spot == offer.spot_hour else replace(offer, spot_hour=spot)


def spot_only_source(offer: Offer) -> str | None:
    """The source saying ``offer``'s shape is sold only as spot, or None."""
    for provider, pattern, source in SPOT_ONLY_SHAPES:
        if offer.provider == provider and pattern.match(offer.instance_type):
            return source
    return None


def _spot_only(offer: Offer, out: list[Rejection]) -> Offer:
    if offer.price_hour is None or spot_only_source(offer) is None:
        return offer
    out.append(Rejection(offer, SPOT_ONLY, ON_DEMAND_CLEARED))
    return replace(offer, price_hour=None)


def _drop_low_outliers(
    offers: list[Offer], rules: QualityRules, out: list[Rejection]
) -> list[Offer]:
    """Drop offers priced below ``outlier_ratio`` x their instance type's regional median."""
    medians = regional_medians(
        ((o.provider, o.instance_type, o.gpu_count), o.region, o.per_gpu_hour)
        for o in offers
        if o.per_gpu_hour is not None
    )
    kept = []
    for offer in offers:
        median = medians.get((offer.provider, offer.instance_type, offer.gpu_count))
        per_gpu = offer.per_gpu_hour
        if median is not None and per_gpu is not None and is_low_outlier(per_gpu, median, rules):
            out.append(Rejection(offer, LOW_OUTLIER, DROPPED))
            continue
        kept.append(offer)
    return kept


@dataclass(frozen=True)
class MarketSpread:
    """A GPU's per-GPU on-demand price across providers, on a log scale."""

    providers: int
    median_log: float
    mad_log: float

    @property
    def median(self) -> float:
        """The median provider's per-GPU price (USD per GPU-hour)."""
        return math.exp(self.median_log)

    def z(self, per_gpu_hour: float) -> float:
        """The modified z-score of a per-GPU price (0 when the spread is zero)."""
        if self.mad_log <= 0:
            return 0.0
        return _MAD_SCALE * (math.log(per_gpu_hour) - self.median_log) / self.mad_log


def market_spreads(
    offers: Sequence[Offer], rules: QualityRules = DEFAULT_RULES
) -> dict[str, MarketSpread]:
    """Per GPU with enough providers: the spread of the providers' median per-GPU prices."""
    by_gpu: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for offer in offers:
        if offer.per_gpu_hour is not None and offer.per_gpu_hour > 0:
            by_gpu[offer.gpu][offer.provider].append(math.log(offer.per_gpu_hour))
    spreads = {}
    for gpu, providers in by_gpu.items():
        if len(providers) < rules.market_min_providers:
            continue
        votes = [statistics.median(v) for v in providers.values()]
        center = statistics.median(votes)
        mad = statistics.median(abs(v - center) for v in votes)
        spreads[gpu] = MarketSpread(len(votes), center, mad)
    return spreads


def _market_spread(
    offers: list[Offer], rules: QualityRules, out: list[Rejection], reference: Sequence[Offer]
) -> list[Offer]:
    own = {o.provider for o in offers}
    spreads = market_spreads([*offers, *(o for o in reference if o.provider not in own)], rules)
    kept = []
    for offer in offers:
        spread = spreads.get(offer.gpu)
        per_gpu = offer.per_gpu_hour
        if spread is None or per_gpu is None:
            kept.append(offer)
            continue
        z, ratio = spread.z(per_gpu), per_gpu / spread.median
        if z < -rules.market_z and ratio < rules.outlier_ratio:
            out.append(Rejection(offer, MARKET_LOW, DROPPED))
            continue
        if z > rules.market_z and ratio > 1 / rules.outlier_ratio:
            out.append(Rejection(offer, MARKET_HIGH, FLAGGED))
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
