"""``gacost prices``: the hourly rates gacost uses, and refreshing them from live sources.

By default one line per GPU (the market view of :mod:`gacost.pricing.market`); ``--gpu``
or ``--offers`` lists the offers themselves, ``--compare`` one GPU's offers cheapest first.
"""

from __future__ import annotations

import argparse
import os
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from tabulate import tabulate

from gacost.base.clock import utc_now
from gacost.base.errors import DataError
from gacost.base.records import Offer
from gacost.commands.formats import (
    Column,
    add_format_flag,
    fit_width,
    listing,
    plain,
    short_region,
    table_text,
)
from gacost.commands.inputs import add_price_age_flag, note, price_table, warn
from gacost.pricing.cache import (
    PriceCache,
    format_age,
    max_age_from_env,
    parse_age,
    parse_timestamp,
)
from gacost.pricing.market import GpuMarket, spot_per_gpu_hour, summarise
from gacost.pricing.price_dates import MARK, PriceDating, max_age_from
from gacost.pricing.select import check_filters, parse_gpu_query, select_offers
from gacost.pricing.snapshot import (
    PriceTable,
    load_snapshot,
    read_rejections,
    read_rejections_file,
)
from gacost.pricing.sources import SOURCES
from gacost.pricing.spot_advisor import read_risk


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of ``gacost prices`` (its parser made by :mod:`gacost.commands.cli`)."""
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--gpu",
        action="append",
        default=[],
        help="only this GPU, family or NAME:COUNT (e.g. B200, A100, A100:8), listing its "
        "offers; repeatable",
    )
    which.add_argument(
        "--compare", metavar="GPU", help="one GPU across providers and regions, cheapest first"
    )
    p.add_argument(
        "--provider",
        action="append",
        default=[],
        help="only this provider (and, with --refresh/--export, its sources); repeatable",
    )
    p.add_argument(
        "--region",
        action="append",
        default=[],
        help="only regions starting with this (e.g. us-east-1, europe); repeatable",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--prices", metavar="F", help="a price file instead of cache + snapshot")
    mode.add_argument(
        "--refresh",
        action="store_true",
        help="fetch the sources whose cache is older than --max-age first (network)",
    )
    mode.add_argument(
        "--export",
        metavar="DIR",
        type=Path,
        help="fetch every source now and write DIR/snapshot.csv and snapshot.json "
        "(`--export data/prices` regenerates the embedded snapshot)",
    )
    mode.add_argument("--list-sources", action="store_true", help="list the live sources")
    mode.add_argument(
        "--rejected",
        action="store_true",
        help="list every row the quality rules dropped, changed or flagged, with the reason",
    )
    p.add_argument(
        "--source",
        action="append",
        default=[],
        metavar="NAME",
        help="refresh or export only this source (implies --refresh); repeatable",
    )
    p.add_argument(
        "--max-age",
        type=_age,
        metavar="AGE",
        help="refresh caches older than this, e.g. 6h, 2d; 0 fetches every source (default "
        "$GACOST_PRICE_MAX_AGE or 24h)",
    )
    p.add_argument(
        "--deadline",
        type=_seconds,
        metavar="TIME",
        help="one time limit for the whole refresh or export, e.g. 60s, 2m (default "
        "$GACOST_REFRESH_DEADLINE or 60s)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="store a fetched table even when it has under half the offers it replaces",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="with --refresh: exit with status 4, listing nothing, when a source could not "
        "be refreshed (for scripts)",
    )
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="with --refresh: one line per source (what was fetched, or why not) before the "
        "summary",
    )
    p.add_argument(
        "--offers",
        action="store_true",
        help="one row per offer instead of one line per GPU (the default with --gpu)",
    )
    add_format_flag(p)
    p.add_argument(
        "--wide", action="store_true", help="every column (memory, host, source, time)"
    )
    add_price_age_flag(p)
    p.set_defaults(run=run, prices_parser=p)


def _age(text: str) -> timedelta:
    try:
        return parse_age(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _seconds(text: str) -> timedelta:
    try:
        value = parse_age(text, default_unit="s")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value.total_seconds() <= 0:
        raise argparse.ArgumentTypeError(f"must be above 0 s, got {text!r}")
    return value


def run(args: argparse.Namespace) -> str:
    """List, compare, refresh or export offers, or list the rejected rows."""
    if args.prices and args.source:
        args.prices_parser.error("argument --source: not allowed with argument --prices")
    if args.list_sources:
        return _list_sources(args.format)
    if args.export is not None:
        return _export(args)
    if args.rejected:
        return _rejected(args)
    table = price_table(
        args.prices,
        refresh=args.refresh or bool(args.source),
        sources=args.source,
        providers=args.provider,
        max_age=args.max_age,
        force=args.force,
        deadline=args.deadline,
        verbose=args.verbose,
        strict=args.strict,
    )
    check_filters(table.offers, args.provider, args.region)
    args.dating = PriceDating(table.price_dates, utc_now(), max_age_from(args.price_age))
    if args.compare:
        return _compare(table, args)
    queries = [parse_gpu_query(g, table.offers) for g in args.gpu]
    offers = select_offers(
        table.offers, gpus=queries, providers=args.provider, regions=args.region
    )
    if not (args.offers or args.gpu):
        return _market(summarise(offers), args, table)
    offers.sort(key=lambda o: (o.gpu, _or_inf(o.per_gpu_hour), o.provider, o.region))
    rows = [_offer_row(o, args.dating) for o in offers]
    return _render(rows, args, f"{len(rows)} offers", table, LIST_COLUMNS, offers)


def _market(markets: list[GpuMarket], args: argparse.Namespace, table: PriceTable) -> str:
    """One line per GPU: memory, counts sold, cheapest on-demand and spot, breadth."""
    rows = [_market_row(m, args.dating) for m in markets]
    offers = sum(m.offers for m in markets)
    providers = len({r for m in markets for r in m.providers})
    what = f"{len(rows)} GPUs, {offers} offers from {providers} providers"

    def text() -> str:
        shown = [_market_cells(r, args.wide) for r in rows]
        columns = MARKET_COLUMNS + (MARKET_WIDE if args.wide else [])
        footer = (
            f"{what}, as of {table.as_of}; cheapest USD per GPU-hour (instance $/h / GPUs)\n"
            "`gacost prices --gpu NAME` lists a GPU's offers, --offers every offer; --format "
            "json names the sources"
        )
        cheapest = [b.offer for m in markets for b in (m.on_demand, m.spot) if b is not None]
        dates = _date_lines(args.dating, cheapest, table.as_of)
        return f"{table_text(shown, columns, compact=True)}\n\n{footer}{dates}"

    flat = [{**r, "counts": " ".join(map(_count, r["counts"]))} for r in rows]
    return listing(args.format, rows, "gpus", text, head=_meta(table, what, args.dating),
                   csv_rows=flat)


def _date_lines(dating: PriceDating, offers: list[Offer], read: str) -> str:
    """The price dates of ``offers``' providers and, if one is marked, the legend, each
    on a line of its own after a newline ("" when there is nothing to say)."""
    lines = [dating.summary(offers, read) or ""]
    if any(dating.of(o).marked for o in offers):
        lines.append(dating.legend())
    return "".join(f"\n{line}" for line in fit_width([line for line in lines if line]))


def _market_row(m: GpuMarket, dating: PriceDating) -> dict[str, Any]:
    """The summary fields of one GPU (flat; numbers stay numbers) for json and csv; a
    cheapest offer's price date as ``<kind>_prices_as_of`` and ``<kind>_price_old``."""
    row: dict[str, Any] = {
        "gpu": m.gpu, "gpu_memory_gib": m.memory_gib, "counts": list(m.counts),
    }  # fmt: skip
    for kind, best in (("on_demand", m.on_demand), ("spot", m.spot)):
        o = best.offer if best else None
        row[f"{kind}_per_gpu_hour"] = _round(best.per_gpu_hour) if best else None
        row[f"{kind}_provider"] = o.provider if o else None
        row[f"{kind}_region"] = o.region if o else None
        row[f"{kind}_instance"] = o.instance_type if o else None
        row[f"{kind}_count"] = o.gpu_count if o else None
        stamp = dating.of(o) if o else None
        row[f"{kind}_prices_as_of"] = stamp.prices_as_of if stamp else None
        row[f"{kind}_price_old"] = stamp.marked if stamp else None
    row["providers"], row["offers"] = len(m.providers), m.offers
    return row


