"""``gacost compare --job F [--gpu G]``: one GPU at every provider, and break-even ratios."""

from __future__ import annotations

import argparse
import json

from gacost.advisor.compare import compare
from gacost.base.clock import utc_now
from gacost.commands.inputs import add_common, load_inputs, number, trl_notes
from gacost.commands.recommend import add_price_age_flag
from gacost.pricing.price_dates import PriceDating, max_age_from
from gacost.reports.compare import comparison_dict, render_text, row_dict
from gacost.reports.formats import rows_csv


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the subcommand."""
    p = sub.add_parser("compare", help="price one GPU at every provider; GPU break-even matrix")
    add_common(p)
    p.add_argument("--gpu", metavar="G", help="the GPU to compare (default: the recommended one)")
    p.add_argument("--top", default="10", metavar="N",
                   help="show the N cheapest offers (default 10; json and csv carry every one)")
    p.add_argument("--wide", action="store_true",
                   help="every column (instance, time source, full region names) on unwrapped "
                        "lines; the default fits 120 columns")
    add_price_age_flag(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> str:
    """Compute and render the comparison."""
    top = int(number("--top", args.top, integer=True, high=1_000_000))
    inputs = load_inputs(args)
    job, table, profiles = inputs.job, inputs.table, inputs.profiles
    allowance = job.spot_allowance if inputs.allowance is None else inputs.allowance
    c = compare(job, table.offers, profiles, gpu=args.gpu, spot=args.spot,
                spot_allowance=allowance)
    dating = PriceDating(table.price_dates, utc_now(), max_age_from(args.price_age))
    if args.format == "json":
        out = comparison_dict(c, dating)
        out["prices"] = {"source": table.source, "as_of": table.as_of,
                         "price_age_limit_days": dating.max_age.total_seconds() / 86400}
        if inputs.trl is not None:
            out["trl_config"] = inputs.trl.summary()
        return json.dumps(out, indent=2)
    rows = [row_dict(p, c.spread.low, dating) for p in c.rows]
    if args.format == "csv":
        return rows_csv(rows).rstrip("\n")
    text = render_text(c, rows, allowance, f"{table.source}, as of {table.as_of}", top=top,
                       wide=args.wide, dating=dating, read=table.as_of)
    return "\n".join([text, *trl_notes(inputs.trl)])
