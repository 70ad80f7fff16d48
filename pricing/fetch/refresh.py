"""Refresh live price sources into the cache, or export them as a new embedded snapshot.

A source is fetched when its cache is missing, corrupt or older than the max age; the
offers go through :func:`pricing.quality.check_offers` and replace the cache file only
when some are left. On any failure (network, HTTP status, parse, empty result) the cache
is left exactly as it was and one line names the source, the error and what is used
instead (a cache, the embedded snapshot, or for the spot advisor no interruption data).
Sources that need an API key are skipped with a note when the key is not set. Those
per-source lines go to ``warn``/``note``; :meth:`Refresher.summary` sums a refresh up in
one line ("0 of 24 sources refreshed; using ... for ...") for callers that print only that.

The sources are fetched in parallel threads under one deadline for the whole refresh
(``deadline_s``, default :data:`DEFAULT_DEADLINE_S`, ``$GACOST_REFRESH_DEADLINE``): every
request is bounded by it (:class:`pricing.fetch.http.Deadline`), and a source still running at
the deadline is abandoned and counted as failed. A fetched table with fewer than
:data:`MIN_KEEP_RATIO` times the offers of the table it would replace (the cache, or for a
catalog the snapshot's rows of that cloud) is rejected with a warning and the old data
kept, since a catalog cut at a line boundary parses cleanly; ``force`` overrides.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path

import httpx

from gacost.base.errors import GacostError, PricingError, UnknownNameError, did_you_mean
from gacost.base.inputfile import clip
from gacost.pricing.cache import (
    CachedPrices,
    PriceCache,
    format_age,
    format_timestamp,
    parse_age,
    parse_timestamp,
)
from gacost.pricing.combine import SNAPSHOT, Part, Warn, describe, merge, snapshot_time
from gacost.pricing.fetch import http, spot_advisor
from gacost.pricing.fetch.fetcher import FetchContext, FetchResult
from gacost.pricing.fetch.registry import FETCHERS
from gacost.pricing.quality import FLAGGED, review_offers
from gacost.pricing.snapshot import PriceTable, write_snapshot
from gacost.pricing.sources import SOURCES, default_sources
from gacost.pricing.spot_advisor import SpotRisk, read_risk, write_risk

FETCHED, FRESH, SKIPPED, FAILED = "fetched", "fresh", "skipped", "failed"
Fetched = FetchResult | SpotRisk | GacostError
REJECTED = "rejected"
NO_RISK_DATA = "no interruption data"  # the spot advisor's fallback without a cache
DEADLINE_ENV = "GACOST_REFRESH_DEADLINE"
DEFAULT_DEADLINE_S = 60.0
# A fetch keeping fewer than this share of the offers it would replace is refused. Routine
# catalog updates add or retire a few instance types or regions; losing half the table at
# once is what a cut-off download looks like (75 -> 21 AWS offers in the 2026-12 review).
MIN_KEEP_RATIO = 0.5


def deadline_from_env(env: Mapping[str, str] | None = None) -> float:
    """``$GACOST_REFRESH_DEADLINE`` in seconds (e.g. ``90s``, ``2m``), else 60."""
    env = os.environ if env is None else env
    value = env.get(DEADLINE_ENV, "").strip()
    if not value:
        return DEFAULT_DEADLINE_S
    try:
        seconds = parse_age(value, default_unit="s").total_seconds()
    except ValueError as exc:
        raise PricingError(f"${DEADLINE_ENV}: {exc}; set it to e.g. 60s or unset it") from None
    if seconds <= 0:
        raise PricingError(f"${DEADLINE_ENV}: must be above 0 s; set it to e.g. 60s")
    return seconds


@dataclass(frozen=True)
class Outcome:
    """What happened to one source."""

    name: str
    status: str
    offers: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    message: str = ""
    fallback: str = ""  # failed or rejected: what is used instead (see Refresher._fallback)

    @property
    def failed(self) -> bool:
        """True when the source was due but nothing new was stored."""
        return self.status in (FAILED, REJECTED)


def format_max_age(max_age: timedelta) -> str:
    """``"24 h"``; ``0`` reads as what it does ("0: always fetch"), not "under a minute"."""
    return "0: always fetch" if max_age <= timedelta(0) else format_age(max_age)


def select_sources(names: Sequence[str] = (), providers: Sequence[str] = ()) -> list[str]:
    """``names`` (validated) or the default sources, kept to ``providers`` when given."""
    for name in names:
        if name not in SOURCES:
            raise UnknownNameError(
                f"unknown price source '{name}'{did_you_mean(name, SOURCES)}; "
                "`gacost prices --list-sources` lists them"
            )
    covered = sorted({p for source in SOURCES.values() for p in source.providers})
    for provider in providers:
        if provider.strip().lower() not in covered:
            raise UnknownNameError(
                f"--provider: unknown provider {clip(provider)}"
                f"{did_you_mean(provider[:100], covered)}; known: {', '.join(covered)}"
            )
    chosen = list(dict.fromkeys(names)) or default_sources()
    wanted = {p.strip().lower() for p in providers}
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
    deadline_s: float = DEFAULT_DEADLINE_S
    force: bool = False

    def refresh(self, names: Sequence[str], max_age: timedelta) -> list[Outcome]:
        """Refresh each source whose cache is older than ``max_age``, all in parallel."""
        todo: list[str] = []
        early: dict[str, Outcome] = {}
        for name in names:
            outcome = self._no_fetch_needed(name, max_age)
            if outcome is None:
                todo.append(name)
            else:
                early[name] = outcome
        with self._client() as client:
            results = self._fetch_all(client, todo)
        return [early[n] if n in early else self._store(n, results[n]) for n in names]

    def export(self, folder: Path, names: Sequence[str]) -> list[str]:
        """Fetch every source now and write ``folder``'s snapshot; nothing is written on error.

        Returns the summary lines.
        """
        parts, failures, lines = [], [], []
        wanted = [n for n in names if SOURCES[n].kind == "offers" and not self._skip_keyless(n)]
        with self._client() as client:
            results = self._fetch_all(client, wanted)
        for name in wanted:
            result = results[name]
            if isinstance(result, GacostError):
                failures.append(f"{name}: {result}")
                continue
            if not isinstance(result, FetchResult):  # only offer sources are exported
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

    def _no_fetch_needed(self, name: str, max_age: timedelta) -> Outcome | None:
        """The outcome of a source that is skipped or fresh; None when it must be fetched."""
        if self._skip_keyless(name):
            return Outcome(name, SKIPPED)
        if SOURCES[name].kind == "risk":
            return self._risk_fresh(name, max_age)
        cached = self._readable_cache(name)
        if cached is not None and cached.age(self.now) <= max_age:
            message = (
                f"{name}: cached prices are {format_age(cached.age(self.now))} old "
                f"(max age {format_max_age(max_age)}); not fetched"
            )
            self.note(message)
            return Outcome(name, FRESH, len(cached.offers), message=message)
        return None

    def _risk_fresh(self, name: str, max_age: timedelta) -> Outcome | None:
        try:
            risk = read_risk(self.cache.risk_path())
        except GacostError:
            return None
        if risk is None:
            return None
        age = max(timedelta(0), self.now - parse_timestamp(risk.fetched_at))
        if age > max_age:
            return None
        message = (
            f"{name}: cached rates are {format_age(age)} old "
            f"(max age {format_max_age(max_age)}); not fetched"
        )
        self.note(message)
        return Outcome(name, FRESH, len(risk.rates), message=message)

    def _fetch_all(
        self, client: httpx.Client, names: Sequence[str]
    ) -> dict[str, Fetched]:
        """Fetch ``names`` in daemon threads; whatever is not done by the deadline failed."""
        deadline = http.Deadline.after(self.deadline_s)
        policy = replace(self.policy, deadline=deadline)
        results: dict[str, Fetched] = {}
        lock = threading.Lock()

        def work(name: str) -> None:
            outcome: Fetched
            try:
                if SOURCES[name].kind == "risk":
                    ctx = FetchContext(now=self.now, env=self.env, policy=policy)
                    outcome = spot_advisor.fetch(client, ctx)
                else:
                    outcome = self._fetch(client, name, policy)
            except GacostError as exc:
                outcome = exc
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                outcome = PricingError(f"unexpected response ({type(exc).__name__}: {exc})")
            with lock:
                results[name] = outcome

        threads = [threading.Thread(target=work, args=(n,), daemon=True) for n in names]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(max(deadline.left(), 0.0) + 0.05)
        with lock:
            done = dict(results)
        for name in names:
            if name not in done:
                done[name] = PricingError(
                    f"not done within the refresh deadline of {self.deadline_s:g} s "
                    f"(raise it with --deadline or ${DEADLINE_ENV})"
                )
        return done

    def _store(self, name: str, result: Fetched) -> Outcome:
        """Write a fetched table into the cache unless it failed or lost too many offers."""
        if isinstance(result, SpotRisk):
            return self._store_risk(name, result)
        if SOURCES[name].kind == "risk":
            instead = self._risk_fallback()
            message = f"{name}: refresh failed ({result}); using {instead}"
            if instead == NO_RISK_DATA:
                message += " (AWS spot costs use the job's spot_allowance)"
            self.warn(message)
            return Outcome(name, FAILED, message=message, fallback=instead)
        cached = self._readable_cache(name)
        if not isinstance(result, GacostError):
            shrink = None if self.force else self._shrunk(name, result, cached)
            if shrink is not None:
                instead = self._fallback(cached)
                message = (
                    f"{name}: fetched table rejected, {shrink}; keeping "
                    f"{instead} (`--force` stores it anyway)"
                )
                self.warn(message)
                return Outcome(
                    name, REJECTED, len(result.offers), result.dropped, message, instead
                )
            try:
                self.cache.write(name, result.offers, result.rejections)
            except GacostError as exc:
                result = exc
        if isinstance(result, GacostError):
            instead = self._fallback(cached)
            message = f"{name}: refresh failed ({result}); using {instead}"
            self.warn(message)
            return Outcome(name, FAILED, message=message, fallback=instead)
        message = self._summary(name, result)
        self.note(message)
        return Outcome(name, FETCHED, len(result.offers), result.dropped, message)

    def _store_risk(self, name: str, risk: SpotRisk) -> Outcome:
        try:
            write_risk(self.cache.risk_path(), risk)
        except OSError as exc:
            message = f"{name}: cannot write {self.cache.risk_path()} ({exc})"
            self.warn(message)
            return Outcome(name, FAILED, message=message)
        regions = len({r for r, _ in risk.rates})
        message = (
            f"{name}: interruption buckets of {len(risk.rates)} instance types x regions "
            f"({regions} regions) from {SOURCES[name].label}"
        )
        self.note(message)
        return Outcome(name, FETCHED, len(risk.rates), message=message)

    def _shrunk(self, name: str, result: FetchResult, cached: CachedPrices | None) -> str | None:
        """Why ``result`` is too small to replace what is used now; None when it is not."""
        providers = set(SOURCES[name].providers)
        if cached is not None:
            before, what = len(cached.offers), "the cache"
        elif name.startswith("skypilot-"):
            before = sum(1 for o in self.snapshot.offers if o.provider in providers)
            what = "the embedded snapshot"
        else:
            return None
        after = len(result.offers)
        if before and after < MIN_KEEP_RATIO * before:
            return (
                f"{after} offers against {before} in {what} (below {MIN_KEEP_RATIO:.0%}; "
                "a cut-off download?)"
            )
        return None

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

    def _fetch(self, client: httpx.Client, name: str, policy: http.HttpPolicy) -> FetchResult:
        """Fetch and quality-check one source; no usable offer is an error."""
        ctx = FetchContext(now=self.now, env=self.env, policy=policy)
        try:
            result = FETCHERS[name](client, ctx)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise PricingError(f"unexpected response ({type(exc).__name__}: {exc})") from None
        report = review_offers(result.offers, reference=self.snapshot.offers)
        dropped = Counter(result.dropped)
        dropped.update(r.reason for r in report.rejections if r.action != FLAGGED)
        if not report.kept:
            raise PricingError(f"{SOURCES[name].label} returned no usable offers")
        rejections = (*result.rejections, *report.rejections)
        return FetchResult(
            tuple(report.kept), dict(dropped), result.adjusted, result.detail, rejections
        )

    def _fallback(self, cached: CachedPrices | None) -> str:
        if cached is not None:
            return f"the prices cached {format_age(cached.age(self.now))} ago"
        snap = Part(SNAPSHOT, "", 0, snapshot_time(self.snapshot), ())
        return describe(snap, self.now, self.snapshot)

    def _risk_fallback(self) -> str:
        """What spot costs use when the advisor cannot be fetched: the snapshot has no
        interruption data, so it is the cached rates or the job's spot_allowance."""
        try:
            risk = read_risk(self.cache.risk_path())
        except GacostError:
            risk = None
        if risk is None:
            return NO_RISK_DATA
        age = max(timedelta(0), self.now - parse_timestamp(risk.fetched_at))
        return f"the interruption rates cached {format_age(age)} ago"

    def summary(self, outcomes: Sequence[Outcome], max_age: timedelta) -> str:
        """One line for a whole refresh: how many sources were refreshed, and for the
        others what is used instead (``--verbose`` lists each source's line)."""
        fetched = sum(1 for o in outcomes if o.status == FETCHED)
        counts = Counter(o.status for o in outcomes)
        parts = [f"{fetched} of {len(outcomes)} sources refreshed"]
        details = []
        if counts[FRESH]:
            details.append(f"{counts[FRESH]} cached within the max age "
                           f"({format_max_age(max_age)})")  # fmt: skip
        if counts[SKIPPED]:
            details.append(f"{counts[SKIPPED]} skipped for want of an API key")
        failed = [o for o in outcomes if o.failed]
        if failed:
            details.append(f"{len(failed)} failed")
        if details:
            parts[0] += f" ({', '.join(details)})"
        by_fallback: dict[str, list[str]] = {}
        for outcome in failed:
            by_fallback.setdefault(outcome.fallback, []).append(outcome.name)
        if by_fallback:
            uses = [f"{what} for {_some(names)}" for what, names in by_fallback.items()]
            parts.append("using " + ", and ".join(uses))
        return "; ".join(parts)

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


def _some(names: Sequence[str], shown: int = 3) -> str:
    """``"a, b and c"``, or ``"a, b, c and 20 more"``."""
    if len(names) <= shown:
        return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    return f"{', '.join(names[:shown])} and {len(names) - shown} more"