def _counts_text(counts: list[float], wide: bool) -> str:
    """``1,2,4,8``; a longer list as its range (``1-16``) unless ``wide``."""
    text = ",".join(map(_count, counts))
    if wide or len(text) <= _SHORT_MARKET["counts"]:
        return text
    return f"{_count(counts[0])}-{_count(counts[-1])}"


def _market_cells(row: dict[str, Any], wide: bool) -> dict[str, Any]:
    out = dict(row)
    out["counts"] = _counts_text(row["counts"], wide)
    for kind in ("on_demand", "spot"):
        if row[f"{kind}_price_old"]:
            out[f"{kind}_per_gpu_hour"] = f"{_money(row[f'{kind}_per_gpu_hour'])}{MARK}"
        region = row[f"{kind}_region"]
        where = f"{row[f'{kind}_provider']}/{region if wide else short_region(region)}"
        out[f"{kind}_at"] = where if row[f"{kind}_provider"] else ""
    return _short_row(out, wide, _SHORT_MARKET)


def _compare(table: PriceTable, args: argparse.Namespace) -> str:
    """Offers of one GPU (or family), cheapest on-demand per GPU-hour first."""
    query = parse_gpu_query(args.compare, table.offers)
    offers = select_offers(
        table.offers, gpus=[query], providers=args.provider, regions=args.region
    )
    offers.sort(key=lambda o: (_or_inf(o.per_gpu_hour), _or_inf(spot_per_gpu_hour(o)), o.provider))
    rows = [_offer_row(o, args.dating) for o in offers]
    what = (
        f"{len(rows)} offers for {', '.join(query.names)}, cheapest on-demand per GPU-hour first"
    )
    return _render(rows, args, what, table, COMPARE_COLUMNS, offers)


