"""``gacost prices``: the hourly rates gacost uses, and refreshing them from live sources."""

from __future__ import annotations

import argparse
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from tabulate import tabulate

from gacost.base import gpu_table
from gacost.base.errors import DataError
from gacost.base.records import Offer
from gacost.commands.inputs import note, price_table, warn
from gacost.pricing.cache import PriceCache, format_age, max_age_from_env, parse_age
from gacost.pricing.snapshot import PriceTable, load_snapshot
from gacost.pricing.sources import SOURCES
from gacost.reports.formats import rows_csv


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the subcommand."""
    p = sub.add_parser("prices", help="list GPU offers and hourly rates; refresh them")
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--gpu", action="append", default=[], help="only this GPU (or family); repeatable"
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
        help="refresh caches older than this, e.g. 6h, 2d, 0 (default $GACOST_PRICE_MAX_AGE "
        "or 24h)",
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
    p.add_argument("--format", choices=("table", "csv"), default="table")
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
    """List, compare, refresh or export offers."""
    if args.prices and args.source:
        args.prices_parser.error("argument --source: not allowed with argument --prices")
    if args.list_sources:
        return _list_sources(args.format)
    if args.export is not None:
        return _export(args)
    table = price_table(
        args.prices,
        refresh=args.refresh or bool(args.source),
        sources=args.source,
        providers=args.provider,
        max_age=args.max_age,
        force=args.force,
        deadline=args.deadline,
    )
    if args.compare:
        return _compare(table, args)
    gpus = set(gpu_table.resolve_gpus(args.gpu)) if args.gpu else None
    offers = _filtered(table, gpus, args.provider)
    offers.sort(key=lambda o: (o.gpu, o.per_gpu_hour or float("inf"), o.provider, o.region))
    rows = [
        {
            "gpu": o.gpu, "count": o.gpu_count, "provider": o.provider, "region": o.region,
            "instance": o.instance_type, "on_demand_hour": o.price_hour, "spot_hour": o.spot_hour,
            "per_gpu_hour": _round(o.per_gpu_hour),
        }
        for o in offers
    ]  # fmt: skip
    return _render(rows, args.format, f"{len(rows)} offers", table)


def _compare(table: PriceTable, args: argparse.Namespace) -> str:
    """Offers of one GPU (or family), cheapest on-demand per GPU-hour first."""
    gpus = gpu_table.resolve_gpus([args.compare])
    offers = _filtered(table, set(gpus), args.provider)
    offers.sort(key=lambda o: (_or_inf(o.per_gpu_hour), _or_inf(_spot_per_gpu(o)), o.provider))
    rows = [
        {
            "gpu": o.gpu, "provider": o.provider, "region": o.region, "instance": o.instance_type,
            "gpus": o.gpu_count, "per_gpu_hour": _round(o.per_gpu_hour),
            "spot_per_gpu_hour": _round(_spot_per_gpu(o)), "instance_hour": o.price_hour,
            "fetched_at": o.fetched_at,
        }
        for o in offers
    ]  # fmt: skip
    what = f"{len(rows)} offers for {', '.join(gpus)}, cheapest on-demand per GPU-hour first"
    return _render(rows, args.format, what, table)


def _export(args: argparse.Namespace) -> str:
    # the network layer, lazily
    from gacost.pricing.refresh import Refresher, deadline_from_env, select_sources

    seconds = args.deadline.total_seconds() if args.deadline else deadline_from_env()
    refresher = Refresher(
        cache=PriceCache(),
        snapshot=load_snapshot(),
        now=datetime.now(timezone.utc),
        env=os.environ,
        warn=warn,
        note=note,
        deadline_s=seconds,
    )
    return "\n".join(refresher.export(args.export, select_sources(args.source, args.provider)))


def _list_sources(fmt: str) -> str:
    cache, now = PriceCache(), datetime.now(timezone.utc)
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
    if fmt == "csv":
        return rows_csv(rows).rstrip("\n")
    return tabulate(rows, headers="keys") + f"\n\ncache: {cache.root}"


def _key_state(key_env: str | None) -> str:
    if key_env is None:
        return "none needed"
    return f"${key_env} " + ("set" if os.environ.get(key_env, "").strip() else "not set")


def _cache_state(cache: PriceCache, name: str, now: datetime, max_age: timedelta) -> str:
    try:
        cached = cache.read(name)
    except DataError:
        return "corrupt"
    if cached is None:
        return "none"
    age = cached.age(now)
    return f"{format_age(age)} old" + (" (stale)" if age > max_age else "")


def _filtered(table: PriceTable, gpus: set[str] | None, providers: list[str]) -> list[Offer]:
    wanted = {p.lower() for p in providers} or None
    return [
        o
        for o in table.offers
        if (gpus is None or o.gpu in gpus) and (wanted is None or o.provider in wanted)
    ]


def _render(rows: list[dict[str, Any]], fmt: str, what: str, table: PriceTable) -> str:
    if fmt == "csv":
        return rows_csv(rows).rstrip("\n")
    return tabulate(rows, headers="keys") + (
        f"\n\n{what}; {table.source}, as of {table.as_of}. Prices are USD per instance-hour "
        "unless marked per GPU."
    )


def _spot_per_gpu(offer: Offer) -> float | None:
    if offer.spot_hour is None or offer.gpu_count <= 0:
        return None
    return offer.spot_hour / offer.gpu_count


def _or_inf(value: float | None) -> float:
    return float("inf") if value is None else value


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
