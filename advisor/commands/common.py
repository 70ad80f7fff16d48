"""Helpers shared by the command modules."""

from __future__ import annotations

from pricing.snapshot import PriceTable, load_snapshot, read_offers_csv


def price_table(path: str | None) -> PriceTable:
    """The offers of a price file in the snapshot CSV format, or the embedded snapshot."""
    if path is None:
        return load_snapshot()
    offers = read_offers_csv(path)
    dates = sorted({o.fetched_at for o in offers if o.fetched_at})
    return PriceTable(offers=tuple(offers), source=f"price file {path}",
                      as_of=dates[-1] if dates else "unknown")