def _rejected(args: argparse.Namespace) -> str:
    """The rows the quality rules acted on: the snapshot's, then each cached source's."""
    cache = PriceCache()
    items = [("snapshot", r) for r in read_rejections()]
    for name in SOURCES:
        path = cache.rejected_path(name)
        if path.is_file():
            items += [(name, r) for r in read_rejections_file(path)]
    queries = [parse_gpu_query(g, [r.offer for _, r in items]) for g in args.gpu]
    chosen = {
        id(o)
        for o in select_offers(
            [r.offer for _, r in items], gpus=queries, providers=args.provider,
            regions=args.region,
        )
    }  # fmt: skip
    rows = [
        {"reason": r.reason, "action": r.action, "from": origin, **_offer_row(r.offer)}
        for origin, r in items
        if id(r.offer) in chosen
    ]
    counts = Counter(row["reason"] for row in rows)

    def text() -> str:
        columns = REJECTED_COLUMNS if not args.wide else REJECTED_COLUMNS + WIDE_EXTRA
        shown = table_text([_short_row(r, args.wide, _SHORT_REJECTED) for r in rows], columns)
        summary = "\n".join(f"{n:>5}  {reason}" for reason, n in counts.most_common())
        return f"{shown}\n\n{len(rows)} rows rejected, changed or flagged:\n{summary}"

    return listing(args.format, rows, "rejected", text, tail={"counts": dict(counts)})


