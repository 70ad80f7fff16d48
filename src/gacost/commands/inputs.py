"""Inputs shared by the command modules: flags, the job, profiles, prices and numbers.

Commands never import each other; what two of them share lives here."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from gacost.base.errors import JobSpecError
from gacost.base.job import Job, load_job
from gacost.base.profile import Profile, read_profile
from gacost.pricing.cache import PriceCache, max_age_from_env
from gacost.pricing.combine import load_freshest
from gacost.pricing.snapshot import PriceTable, load_snapshot, read_offers_csv

if TYPE_CHECKING:
    from gacost.pricing.refresh import Outcome


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
    from gacost.pricing.refresh import Refresher, select_sources

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


def add_common(p: argparse.ArgumentParser) -> None:
    """Flags shared by ``budget`` and ``compare``."""
    p.add_argument("--job", required=True, help="the job spec (YAML), with runs: or sweep:")
    p.add_argument("--profile", action="append", default=[], metavar="P",
                   help="a calibration profile (JSON) to use; repeatable")
    p.add_argument("--prices", metavar="F",
                   help="a price file in the snapshot CSV format (default: embedded snapshot)")
    p.add_argument("--spot", action="store_true",
                   help="also price spot offers (as the job's spot: true does)")
    p.add_argument("--spot-allowance", metavar="X",
                   help="extra time added to spot runs for interruptions (default: the job's "
                        "spot_allowance, 0.2 = 20%%)")
    p.add_argument("--format", choices=("table", "json", "csv"), default="table")
    p.add_argument("--refresh-prices", action="store_true",
                   help="fetch price sources whose cache is older than the max age first "
                        "(network; see `gacost prices --list-sources`)")


def number(flag: str, text: str, *, low: float = 0.0, high: float = float("inf"),
           integer: bool = False, strict_low: bool = True) -> float:
    """A flag's number, or a one-line ``--flag: ...`` error (exit code 2)."""
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        kind = "an integer" if integer else "a number"
        raise JobSpecError(f"{flag}: expected {kind}, got {text!r}") from None
    too_low = value <= low if strict_low else value < low
    if too_low or value > high or value != value:
        bound = f"> {low:g}" if strict_low else f">= {low:g}"
        upper = f" and <= {high:g}" if high != float("inf") else ""
        raise JobSpecError(f"{flag}: must be {bound}{upper}, got {text}")
    return value


def load_inputs(
    args: argparse.Namespace,
) -> tuple[Job, PriceTable, list[Profile], float | None]:
    """The job, price table, profiles and spot allowance (None: the job's) of the shared
    flags."""
    allowance = None if args.spot_allowance is None else number(
        "--spot-allowance", args.spot_allowance, low=0.0, high=10.0, strict_low=False)
    job = load_job(args.job)
    profiles = [read_profile(p) for p in args.profile]
    return job, price_table(args.prices, refresh=args.refresh_prices), profiles, allowance


