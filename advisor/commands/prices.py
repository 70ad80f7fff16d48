"""``gacost prices``: the hourly rates gacost uses."""

from __future__ import annotations

import argparse

from tabulate import tabulate

from advisor import catalog
from advisor.render import rows_csv
from advisor.commands.common import price_table


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the subcommand."""
    p = sub.add_parser("prices", help="list GPU offers and hourly rates")
    p.add_argument("--gpu", action="append", default=[], help="only this GPU (or family); repeatable")
    p.add_argument("--provider", action="append", default=[], help="only this provider; repeatable")
    p.add_argument("--prices", metavar="F", help="a price file instead of the embedded snapshot")
    p.add_argument("--format", choices=("table", "csv"), default="table")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> str:
    """Render the offers, cheapest per GPU first."""
    table = price_table(args.prices)
    gpus = set(catalog.resolve_gpus(args.gpu)) if args.gpu else None
    providers = {p.lower() for p in args.provider} or None
    offers = [
        o for o in table.offers
        if (gpus is None or o.gpu in gpus) and (providers is None or o.provider in providers)
    ]
    offers.sort(key=lambda o: (o.gpu, o.per_gpu_hour or float("inf"), o.provider, o.region))
    rows = [
        {
            "gpu": o.gpu, "count": o.gpu_count, "provider": o.provider, "region": o.region,
            "instance": o.instance_type, "on_demand_hour": o.price_hour, "spot_hour": o.spot_hour,
            "per_gpu_hour": None if o.per_gpu_hour is None else round(o.per_gpu_hour, 4),
        }
        for o in offers
    ]
    if args.format == "csv":
        return rows_csv(rows).rstrip("\n")
    return tabulate(rows, headers="keys") + (
        f"\n\n{len(rows)} offers; {table.source}, as of {table.as_of}. "
        "Prices are USD per instance-hour."
    )
