"""``gacost recommend --job F`` (or ``--trl-config F``): rank GPU offers and splits for a
job."""

from __future__ import annotations

import argparse
import json

from gacost.advisor.recommend import recommend
from gacost.base.clock import utc_now
from gacost.base.profile import read_profile
from gacost.commands.inputs import (
    add_format_flag,
    add_job_flags,
    load_job_args,
    price_table,
    trl_notes,
)
from gacost.commands.saved_profiles import add_profile_folder_flag, changes, load_saved
from gacost.commands.sky import add_sky_flags, check_sky_path, write_sky_task
from gacost.pricing.price_dates import PriceDating, max_age_from
from gacost.reports import recommend as render
from gacost.reports.plot import check_path, recommend_plot


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the subcommand."""
    p = sub.add_parser("recommend", help="recommend a GPU, provider and m x k split for a job")
    add_job_flags(p)
    p.add_argument(
        "--profile",
        action="append",
        default=[],
        metavar="P",
        help="a calibration profile (JSON) to use; repeatable (the profile folder's "
        "profiles of the job's workload are used too, README 'Calibrating on SkyPilot')",
    )
    add_profile_folder_flag(p)
    p.add_argument(
        "--prices",
        metavar="F",
        help="a price file in the snapshot CSV format (default: embedded snapshot)",
    )
    add_format_flag(p)
    p.add_argument("--refresh-prices", action="store_true",
                   help="fetch price sources whose cache is older than the max age first "
                        "(network; see `gacost prices --list-sources`)")
    p.add_argument(
        "--top", type=_positive, default=10, metavar="N", help="show the N best offers (default 10)"
    )
    p.add_argument("--wide", action="store_true",
                   help="every column (instance, 90%% band, fits, peak GiB, full region "
                        "names) on unwrapped lines; the default fits 120 columns")
    add_price_age_flag(p)
    p.add_argument(
        "--plot",
        metavar="FILE",
        help="also draw the ranking ($/fine-tune per GPU at its best split) and the "
        "recommended GPU's seconds/update per split (.png, .svg, .pdf or .html); "
        "needs the plot extra",
    )
    add_sky_flags(p)
    p.set_defaults(run=run)


def add_price_age_flag(p: argparse.ArgumentParser) -> None:
    """``--price-age``: prices last confirmed longer ago are marked ``!``."""
    p.add_argument("--price-age", metavar="AGE",
                   help="mark prices last confirmed longer ago than this (default 180d, "
                        "$GACOST_PRICE_DATE_MAX_AGE; a bare number is days)")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def run(args: argparse.Namespace) -> str:
    """Compute and render the report (and the plot, with ``--plot``)."""
    if args.plot is not None:
        check_path(args.plot)
    check_sky_path(args)
    job, trl = load_job_args(args)
    saved = load_saved(args, job)
    profiles = [*(read_profile(p) for p in args.profile), *saved.profiles]
    table = price_table(args.prices, refresh=args.refresh_prices)
    dating = PriceDating(table.price_dates, utc_now(), max_age_from(args.price_age))
    report = recommend(
        job,
        table.offers,
        profiles,
        price_as_of=table.as_of,
        price_source=table.source,
        top=args.top,
    )
    sky_line = write_sky_task(args, job, report.recommended)
    changed = changes(saved, report)
    mine = None if trl is None else render.user_split(
        report, trl.config.micro_batch, trl.config.grad_accum)
    if args.format == "json":
        out = render.report_dict(report, dating)
        if trl is not None:
            out["trl_config"] = {**trl.summary(), "your_split": mine}
        if sky_line is not None:
            out["sky_task"] = args.sky_task
        if changed is not None:
            out["profile_folder"] = {"folder": str(saved.folder), **changed.as_dict()}
        text = json.dumps(out, indent=2)
    elif args.format == "csv":
        text = render.render_csv(report, dating).rstrip("\n")
    else:
        yours = None if trl is None or mine is None else render.user_split_text(
            mine, trl.config.path)
        text = "\n".join([render.render_text(report, yours, wide=args.wide, dating=dating),
                          *trl_notes(trl)])
    if job.sweep is not None and args.format == "table":
        text += ("\nnote: this job has a sweep: section; recommend plans one run of the base "
                 "job, `gacost budget` plans the whole sweep")
    if args.plot is not None:
        recommend_plot(job, report, table.offers, profiles, args.plot,
                       report_text=render.render_text(report))
        if args.format == "table":
            text += f"\nplot: {args.plot}"
    if sky_line and args.format == "table":
        text += f"\n{sky_line}"
    if args.format == "table":
        text += "".join(f"\n{line}" for line in
                        [*saved.notes, *(changed.lines(saved.folder) if changed else [])])
    return text
