"""``gacost recommend --job F`` (or ``--trl-config F``): rank GPU offers and splits for a
job, and render the report as a text table, JSON or CSV (the same fields in every format).

``--plot`` draws it (:mod:`gacost.commands.plot`), ``--sky-task`` writes the recommended plan
as a SkyPilot task (:mod:`gacost.commands.sky`)."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

from tabulate import tabulate

from gacost.advisor.planner import Plan
from gacost.advisor.recommend import Report, recommend
from gacost.advisor.split_estimates import SplitEstimate
from gacost.base.clock import utc_now
from gacost.base.profile import read_profile
from gacost.base.split import Split
from gacost.commands.formats import (
    add_format_flag,
    compact_table,
    fit_width,
    rows_csv,
    short_region,
)
from gacost.commands.inputs import (
    add_host_probe_flag,
    add_job_flags,
    add_price_age_flag,
    host_probe,
    load_job_args,
    price_table,
    trl_notes,
)
from gacost.commands.plot import check_path, recommend_plot
from gacost.commands.saved_profiles import add_profile_folder_flag, changes, load_saved
from gacost.commands.sky import add_sky_flags, check_sky_path, write_sky_task
from gacost.pricing.price_dates import PriceDating, marked, max_age_from


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of ``gacost recommend`` (its parser made by :mod:`gacost.commands.cli`)."""
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
    add_host_probe_flag(p)
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
    probe = host_probe(args)
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
        host_probe=probe,
    )
    sky_line = write_sky_task(args, job, report.recommended)
    changed = changes(saved, report)
    mine = None if trl is None else user_split(report, trl.split)
    if args.format == "json":
        out = report_dict(report, dating)
        if trl is not None:
            out["trl_config"] = {**trl.summary(), "your_split": mine}
        if sky_line is not None:
            out["sky_task"] = args.sky_task
        if changed is not None:
            out["profile_folder"] = {"folder": str(saved.folder), **changed.as_dict()}
        text = json.dumps(out, indent=2)
    elif args.format == "csv":
        text = render_csv(report, dating).rstrip("\n")
    else:
        yours = None if trl is None or mine is None else user_split_text(
            mine, trl.config.path)
        text = "\n".join([render_text(report, yours, wide=args.wide, dating=dating),
                          *trl_notes(trl)])
    if job.sweep is not None and args.format == "table":
        text += ("\nnote: this job has a sweep: section; recommend plans one run of the base "
                 "job, `gacost budget` plans the whole sweep")
    if args.plot is not None:
        recommend_plot(job, report, table.offers, profiles, args.plot,
                       report_text=render_text(report), host_probe=probe)
        if args.format == "table":
            text += f"\nplot: {args.plot}"
    if sky_line and args.format == "table":
        text += f"\n{sky_line}"
    if args.format == "table":
        text += "".join(f"\n{line}" for line in
                        [*saved.notes, *(changed.lines(saved.folder) if changed else [])])
    return text


# The report: the same fields as a text table, JSON and CSV.

PLAN_COLUMNS = [
    ("gpu", "GPU"), ("provider", "provider"), ("region", "region"),
    ("instance_type", "instance"), ("pricing", "pricing"), ("rate_hour", "$/h"),
    ("split", "m x k"), ("seconds_per_update", "s/update"), ("hours_per_run", "hours"),
    ("cost_per_run", "$/fine-tune"), ("cost_all_runs", "$/all runs"),
    ("fits", "fits VRAM"), ("peak_gib", "peak GiB"), ("time_source", "time"),
]


