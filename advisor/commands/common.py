"""Helpers shared by the command modules."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from pricing.cache import PriceCache, max_age_from_env
from pricing.combine import load_freshest
from pricing.snapshot import PriceTable, load_snapshot, read_offers_csv

if TYPE_CHECKING:
    from pricing.refresh import Outcome


def price_table(
    path: str | None = None,
    *,
    refresh: bool = False,
    sources: Sequence[str] = (),
    providers: Sequence[str] = (),
    max_age: timedelta | None = None,
) -> PriceTable:
    """The offers of a price file, or the freshest of the price cache and the snapshot.

    Without ``refresh`` no network is used (and httpx is not imported). With it, the
    ``sources`` (default: every default source of ``providers``) whose cache is older than
    ``max_age`` (default ``$GACOST_PRICE_MAX_AGE`` or 24 h) are fetched first; failures
    print one warning each and fall back to the cache or the snapshot.
    """
    if path is not None:
        return _price_file(path)
    snapshot = load_snapshot()
    cache = PriceCache()
    now = datetime.now(timezone.utc)
    age = max_age if max_age is not None else max_age_from_env()
    if refresh:
        refresh_prices(cache, snapshot, now, age, sources, providers)
    return load_freshest(cache=cache, snapshot=snapshot, now=now, max_age=age, warn=warn)


def refresh_prices(
    cache: PriceCache,
    snapshot: PriceTable,
    now: datetime,
    max_age: timedelta,
    sources: Sequence[str] = (),
    providers: Sequence[str] = (),
) -> list[Outcome]:
    """Fetch the stale sources into ``cache`` (imports the fetch layer, hence httpx)."""
    from pricing.refresh import Refresher, select_sources

    names = select_sources(sources, providers)
    refresher = Refresher(
        cache=cache, snapshot=snapshot, now=now, env=os.environ, warn=warn, note=note
    )
    return refresher.refresh(names, max_age)


def warn(message: str) -> None:
    """One ``warning:`` line on stderr."""
    print(f"warning: {message}", file=sys.stderr)


def note(message: str) -> None:
    """One ``note:`` line on stderr (progress that is not a problem)."""
    print(f"note: {message}", file=sys.stderr)


def _price_file(path: str) -> PriceTable:
    offers = read_offers_csv(path)
    dates = sorted({o.fetched_at for o in offers if o.fetched_at})
    return PriceTable(
        offers=tuple(offers),
        source=f"price file {path}",
        as_of=dates[-1] if dates else "unknown",
    )
