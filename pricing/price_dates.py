"""The date of the prices, apart from the day they were read.

A catalog copy read on 2026-12-02 may hold rates of 2025. Per source the snapshot records
(``snapshot.json``, ``price_dates``; researched and cited in ``data/prices/SOURCES.md``):

- ``prices_as_of``: the latest date on which these rates are known to have been the
  provider's (a dated page, pull request or check showing the same rates), or None where no
  source dates them (most catalogs: their store gives commit ids, not dates);
- ``not_before``: where known, the earliest day the copy can be from (None otherwise);
- ``outdated``: a dated check found the provider's public price different from the copy's;
- ``basis``: where each of these comes from.

An offer is **marked** as old when its source is ``outdated`` or its ``prices_as_of`` is
older than the threshold (:data:`DEFAULT_MAX_AGE`, ``$GACOST_PRICE_DATE_MAX_AGE`` or a
command's ``--price-age``). Offers not from the snapshot (a live fetch, a price file) are
dated by their ``fetched_at``: a live source reads the provider's current rates. Except a
live SkyPilot catalog of a cloud no scheduled job rewrites (:data:`HAND_MAINTAINED`): its
rows are as old as the last hand edit, which the file does not say, so they are undated.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from gacost.base.durations import parse_duration
from gacost.base.errors import DataError, JobSpecError
from gacost.base.records import Offer

DEFAULT_MAX_AGE = timedelta(days=180)
MAX_AGE_ENV = "GACOST_PRICE_DATE_MAX_AGE"
MARK = "!"
# Clouds whose skypilot-catalog v8 file no scheduled workflow rewrites: the stored
# skypilot-org/skypilot-catalog has .github/workflows/update-<cloud>-catalog.yml (every 7 h)
# for aws, cudo, daytona, gcp, hyperbolic, jarvislabs, lambda, lium, mithril, nebius, oci,
# runpod, seeweb, shadeform, vast and verda, none for these (read 2026-12-03).
HAND_MAINTAINED = frozenset({"azure", "hyperstack", "primeintellect", "spheron", "yotta"})
LIVE_CATALOG = "skypilot-catalog"  # the label prefix of a fetched SkyPilot catalog
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_FIELDS = ("source", "prices_as_of", "not_before", "outdated", "basis")


@dataclass(frozen=True)
class PriceDate:
    """What is known about the date of one source's prices (module docstring)."""

    source: str  # the snapshot's source label of the provider's rows
    prices_as_of: str | None = None
    not_before: str | None = None
    outdated: bool = False
    basis: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (``snapshot.json``)."""
        return {
            "source": self.source, "prices_as_of": self.prices_as_of,
            "not_before": self.not_before, "outdated": self.outdated, "basis": self.basis,
        }  # fmt: skip


def parse_price_dates(data: object, name: str, fix: str) -> dict[str, PriceDate]:
    """``{provider: PriceDate}`` from ``{provider: {source, prices_as_of, ...}}``; a bad
    field raises :class:`DataError` naming the provider and the field, ending in ``fix``."""
    if not isinstance(data, dict):
        raise DataError(f"{name}: 'price_dates' must be an object of providers; {fix}")
    out = {}
    for provider, entry in data.items():
        where = f"{name}: price_dates.{provider}"
        if not isinstance(entry, dict):
            raise DataError(f"{where}: must be an object; {fix}")
        unknown = sorted(set(entry) - set(_FIELDS))
        if unknown:
            raise DataError(f"{where}: unknown field(s) {', '.join(unknown)}; {fix}")
        source = entry.get("source")
        if not isinstance(source, str) or not source:
            raise DataError(f"{where}.source: must be the provider's source label; {fix}")
        days = {k: _day(entry.get(k), f"{where}.{k}", fix) for k in ("prices_as_of", "not_before")}
        outdated = entry.get("outdated", False)
        if not isinstance(outdated, bool):
            raise DataError(f"{where}.outdated: must be true or false; {fix}")
        basis = entry.get("basis", "")
        if not isinstance(basis, str):
            raise DataError(f"{where}.basis: must be text; {fix}")
        out[str(provider)] = PriceDate(source, days["prices_as_of"], days["not_before"],
                                       outdated, basis)
    return out


def _day(value: object, where: str, fix: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, str) and _DAY.match(value):
        try:
            date.fromisoformat(value)
        except ValueError:
            pass
        else:
            return value
    raise DataError(f"{where}: {str(value)[:40]!r} is not a date like 2026-12-02 or null; {fix}")


def max_age_from(text: str | None = None) -> timedelta:
    """The threshold: ``text`` (a flag), else ``$GACOST_PRICE_DATE_MAX_AGE``, else 180 days.
    A bare number is days. A bad flag raises :class:`JobSpecError`, a bad variable
    :class:`DataError`, each naming where the value came from."""
    if text is not None:
        try:
            return parse_duration(text, default_unit="d", allow_zero=False)
        except ValueError as exc:
            raise JobSpecError(f"--price-age: {exc}; give e.g. 180d or 26w") from None
    value = os.environ.get(MAX_AGE_ENV, "").strip()
    if not value:
        return DEFAULT_MAX_AGE
    try:
        return parse_duration(value, default_unit="d", allow_zero=False)
    except ValueError as exc:
        raise DataError(f"${MAX_AGE_ENV}: {exc}; set it to e.g. 180d or unset it") from None


@dataclass(frozen=True)
class OfferDate:
    """The price date of one offer, as the reports show it."""

    prices_as_of: str | None  # None: undated
    read: str  # the day the prices were read (fetched_at's day)
    age_days: int | None
    outdated: bool  # a check found the provider's price different
    marked: bool  # outdated, or older than the threshold

    def fields(self) -> dict[str, Any]:
        """The JSON/CSV fields of an offer row."""
        return {
            "prices_as_of": self.prices_as_of, "price_age_days": self.age_days,
            "price_outdated": self.outdated, "price_old": self.marked,
        }  # fmt: skip


@dataclass(frozen=True)
class PriceDating:
    """Dates offers against ``now`` with a threshold, from a snapshot's ``price_dates``."""

    dates: Mapping[str, PriceDate] = field(default_factory=dict)
    now: datetime | None = None
    max_age: timedelta = DEFAULT_MAX_AGE

    def entry(self, offer: Offer) -> PriceDate | None:
        """The snapshot's record for the offer's source (None: a live or file price)."""
        found = self.dates.get(offer.provider)
        return found if found is not None and found.source == offer.source else None

    def of(self, offer: Offer) -> OfferDate:
        """The offer's price date, age and mark."""
        read = offer.fetched_at[:10]
        found = self.entry(offer)
        if found is None:
            as_of: str | None = read if _DAY.match(read) else None
            if offer.provider in HAND_MAINTAINED and offer.source.startswith(LIVE_CATALOG):
                as_of = None
            outdated = False
        else:
            as_of, outdated = found.prices_as_of, found.outdated
        age = None
        if as_of is not None and self.now is not None:
            age = max(0, (self.now.date() - date.fromisoformat(as_of)).days)
        old = age is not None and age > self.max_age.total_seconds() / 86400
        return OfferDate(as_of, read, age, outdated, outdated or old)

    def legend(self) -> str:
        """The one-line legend of :data:`MARK`."""
        days = self.max_age.total_seconds() / 86400
        return (f"{MARK} = a price known to differ from the provider's page now, or last "
                f"confirmed over {days:g} days ago (docs/pricing.md)")

    def summary(self, offers: Iterable[Offer], read: str) -> str | None:
        """``"price dates (not the day read): nebius 2025-08-12 (outdated), runpod after
        2025-09-26 (outdated); undated (cudo, ...): read 2026-12-02, ..."`` for the snapshot
        providers of ``offers``; None if ``offers`` holds none."""
        dated: dict[str, str] = {}
        undated: set[str] = set()
        for offer in offers:
            found = self.entry(offer)
            if found is None or offer.provider in dated or offer.provider in undated:
                continue
            when = found.prices_as_of or (f"after {found.not_before}" if found.not_before
                                          else "undated")
            if when == "undated" and not found.outdated:
                undated.add(offer.provider)
                continue
            dated[offer.provider] = f"{offer.provider} {when}{' (outdated)' * found.outdated}"
        if not dated and not undated:
            return None
        text = ", ".join(dated[p] for p in sorted(dated))
        if undated:
            rest = ", ".join(sorted(undated))
            sep = "; " if text else ""
            text += f"{sep}undated ({rest}): read {read}, the catalogs give no date"
        return f"price dates (not the day read): {text}"


def marked(price: str, stamp: OfferDate) -> str:
    """A price cell with :data:`MARK` appended when the offer is marked."""
    return f"{price}{MARK}" if stamp.marked and price else price