def plan_row(p: Plan, dating: PriceDating | None = None) -> dict[str, Any]:
    """One plan as a flat dict (numbers stay numbers), with its estimate's 90 % bands and,
    given ``dating``, the date of its price (``prices_as_of``, ``price_age_days``,
    ``price_outdated``, ``price_old``)."""
    e = p.estimate
    row = {
        "gpu": p.gpu, "provider": p.provider, "region": p.region,
        "instance_type": p.instance_type, "pricing": p.pricing, "rate_hour": p.rate_hour,
        "split": p.split, "seconds_per_update": e.seconds_per_update,
        "hours_per_run": p.hours_per_run, "cost_per_run": p.cost_per_run,
        "cost_all_runs": p.cost, "fits": e.fits, "peak_gib": e.peak_gib,
        "time_source": e.time_source,
        "micro_batch": e.micro_batch, "grad_accum": e.grad_accum,
        "gpu_count": p.offer.gpu_count, "usable_gib": e.usable_gib,
        "hours_all_runs": p.wall_hours, "instances": p.instances,
        "spot_allowance": p.allowance,
        "price_source": p.offer.source, "price_date": p.offer.fetched_at,
        "seconds_low": e.seconds_low, "seconds_high": e.seconds_high,
        "peak_low_gib": e.peak_low_gib, "peak_high_gib": e.peak_high_gib,
        "headroom_gib": e.headroom_gib,
        "checkpoints": p.groups[0].group.saves,
        "checkpoint_seconds": p.groups[0].checkpoint_seconds,
    }
    if dating is not None:
        row.update(dating.of(p.offer).fields())
    return row


def _band(lo: float | None, hi: float | None, fmt: str) -> str:
    return "" if lo is None or hi is None else f"{lo:{fmt}}-{hi:{fmt}}"


# The default table: what a decision needs, within commands.formats.WIDTH columns.
NARROW = ("GPU", "provider", "region", "pricing", "$/h", "m x k", "s/update", "hours",
          "$/fine-tune", "$/all runs", "time")
NARROW_LABELS = {"$/fine-tune": "$/run", "$/all runs": "$/all"}  # shorter headers


def _fmt_plan(p: Plan, wide: bool = True, dating: PriceDating | None = None) -> list[Any]:
    e = p.estimate
    peak = "" if e.peak_gib is None else f"{e.peak_gib:.1f}/{e.usable_gib:.1f}"
    rate = f"{p.rate_hour:.3f}"
    cells = [
        p.gpu, p.provider, p.region if wide else short_region(p.region), p.instance_type,
        p.pricing, rate if dating is None else marked(rate, dating.of(p.offer)),
        p.split, f"{e.seconds_per_update:.3f}", _band(e.seconds_low, e.seconds_high, ".3f"),
        f"{p.hours_per_run:.2f}", f"{p.cost_per_run:.2f}", f"{p.cost:.2f}",
        "yes" if e.fits else "no", peak, e.time_source,
    ]
    if wide:
        return cells
    return [c for c, h in zip(cells, _plan_headers(), strict=True) if h in NARROW]


def _plan_headers(wide: bool = True) -> list[str]:
    heads = [h for _, h in PLAN_COLUMNS]
    heads.insert(heads.index("s/update") + 1, "90% band")
    if wide:
        return heads
    return [NARROW_LABELS.get(h, h) for h in heads if h in NARROW]


def _split_row(e: SplitEstimate) -> list[str]:
    room = e.headroom_gib
    return [
        e.split_label,
        "" if e.seconds_per_update is None else f"{e.seconds_per_update:.3f}",
        _band(e.seconds_low, e.seconds_high, ".3f"),
        "" if e.peak_gib is None else f"{e.peak_gib:.2f}",
        _band(e.peak_low_gib, e.peak_high_gib, ".1f"),
        f"{e.usable_gib:.1f}",
        "" if room is None else f"{room:+.1f}",
        ("yes (tight)" if e.memory_tight else "yes") if e.fits else "no",
        e.time_source,
    ]


def _instances_text(p: Plan) -> str:
    if p.instances <= 1:
        return ""
    return f" on {p.instances} instances in parallel ({p.wall_hours:.2f} h wall-clock)"