def _export(args: argparse.Namespace) -> str:
    # the network layer, lazily
    from gacost.pricing.fetch.refresh import Refresher, deadline_from_env, select_sources

    seconds = args.deadline.total_seconds() if args.deadline else deadline_from_env()
    refresher = Refresher(
        cache=PriceCache(),
        snapshot=load_snapshot(),
        now=utc_now(),
        env=os.environ,
        warn=warn,
        note=note,
        deadline_s=seconds,
    )
    return "\n".join(refresher.export(args.export, select_sources(args.source, args.provider)))


def _list_sources(fmt: str) -> str:
    cache, now = PriceCache(), utc_now()
    max_age = max_age_from_env()
    rows = [
        {
            "source": name,
            "providers": ",".join(info.providers),
            "default": "yes" if info.default else "opt-in",
            "key": _key_state(info.key_env),
            "cache": _cache_state(cache, name, now, max_age),
            "notes": info.notes,
        }
        for name, info in SOURCES.items()
    ]
    return listing(fmt, rows, "sources", lambda: tabulate(rows, headers="keys")
                   + f"\n\ncache: {cache.root}", tail={"cache_dir": str(cache.root)})


def _key_state(key_env: str | None) -> str:
    if key_env is None:
        return "none needed"
    return f"${key_env} " + ("set" if os.environ.get(key_env, "").strip() else "not set")


def _cache_state(cache: PriceCache, name: str, now: datetime, max_age: timedelta) -> str:
    try:
        if SOURCES[name].kind == "risk":
            risk = read_risk(cache.risk_path())
            if risk is None:
                return "none"
            age = max(timedelta(0), now - parse_timestamp(risk.fetched_at))
            return f"{format_age(age)} old" + (" (stale)" if age > max_age else "")
        cached = cache.read(name)
    except DataError:
        return "corrupt"
    if cached is None:
        return "none"
    age = cached.age(now)
    return f"{format_age(age)} old" + (" (stale)" if age > max_age else "")


def _offer_row(o: Offer, dating: PriceDating | None = None) -> dict[str, Any]:
    row = {
        "gpu": o.gpu, "count": o.gpu_count, "provider": o.provider, "region": o.region,
        "instance": o.instance_type, "on_demand_hour": o.price_hour, "spot_hour": o.spot_hour,
        "per_gpu_hour": _round(o.per_gpu_hour), "spot_per_gpu_hour": _round(spot_per_gpu_hour(o)),
        "gpu_memory_gib": o.gpu_memory_gib, "vcpus": o.vcpus, "ram_gib": o.ram_gib,
        "source": o.source, "fetched_at": o.fetched_at,
        "interruptions_per_hour": o.interruption_per_hour,
    }  # fmt: skip
    if dating is not None:
        row.update(dating.of(o).fields())
    return row


def _money(v: Any) -> str:
    if isinstance(v, str):  # a marked price, "3.290!"
        return v
    return "" if v is None else f"{v:.3f}"


def _marked_row(row: dict[str, Any]) -> dict[str, Any]:
    """The row with its first price cell ending in the old-price mark, if marked."""
    if not row.get("price_old"):
        return row
    key = "on_demand_hour" if row.get("on_demand_hour") is not None else "spot_hour"
    return {**row, key: f"{_money(row[key])}{MARK}"}


def _rate(v: Any) -> str:
    return "" if v is None else f"{v:.5f}"


def _count(v: Any) -> str:
    return "" if v is None else f"{v:g}"


