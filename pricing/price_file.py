"""A user's own price file (``--prices F``): read by column name, checked, explained.

The columns are those of the snapshot (:data:`pricing.snapshot.HEADER`) in any order;
``provider, region, instance_type, gpu, gpu_count`` and ``price_hour`` or ``spot_hour`` are
required, the rest may be left out (``source`` then names the file). The file is read as
every input file is (:func:`gacost.base.inputfile.read_text`: a regular UTF-8 file of at
most :data:`~gacost.pricing.snapshot.MAX_PRICE_FILE_BYTES`), its rows parsed as the
snapshot's are. Rows are not dropped silently: a zero price counts as no price, and rows
with none left, exact duplicates and conflicting duplicates (the quality rules' one rule,
:func:`gacost.pricing.quality.drop_duplicates`: the same offer, other fields; the first is
kept) are each counted in one note. Every error names the file and says how to fix it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from gacost.base.errors import DataError
from gacost.base.inputfile import read_text
from gacost.base.records import Offer
from gacost.pricing import quality
from gacost.pricing.snapshot import HEADER, MAX_PRICE_FILE_BYTES, PriceTable, parse_offers_csv

REQUIRED = ("provider", "region", "instance_type", "gpu", "gpu_count")
ZERO = "zero price (read as no price)"
NO_PRICE = "no price above 0 (row skipped)"
DUPLICATE = "exact duplicate (skipped)"
CONFLICT = f"conflicting duplicate of an earlier row ({quality.SAME_OFFER}; skipped)"


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
    rows = _parse(read_text(path, "--prices", DataError, MAX_PRICE_FILE_BYTES), path, fix)
    counts: Counter[str] = Counter()
    priced = [o for o in (_zero_is_none(offer, counts) for offer in rows) if o is not None]
    duplicates: list[quality.Rejection] = []
    kept = quality.drop_duplicates(priced, duplicates)
    for dropped in duplicates:
        counts[DUPLICATE if dropped.reason == quality.DUPLICATE else CONFLICT] += 1
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