def render_text(r: Report, yours: str | None = None, wide: bool = False,
                dating: PriceDating | None = None) -> str:
    """The human report; ``yours`` (the user's split, :func:`user_split_text`) goes under
    the recommendation. It fits :data:`~gacost.commands.formats.WIDTH` columns (prose
    wrapped, the plans table with the columns a decision needs); ``wide`` shows every
    column on unwrapped lines. ``dating`` marks old prices and names the price dates."""
    w = r.recommended
    we = w.estimate
    hours_band = ""
    if w.hours_band is not None:
        lo, hi = w.hours_band
        hours_band = f", 90% band {lo:.2f}-{hi:.2f} h"
    out = [
        f"Job: {r.model}, {r.updates} updates x {r.runs} run(s), effective batch "
        f"{r.effective_batch}, objective {r.objective}",
        "",
        f"Recommended: {w.gpu} on {w.provider} {w.region} ({w.instance_type}, {w.pricing}), "
        f"split {w.split} (micro-batch {we.micro_batch} x {we.grad_accum} accumulation steps): "
        f"{w.hours_per_run:.2f} h and ${w.cost_per_run:.2f} per fine-tune, "
        f"${w.cost:.2f} for {r.runs} run(s){_instances_text(w)} [{we.time_source}{hours_band}]",
        *([yours] if yours else []),
        *checkpoint_lines(w),
        "",
        tabulate([_fmt_plan(p, wide, dating) for p in r.plans], headers=_plan_headers(wide),
                 disable_numparse=True) if wide else
        compact_table([_fmt_plan(p, wide, dating) for p in r.plans], _plan_headers(wide)),
        "",
        f"Splits on {w.gpu}:",
        tabulate(
            [_split_row(e) for e in r.splits_on_recommended],
            headers=["m x k", "s/update", "90% band", "peak GiB", "90% band", "usable GiB",
                     "headroom", "fits", "time"],
            disable_numparse=True,
        ),
    ]
    shown = [p.gpu for p in r.plans]
    lines = [b.sentence() for b in r.break_evens
             if b.gpu_b == w.gpu and b.gpu_a in shown and b.gpu_a != w.gpu]
    if "T4" in r.best and "L4" in r.best and w.gpu not in ("T4", "L4"):
        lines += [b.sentence() for b in r.break_evens if (b.gpu_a, b.gpu_b) == ("T4", "L4")]
    if lines:
        out += ["", "Break-even (each GPU at its fastest split that fits):"]
        out += [f"  {line}" for line in dict.fromkeys(lines)]
    for s in r.skipped:
        out.append(f"note: {s.gpu} skipped: {s.reason}")
    out += [f"note: {n}" for n in r.notes]
    if r.price_as_of:
        out.append(f"prices: {r.price_source}, as of {r.price_as_of}")
    out += price_date_lines([p.offer for p in [w, *r.plans]], r.price_as_of, dating)
    out += [f"calibrate: {a}" for a in r.advice]
    if r.calibrate:
        out.append(f"calibrate: where you would rent them: `gacost calibrate --sky "
                   f"{','.join(r.calibrate)} --job JOB` (gacost[sky]; it shows the cost first)")
    if r.model_fit:
        out.append(f"note: {r.model_fit[0]}; predicted figures carry 90% bands (bench/MODEL.md)")
    if r.recommended.time_source == "predicted":
        out.append("note: the recommended time is predicted; `gacost calibrate` on that GPU "
                   "measures it")
    return "\n".join(out if wide else fit_width(out))


def checkpoint_lines(p: Plan) -> list[str]:
    """What the recommended plan's checkpoints add to a run, where that is at least 1% of it
    (TRL's Trainer saves every ``save_steps`` updates and at the end; the run waits)."""
    g = p.groups[0]
    seconds = g.checkpoint_seconds
    if not seconds or seconds < 0.01 * g.hours_per_run * 3600:
        return []
    gb = g.group.save_bytes / 1e9
    return [f"  includes {g.group.saves} checkpoint(s) of {gb:.1f} GB, one every "
            f"{g.group.save_every} updates: {seconds / 60:.1f} min per run "
            f"({seconds / (g.hours_per_run * 36):.0f}%) and {g.group.saves * gb:.0f} GB of disk "
            "unless save_total_limit; the job's save_steps and save_only_model set them"]


def price_date_lines(offers: list[Any], read: str, dating: PriceDating | None) -> list[str]:
    """The footer's price dates of ``offers``' providers (where not the day read) and the
    legend of the old-price mark when one of them is marked."""
    if dating is None:
        return []
    lines = []
    summary = dating.summary(offers, read)
    if summary:
        lines.append(summary)
    if any(dating.of(o).marked for o in offers):
        lines.append(dating.legend())
    return lines


