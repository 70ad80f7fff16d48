"""The price cache: one snapshot-format CSV per source under the user cache directory.

Location: ``$GACOST_CACHE_DIR``, else ``$GACOST_HOME/cache``, else the platform cache
directory from platformdirs (``$XDG_CACHE_HOME/gacost`` or ``~/.cache/gacost`` on Linux,
``~/Library/Caches/gacost`` on macOS, ``%LOCALAPPDATA%\\gacost\\Cache`` on Windows).
Files are ``<dir>/prices/<source>.csv`` in the format of :mod:`pricing.snapshot`; every
row carries its ``source`` and its ``fetched_at`` time (ISO 8601, UTC), so a cache file is
also a valid ``--prices`` file. Writes are atomic. No network here, and no httpx.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import platformdirs

from gacost.base.durations import parse_duration
from gacost.base.errors import DataError
from gacost.base.records import Offer
from gacost.pricing.quality import Rejection
from gacost.pricing.snapshot import (
    SNAPSHOT_FIX,
    read_offers_csv,
    write_offers_csv,
    write_rejections_csv,
)
from gacost.pricing.sources import SOURCES

CACHE_DIR_ENV = "GACOST_CACHE_DIR"
HOME_ENV = "GACOST_HOME"
MAX_AGE_ENV = "GACOST_PRICE_MAX_AGE"
DEFAULT_MAX_AGE = timedelta(hours=24)
CLOCK_SKEW = timedelta(minutes=5)  # a cache stamped further ahead than this is stale

_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")


# --- where -----------------------------------------------------------------------------


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """The gacost cache directory (it may not exist yet): ``$GACOST_CACHE_DIR``, else
    ``$GACOST_HOME/cache``, else platformdirs' user cache directory for ``gacost``."""
    env = os.environ if env is None else env
    if env.get(CACHE_DIR_ENV):
        return Path(env[CACHE_DIR_ENV]).expanduser()
    if env.get(HOME_ENV):
        return Path(env[HOME_ENV]).expanduser() / "cache"
    return Path(platformdirs.user_cache_dir("gacost", appauthor=False))


# --- ages and times ----------------------------------------------------------------------


def parse_age(text: str, *, default_unit: str = "h") -> timedelta:
    """An age or deadline: :func:`gacost.base.durations.parse_duration` (zero allowed)."""
    return parse_duration(text, default_unit=default_unit)


def max_age_from_env(env: Mapping[str, str] | None = None) -> timedelta:
    """``$GACOST_PRICE_MAX_AGE`` or :data:`DEFAULT_MAX_AGE`."""
    env = os.environ if env is None else env
    value = env.get(MAX_AGE_ENV, "").strip()
    if not value:
        return DEFAULT_MAX_AGE
    try:
        return parse_age(value)
    except ValueError as exc:
        raise DataError(f"${MAX_AGE_ENV}: {exc}; set it to e.g. 24h or unset it") from None


def parse_timestamp(text: str) -> datetime:
    """An aware UTC datetime from ``YYYY-MM-DD`` (midnight) or an ISO 8601 time."""
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    when = datetime.fromisoformat(value)
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc)


def format_timestamp(when: datetime) -> str:
    """``2026-12-02T13:35:06Z``."""
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_age(age: timedelta) -> str:
    """A short human age: ``"under a minute"``, ``"12 min"``, ``"5 h"``, ``"3 days"``."""
    if age == timedelta.max:
        return "of unknown age (stamped in the future)"
    seconds = max(0.0, age.total_seconds())
    if seconds < 60:
        return "under a minute"
    if seconds < 3600:
        return f"{int(seconds // 60)} min"
    if seconds < 2 * 86400:
        return f"{int(seconds // 3600)} h"
    return f"{int(seconds // 86400)} days"


# --- the cache -------------------------------------------------------------------------


@dataclass(frozen=True)
class CachedPrices:
    """The offers one source returned, and when."""

    name: str
    offers: tuple[Offer, ...]
    fetched_at: datetime
    path: Path

    def in_future(self, now: datetime) -> bool:
        """True when stamped later than ``now`` (beyond :data:`CLOCK_SKEW`): a clock or a
        file that cannot be trusted, so the entry counts as stale."""
        return self.fetched_at - now > CLOCK_SKEW

    def age(self, now: datetime) -> timedelta:
        """How old the prices are at ``now``; "forever" when stamped in the future."""
        if self.in_future(now):
            return timedelta.max
        return max(timedelta(0), now - self.fetched_at)


class PriceCache:
    """Read and write the per-source cache files under ``root / "prices"``."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = (root if root is not None else cache_dir()) / "prices"

    def path(self, name: str) -> Path:
        """The cache file of source ``name``."""
        if not _NAME.match(name):
            raise ValueError(f"bad price source name {name!r}")
        return self.root / f"{name}.csv"

    def read(self, name: str) -> CachedPrices | None:
        """The cached prices of ``name``; None if absent; :class:`DataError` if corrupt."""
        if SOURCES.get(name) is not None and SOURCES[name].kind != "offers":
            return None  # not an offer table
        path = self.path(name)
        if not path.is_file():
            return None
        try:
            offers = read_offers_csv(path)
        except DataError as exc:
            reason = str(exc).removesuffix(f"; {SNAPSHOT_FIX}")
            raise DataError(f"corrupt price cache: {reason}; {self.fix(name)}") from None
        stamps = {o.fetched_at for o in offers}
        if len(stamps) != 1:
            raise DataError(f"{path}: rows from several fetches; {self.fix(name)}")
        try:
            fetched_at = parse_timestamp(stamps.pop())
        except ValueError:
            raise DataError(f"{path}: fetched_at is not an ISO time; {self.fix(name)}") from None
        return CachedPrices(name, tuple(offers), fetched_at, path)

    def risk_path(self) -> Path:
        """The parsed AWS spot advisor rates (:mod:`pricing.spot_advisor`)."""
        return self.root / "aws-spot-advisor.json"

    def rejected_path(self, name: str) -> Path:
        """The rows the quality rules rejected in the last fetch of ``name``."""
        return self.path(name).with_suffix(".rejected.csv")

    def write(self, name: str, offers: Sequence[Offer], rejected: Sequence[Rejection] = ()) -> Path:
        """Replace the cache file of ``name`` (and its rejected rows) atomically; the old
        file stays on failure."""
        path = self.path(name)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_rejections_csv(self.rejected_path(name), rejected)
            write_offers_csv(path, offers)
        except OSError as exc:
            raise DataError(
                f"{path}: cannot write the price cache ({exc}); "
                f"check the directory or set ${CACHE_DIR_ENV}"
            ) from None
        return path

    def fix(self, name: str) -> str:
        """How to repair a bad cache file."""
        return f"delete {self.path(name)} or run `gacost prices --refresh --source {name}`"
