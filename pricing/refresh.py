"""Refresh live price sources into the cache, or export them as a new embedded snapshot.

A source is fetched when its cache is missing, corrupt or older than the max age; the
offers go through :func:`pricing.quality.check_offers` and replace the cache file only
when some are left. On any failure (network, HTTP status, parse, empty result) the cache
is left exactly as it was and one warning names the source and the age of what is used
instead. Sources that need an API key are skipped with a note when the key is not set.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import httpx

from gacost.base.errors import GacostError, PricingError, UnknownNameError, did_you_mean
from gacost.pricing import http
from gacost.pricing.cache import CachedPrices, PriceCache, format_age, format_timestamp
from gacost.pricing.combine import SNAPSHOT, Part, Warn, describe, merge, snapshot_time
from gacost.pricing.fetching import FetchContext, FetchResult
from gacost.pricing.quality import check_offers
from gacost.pricing.registry import FETCHERS
from gacost.pricing.snapshot import PriceTable, write_snapshot
from gacost.pricing.sources import SOURCES, default_sources

FETCHED, FRESH, SKIPPED, FAILED = "fetched", "fresh", "skipped", "failed"


@dataclass(frozen=True)
class Outcome:
    """What happened to one source."""

    name: str
    status: str
    offers: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    message: str = ""


def select_sources(names: Sequence[str] = (), providers: Sequence[str] = ()) -> list[str]:
    """``names`` (validated) or the default sources, kept to ``providers`` when given."""
    for name in names:
        if name not in SOURCES:
            raise UnknownNameError(
                f"unknown price source '{name}'{did_you_mean(name, SOURCES)}; "
                "`gacost prices --list-sources` lists them"
            )
    chosen = list(dict.fromkeys(names)) or default_sources()
    wanted = {p.lower() for p in providers}
    if wanted:
        chosen = [n for n in chosen if wanted & set(SOURCES[n].providers)]
    return chosen


@dataclass
class Refresher:
    """Fetches sources with one client; ``warn`` and ``note`` print one line each."""

    cache: PriceCache
    snapshot: PriceTable
    now: datetime
    env: Mapping[str, str]
    warn: Warn
    note: Warn
    policy: http.HttpPolicy = field(default_factory=http.HttpPolicy)
    client: httpx.Client | None = None

    def refresh(self, names: Sequence[str], max_age: timedelta) -> list[Outcome]:
        """Refresh each source whose cache is older than ``max_age``."""
        with self._client() as client:
            return [self._refresh_one(client, name, max_age) for name in names]

    def export(self, folder: Path, names: Sequence[str]) -> list[str]:
        """Fetch every source now and write ``folder``'s snapshot; nothing is written on error.

        Returns the summary lines.
        """
        parts, failures, lines = [], [], []
        with self._client() as client:
            for name in names:
                if self._skip_keyless(name):
                    continue
                try:
                    result = self._fetch(client, name)
                except GacostError as exc:
                    failures.append(f"{name}: {exc}")
                    continue
                lines.append(self._summary(name, result))
                info = SOURCES[name]
                parts.append(Part(name, info.label, info.priority, self.now, result.offers))
        if failures or not parts:
            reason = " | ".join(failures) or "no source could be fetched"
            raise PricingError(f"snapshot export stopped, nothing written: {reason}")
        used = merge(parts, Part(SNAPSHOT, "", 0, self.now, ()))
        offers = sorted(
            (o for p in used for o in p.offers),
            key=lambda o: (o.provider, o.gpu, o.instance_type, o.region),
        )
        stamp = format_timestamp(self.now)
        labels = [f"{p.label} fetched {stamp}" for p in used]
        write_snapshot(folder, offers, as_of=self.now.date().isoformat(), sources=labels)
        return [*lines, f"wrote {len(offers)} offers to {folder}, as of {self.now.date()}"]

    # --- one source ----------------------------------------------------------------

    def _refresh_one(self, client: httpx.Client, name: str, max_age: timedelta) -> Outcome:
        if self._skip_keyless(name):
            return Outcome(name, SKIPPED)
        cached = self._readable_cache(name)
        if cached is not None and cached.age(self.now) <= max_age:
            message = (
                f"{name}: cached prices are {format_age(cached.age(self.now))} old "
                f"(max age {format_age(max_age)}); not fetched"
            )
            self.note(message)
            return Outcome(name, FRESH, len(cached.offers), message=message)
        try:
            result = self._fetch(client, name)
            self.cache.write(name, result.offers)
        except GacostError as exc:
            message = f"{name}: refresh failed ({exc}); using {self._fallback(cached)}"
            self.warn(message)
            return Outcome(name, FAILED, message=message)
        message = self._summary(name, result)
        self.note(message)
        return Outcome(name, FETCHED, len(result.offers), result.dropped, message)

    def _skip_keyless(self, name: str) -> bool:
        key_env = SOURCES[name].key_env
        if key_env is None or self.env.get(key_env, "").strip():
            return False
        self.note(f"{name}: skipped, ${key_env} is not set (export it to use this source)")
        return True

    def _readable_cache(self, name: str) -> CachedPrices | None:
        try:
            return self.cache.read(name)
        except GacostError:
            return None  # refetched; the loader warns about the file

    def _fetch(self, client: httpx.Client, name: str) -> FetchResult:
        """Fetch and quality-check one source; no usable offer is an error."""
        ctx = FetchContext(now=self.now, env=self.env, policy=self.policy)
        try:
            result = FETCHERS[name](client, ctx)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise PricingError(f"unexpected response ({type(exc).__name__}: {exc})") from None
        kept, quality = check_offers(result.offers)
        dropped = Counter(result.dropped)
        dropped.update(quality)
        if not kept:
            raise PricingError(f"{SOURCES[name].label} returned no usable offers")
        return FetchResult(tuple(kept), dict(dropped), result.adjusted, result.detail)

    def _fallback(self, cached: CachedPrices | None) -> str:
        if cached is not None:
            return f"the prices cached {format_age(cached.age(self.now))} ago"
        snap = Part(SNAPSHOT, "", 0, snapshot_time(self.snapshot), ())
        return describe(snap, self.now, self.snapshot)

    def _summary(self, name: str, result: FetchResult) -> str:
        detail = f" ({result.detail})" if result.detail else ""
        text = f"{name}: {len(result.offers)} offers from {SOURCES[name].label}{detail}"
        total = sum(result.dropped.values())
        if total:
            reasons = ", ".join(f"{n} {r}" for r, n in sorted(result.dropped.items()))
            text += f"; {total} rows dropped or corrected: {reasons}"
        return text

    @contextlib.contextmanager
    def _client(self) -> Iterator[httpx.Client]:
        if self.client is not None:
            yield self.client
            return
        with http.make_client(self.policy) as client:
            yield client