def report_dict(r: Report, dating: PriceDating | None = None) -> dict[str, Any]:
    """The JSON form of a report (``dating``: each plan's price date, and the threshold)."""
    prices: dict[str, Any] = {"source": r.price_source, "as_of": r.price_as_of}
    if dating is not None:
        prices["price_age_limit_days"] = dating.max_age.total_seconds() / 86400
    return {
        "model": r.model, "updates": r.updates, "runs": r.runs, "objective": r.objective,
        "effective_batch": r.effective_batch,
        "recommended": plan_row(r.recommended, dating),
        "plans": [plan_row(p, dating) for p in r.plans],
        "splits_on_recommended": [
            {**asdict(e), "headroom_gib": e.headroom_gib, "memory_tight": e.memory_tight}
            for e in r.splits_on_recommended
        ],
        "best_split_per_gpu": {g: asdict(b) for g, b in r.best.items()},
        "break_even": [{**asdict(b), "a_wins_now": b.a_wins_now} for b in r.break_evens],
        "skipped": [asdict(s) for s in r.skipped],
        "notes": r.notes,
        "prices": prices,
        "calibrate": r.calibrate,
        "advice": r.advice,
        "model_fit": r.model_fit,
    }


def user_split(r: Report, split: Split) -> dict[str, Any]:
    """The user's current split (from their TRL config) on the recommended offer, against
    the recommended split: ``status`` is ``recommended``, ``slower``, ``faster`` (only
    where the objective is not time or cost per run), ``does not fit`` or ``not planned``."""
    w = r.recommended
    out: dict[str, Any] = {"split": str(split), "gpu": w.gpu, "recommended_split": w.split}
    found = [e for e in r.splits_on_recommended if e.split == split]
    if not found:
        return {**out, "status": "not planned"}
    e = found[0]
    out.update(seconds_per_update=e.seconds_per_update, fits=e.fits, peak_gib=e.peak_gib,
               usable_gib=e.usable_gib, time_source=e.time_source)
    best = w.estimate.seconds_per_update
    if not e.fits or not e.seconds_per_update or not best:
        return {**out, "status": "does not fit"}
    if e.split == w.estimate.split:
        return {**out, "status": "recommended", "hours_per_run": w.hours_per_run,
                "cost_per_run": w.cost_per_run}
    ratio = e.seconds_per_update / best
    return {**out, "status": "slower" if ratio > 1 else "faster",
            "hours_per_run": w.hours_per_run * ratio, "cost_per_run": w.cost_per_run * ratio,
            "time_ratio": ratio}


def user_split_text(d: dict[str, Any], origin: str) -> str:
    """One line for :func:`user_split`."""
    head = f"Your split ({origin}): {d['split']}"
    status = d["status"]
    if status == "not planned":
        return f"{head} is not among the splits planned (micro_batches in the job file)"
    if status == "does not fit":
        peak = "" if d.get("peak_gib") is None else (
            f" (peak {d['peak_gib']:.1f} GiB of {d['usable_gib']:.1f} usable)")
        return (f"{head} does not fit on {d['gpu']}{peak}; the recommended split is "
                f"{d['recommended_split']}")
    cost = f"{d['hours_per_run']:.2f} h and ${d['cost_per_run']:.2f} per fine-tune"
    if status == "recommended":
        return f"{head} is the recommended split on {d['gpu']}: {cost}"
    ratio = d["time_ratio"]
    if status == "faster":
        change = f"{1 - ratio:.0%} less time than"
    elif ratio >= 2:
        change = f"{ratio:.1f}x the time and money of"
    else:
        change = f"{ratio - 1:.0%} more time and money than"
    return (f"{head} on {d['gpu']}: {cost} [{d['time_source']}], {change} the "
            f"recommended {d['recommended_split']}")


def render_csv(r: Report, dating: PriceDating | None = None) -> str:
    """The plans table as CSV (one row per plan, same fields as the table and more)."""
    return rows_csv([plan_row(p, dating) for p in r.plans])
