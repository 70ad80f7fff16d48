"""A user's own price file (``--prices F``): read by column name, checked, explained.

The columns are those of the snapshot (:data:`pricing.snapshot.HEADER`) in any order;
``provider, region, instance_type, gpu, gpu_count`` and ``price_hour`` or ``spot_hour`` are
required, the rest may be left out (``source`` then names the file). Rows are not dropped
silently: a zero price counts as no price, and rows with none left, exact duplicates and
conflicting duplicates (same provider, region and instance type, other prices: the first
is kept) are each counted in one note. Every error names the file and says how to fix it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

from gacost.base.errors import DataError
from gacost.base.records import Offer
from gacost.pricing.snapshot import HEADER, PriceTable, parse_offers_csv

REQUIRED = ("provider", "region", "instance_type", "gpu", "gpu_count")
ZERO = "zero price (read as no price)"
NO_PRICE = "no price above 0 (row skipped)"
DUPLICATE = "exact duplicate (skipped)"
CONFLICT = "conflicting duplicate of an earlier row (same provider, region, instance; skipped)"


def file_fix(path: str) -> str:
    """The advice that ends every error about the user's file ``path``."""
    return (
        f"fix {path} (columns by name: {', '.join(HEADER)}; prices in USD per "
        "instance-hour) or leave out --prices to use the embedded prices"
    )


@dataclass(frozen=True)
class PriceFile:
    """The table read from a price file, and what was skipped or changed, per reason."""

    table: PriceTable
    counts: dict[str, int]

    def notes(self) -> list[str]:
        """One line per reason, with its count."""
        path = self.table.source.removeprefix("price file ")
        return [f"{path}: {n} row(s) with {reason}" for reason, n in sorted(self.counts.items())]


def read_price_file(path: str) -> PriceFile:
    """Read and check ``path``; :class:`DataError` when no usable offer is left."""
    fix = file_fix(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(f"{path}: price file not found; {fix}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read the price file ({exc}); {fix}") from None
    rows = _parse(text, path, fix)
    counts: Counter[str] = Counter()
    kept: list[Offer] = []
    seen: set[Offer] = set()
    first: dict[tuple[str, str, str], Offer] = {}
    for offer in rows:
        cleaned = _zero_is_none(offer, counts)
        if cleaned is None:
            continue
        key = (cleaned.provider, cleaned.region, cleaned.instance_type)
        if cleaned in seen:
            counts[DUPLICATE] += 1
            continue
        if key in first:
            counts[CONFLICT] += 1
            continue
        seen.add(cleaned)
        first[key] = cleaned
        kept.append(cleaned)
    if not kept:
        raise DataError(
            f"{path}: no row has a price above 0 ({len(rows)} row(s) read); put USD per "
            f"instance-hour in price_hour or spot_hour; {fix}"
        )
    dates = sorted({o.fetched_at for o in kept if o.fetched_at})
    table = PriceTable(tuple(kept), f"price file {path}", dates[-1] if dates else "unknown")
    return PriceFile(table, dict(counts))


def _parse(text: str, path: str, fix: str) -> list[Offer]:
    # the parser accepts a zero price (>= 0); zeros are counted by the caller
    return parse_offers_csv(text, path, fix=fix, required=REQUIRED)


def _zero_is_none(offer: Offer, counts: Counter[str]) -> Offer | None:
    price = None if offer.price_hour == 0 else offer.price_hour
    spot = None if offer.spot_hour == 0 else offer.spot_hour
    if (price, spot) != (offer.price_hour, offer.spot_hour):
        counts[ZERO] += 1
    if price is None and spot is None:
        counts[NO_PRICE] += 1
        return None
    return replace(offer, price_hour=price, spot_hour=spot)