# (key, header, formatter): the default table fits 120 columns; --wide adds WIDE_EXTRA.
LIST_COLUMNS: list[Column] = [
    ("gpu", "GPU", plain), ("count", "n", _count), ("provider", "provider", plain),
    ("region", "region", plain), ("instance", "instance", plain),
    ("on_demand_hour", "$/h", _money), ("spot_hour", "spot $/h", _money),
    ("per_gpu_hour", "$/GPU-h", _money),
]  # fmt: skip
COMPARE_COLUMNS: list[Column] = [
    ("gpu", "GPU", plain), ("provider", "provider", plain), ("region", "region", plain),
    ("instance", "instance", plain), ("count", "n", _count), ("per_gpu_hour", "$/GPU-h", _money),
    ("spot_per_gpu_hour", "spot $/GPU-h", _money), ("on_demand_hour", "$/h", _money),
]  # fmt: skip
REJECTED_COLUMNS: list[Column] = [
    ("action", "action", plain), ("reason", "reason", plain), ("provider", "provider", plain),
    ("region", "region", plain), ("instance", "instance", plain),
    ("on_demand_hour", "$/h", _money),
]  # fmt: skip
WIDE_EXTRA: list[Column] = [
    ("gpu_memory_gib", "GiB/GPU", _count), ("vcpus", "vCPUs", _count),
    ("ram_gib", "RAM GiB", _count), ("interruptions_per_hour", "spot int./h", _rate),
    ("source", "source", plain), ("fetched_at", "fetched", plain),
]  # fmt: skip
MARKET_COLUMNS: list[Column] = [
    ("gpu", "GPU", plain), ("gpu_memory_gib", "GiB", _count), ("counts", "GPUs sold", plain),
    ("on_demand_per_gpu_hour", "$/GPU-h", _money), ("on_demand_at", "cheapest at", plain),
    ("spot_per_gpu_hour", "spot $/GPU-h", _money), ("spot_at", "cheapest spot at", plain),
    ("providers", "providers", _count), ("offers", "offers", _count),
]  # fmt: skip
MARKET_WIDE: list[Column] = [
    ("on_demand_instance", "on-demand instance", plain), ("spot_instance", "spot instance", plain),
]  # fmt: skip
# Cell widths of the default table (longer names end in "~"; --wide shows them whole).
_SHORT = {"gpu": 14, "provider": 14, "region": 18, "instance": 26}
# 14 + 5 + 10 + 7 + 20 + 12 + 20 + 9 + 6 cells and 8 gaps of 2: 119 columns at most
_SHORT_MARKET = {"gpu": 14, "counts": 10, "on_demand_at": 20, "spot_at": 20}
_SHORT_REJECTED = {"reason": 36, "provider": 10, "region": 14, "instance": 20}


def _short_row(
    row: dict[str, Any], wide: bool, widths: dict[str, int] = _SHORT
) -> dict[str, Any]:
    if wide:
        return row
    out = dict(row)
    for key, width in widths.items():
        value = out.get(key)
        if isinstance(value, str) and len(value) > width:
            out[key] = value[: width - 1] + "~"
    return out


def _render(
    rows: list[dict[str, Any]],
    args: argparse.Namespace,
    what: str,
    table: PriceTable,
    columns: list[Column],
    offers: list[Offer],
) -> str:
    def text() -> str:
        shown = columns + WIDE_EXTRA if args.wide else columns
        providers = len({r["provider"] for r in rows})
        footer = (
            f"{what}\nfrom {providers} providers, as of {table.as_of}; USD per hour "
            "(--format json names the sources, --wide shows every column)"
        )
        drawn = table_text([_short_row(_marked_row(r), args.wide) for r in rows], shown)
        return f"{drawn}\n\n{footer}{_date_lines(args.dating, offers, table.as_of)}"

    return listing(args.format, rows, "offers", text, head=_meta(table, what, args.dating))


def _meta(table: PriceTable, what: str, dating: PriceDating) -> dict[str, Any]:
    return {
        "as_of": table.as_of, "source": table.source,
        "sources": list(table.sources) or [table.source], "what": what,
        "price_dates": {p: d.as_dict() for p, d in sorted(table.price_dates.items())},
        "price_age_limit_days": dating.max_age.total_seconds() / 86400,
    }  # fmt: skip


def _or_inf(value: float | None) -> float:
    return float("inf") if value is None else value


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
