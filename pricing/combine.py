"""The freshest prices gacost has, offline: cached live sources over the embedded snapshot.

Rules: a cache file older than the snapshot is ignored; a source that supersedes another
hides that one's cache; for one offer (``Offer.identity``: provider, region and instance
type) the row of the higher-priority source wins (first-party API over catalog, then the
newer fetch); the snapshot fills in only providers no usable cache covers. A corrupt cache
file is ignored with one warning.

When prices are old enough to warn about (one ``warning:`` line at most, on stderr):
- prices you fetched (the cache) warn once older than the max age (24 h,
  ``$GACOST_PRICE_MAX_AGE``): you asked for live rates and they have gone stale;
- the embedded snapshot warns once older than :data:`SHIPPED_MAX_AGE` (30 days). Shipped
  data is always older than a day, and the report's footer already names its date; a month
  is the scale on which list prices move (AWS cut its P4/P5 on-demand prices by up to 45%
  on 2025-06-05; neocloud rates change every few months), so past it the footer is not
  enough.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone

from gacost.base.errors import DataError
from gacost.base.records import Offer
from gacost.pricing import spot_advisor
from gacost.pricing.cache import PriceCache, format_age, format_timestamp, parse_timestamp
from gacost.pricing.snapshot import PriceTable
from gacost.pricing.sources import SOURCES

SNAPSHOT = "snapshot"
SHIPPED_MAX_AGE = timedelta(days=30)  # when the embedded snapshot is worth a warning
# The advice that ends a stale-prices warning (dropped right after a refresh that failed).
REFRESH_ADVICE = "`gacost prices --refresh` fetches current rates"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

Warn = Callable[[str], None]


@dataclass(frozen=True)
class Part:
    """Offers from one place (a cached source or the snapshot) and their time."""

    name: str
    label: str
    priority: int
    fetched_at: datetime
    offers: tuple[Offer, ...]

    @property
    def providers(self) -> list[str]:
        """The providers of the offers, sorted."""
        return sorted({o.provider for o in self.offers})


def snapshot_time(snapshot: PriceTable) -> datetime:
    """The snapshot's ``as_of`` as a time (midnight UTC of a date; epoch if unreadable)."""
    try:
        return parse_timestamp(snapshot.as_of)
    except ValueError:
        return _EPOCH


def describe(part: Part, now: datetime, snapshot: PriceTable | None = None) -> str:
    """``"the embedded snapshot (read 2026-12-02, 3 days ago)"`` or a cache's age: the day
    the catalogs were read, not the date of their prices (``gacost prices`` names those)."""
    age = format_age(now - part.fetched_at)
    if part.name == SNAPSHOT:
        as_of = snapshot.as_of if snapshot else format_timestamp(part.fetched_at)
        if now < part.fetched_at:  # a clock behind the snapshot's date: no age to tell
            return f"the embedded snapshot (read {as_of})"
        return f"the embedded snapshot (read {as_of}, {age} ago)"
    return f"{part.label} prices cached {age} ago"


def load_freshest(
    *, cache: PriceCache, snapshot: PriceTable, now: datetime, max_age: timedelta, warn: Warn
) -> PriceTable:
    """The combined table; warnings go to ``warn``, one line each."""
    snap_time = snapshot_time(snapshot)
    parts, corrupt = cached_parts(cache, snap_time, now)
    snap = Part(SNAPSHOT, "embedded snapshot", 0, snap_time, snapshot.offers)
    used = merge(parts, snap)
    for name, exc in corrupt:
        providers = set(SOURCES[name].providers)
        serving = [p for p in used if providers & set(p.providers)]
        instead = " and ".join(describe(p, now, snapshot) for p in serving) or "nothing"
        warn(f"{name}: {exc}; using {instead} instead")
    stale = staleness_warning(used, now, max_age, snapshot)
    if stale is not None:
        warn(stale)
    return with_spot_risk(table_of(used, snapshot, now), cache, now, warn)


def staleness_warning(
    used: Sequence[Part], now: datetime, max_age: timedelta, snapshot: PriceTable
) -> str | None:
    """The one line to warn with when the prices used are old (module docstring), or None."""
    fetched = [p for p in used if p.name != SNAPSHOT and now - p.fetched_at > max_age]
    if fetched:
        oldest = min(fetched, key=lambda p: p.fetched_at)
        more = f" (and {len(fetched) - 1} more source(s))" if len(fetched) > 1 else ""
        return (
            f"prices: {describe(oldest, now, snapshot)}{more}, past the max age "
            f"({format_age(max_age) if max_age else 0}); {REFRESH_ADVICE}"
        )
    shipped = next((p for p in used if p.name == SNAPSHOT), None)
    if shipped is not None and now - shipped.fetched_at > SHIPPED_MAX_AGE:
        return (
            f"prices: {describe(shipped, now, snapshot)} is over "
            f"{format_age(SHIPPED_MAX_AGE)} old; {REFRESH_ADVICE} (a newer gacost ships "
            "newer ones)"
        )
    return None


def with_spot_risk(table: PriceTable, cache: PriceCache, now: datetime, warn: Warn) -> PriceTable:
    """``table`` with the cached AWS spot advisor rates on its AWS spot offers, if any."""
    try:
        risk = spot_advisor.read_risk(cache.risk_path())
    except DataError as exc:
        warn(f"{spot_advisor.NAME}: {exc}; spot costs use the job's spot_allowance")
        return table
    if risk is None:
        return table
    offers = spot_advisor.apply_rates(table.offers, risk)
    rated = sum(1 for o in offers if o.interruption_per_hour is not None)
    if not rated:
        return table
    age = format_age(now - parse_timestamp(risk.fetched_at))
    source = f"{table.source}; AWS Spot Instance Advisor ({rated} aws spot offers; {age} old)"
    return replace(table, offers=offers, source=source)


def cached_parts(
    cache: PriceCache, not_before: datetime, now: datetime | None = None
) -> tuple[list[Part], list[tuple[str, DataError]]]:
    """Usable cached sources, and the sources whose cache file is corrupt or stamped in
    the future (after ``now``)."""
    parts, corrupt = [], []
    for name, info in SOURCES.items():
        try:
            cached = cache.read(name)
        except DataError as exc:
            corrupt.append((name, exc))
            continue
        if cached is not None and now is not None and cached.in_future(now):
            corrupt.append((name, DataError(
                f"{cached.path}: fetched_at {format_timestamp(cached.fetched_at)} is in the "
                f"future; ignored ({cache.fix(name)})"
            )))  # fmt: skip
            continue
        if cached is not None and cached.fetched_at >= not_before:
            parts.append(Part(name, info.label, info.priority, cached.fetched_at, cached.offers))
    hidden = {s for p in parts for s in SOURCES[p.name].supersedes}
    return [p for p in parts if p.name not in hidden], corrupt


def merge(parts: Iterable[Part], snapshot: Part) -> list[Part]:
    """The parts that contribute, each cut to the offers it contributes, best first."""
    parts = sorted(parts, key=lambda p: (-p.priority, -p.fetched_at.timestamp(), p.name))
    covered = {o.provider for p in parts if not _partial(p) for o in p.offers}
    rest = tuple(o for o in snapshot.offers if o.provider not in covered)
    seen: set[tuple[str, str, str]] = set()
    used = []
    for part in [*parts, replace(snapshot, offers=rest)]:
        fresh = tuple(o for o in part.offers if o.identity not in seen)
        seen.update(o.identity for o in part.offers)
        if fresh:
            used.append(replace(part, offers=fresh))
    return used


def table_of(used: list[Part], snapshot: PriceTable, now: datetime) -> PriceTable:
    """One :class:`PriceTable`; the snapshot alone is returned unchanged."""
    if all(p.name == SNAPSHOT for p in used):
        return snapshot
    offers = tuple(o for p in used for o in p.offers)
    sources = []
    for part in used:
        where = ", ".join(part.providers)
        if part.name == SNAPSHOT:
            sources.append(f"embedded snapshot as of {snapshot.as_of} ({where})")
        else:
            sources.append(f"{part.label} ({where}; {format_age(now - part.fetched_at)} old)")
    oldest = min(used, key=lambda p: p.fetched_at)
    as_of = snapshot.as_of if oldest.name == SNAPSHOT else format_timestamp(oldest.fetched_at)
    return PriceTable(offers=offers, source="; ".join(sources), as_of=as_of,
                      price_dates=snapshot.price_dates)


def _partial(part: Part) -> bool:
    info = SOURCES.get(part.name)
    return info is not None and info.partial

