"""``gacost compare --job F [--gpu G]``: one GPU at every provider, and break-even ratios.

The default text fits :data:`~gacost.commands.formats.WIDTH` columns: the cheapest ``top``
offers (a line says how many more there are), short regions and instance names, no time
column, prose wrapped; ``wide`` shows every column on unwrapped lines. JSON and CSV carry
every offer.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from gacost.advisor.compare import Comparison, compare
from gacost.advisor.planner import Plan
from gacost.base.clock import utc_now
from gacost.commands.formats import (
    Column,
    compact_table,
    fit_width,
    fixed,
    plain,
    rows_csv,
    short_region,
    table_text,
)
from gacost.commands.inputs import (
    add_common,
    add_price_age_flag,
    load_inputs,
    number,
    trl_notes,
)
from gacost.commands.plans import groups_dict, splits_text
from gacost.commands.saved_profiles import add_profile_folder_flag, load_saved
from gacost.pricing.price_dates import MARK, PriceDating, max_age_from


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of ``gacost compare`` (its parser made by :mod:`gacost.commands.cli`)."""
    add_common(p)
    add_profile_folder_flag(p)
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
    job, table = inputs.job, inputs.table
    saved = load_saved(args, job)  # the profile folder's profiles of the job's workload
    profiles = [*inputs.profiles, *saved.profiles]
    allowance = job.spot_allowance if inputs.allowance is None else inputs.allowance
    c = compare(job, table.offers, profiles, gpu=args.gpu, spot=args.spot,
                host_probe=inputs.host_probe,
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
    return "\n".join([text, *trl_notes(inputs.trl), *saved.notes, *saved.used_lines()])


# The report: the same rows as a text table, JSON and CSV.

COLUMNS: list[Column] = [
    ("provider", "provider", plain), ("region", "region", plain),
    ("instance_type", "instance", plain), ("pricing", "pricing", plain),
    ("rate_hour", "$/h", lambda v: _rate(v)), ("splits", "m x k", plain),
    ("time_source", "time", plain),
    ("instance_hours", "inst-h", fixed(2)), ("cost_per_run", "$/run", fixed(2)),
    ("cost", "$ all runs", fixed(2)), ("vs_cheapest", "x cheapest", fixed(2)),
]

# The default table: what a decision needs, within WIDTH columns (instance names cut).
NARROW: list[Column] = [
    ("provider", "provider", plain), ("region", "region", short_region),
    ("instance_type", "instance", lambda v: _cut(plain(v), 22)), ("pricing", "pricing", plain),
    ("rate_hour", "$/h", lambda v: _rate(v)), ("splits", "m x k", lambda v: _splits(plain(v))),
    ("instance_hours", "inst-h", fixed(2)), ("cost_per_run", "$/run", fixed(2)),
    ("cost", "$ all runs", fixed(2)), ("vs_cheapest", "x min", fixed(2)),
]  # fmt: skip


def _rate(value: Any) -> str:
    """A $/h number with 3 decimals; a marked one (already text, ``"3.290!"``) as it is."""
    return value if isinstance(value, str) else fixed(3)(value)


def _marked(row: dict[str, Any]) -> dict[str, Any]:
    if not row.get("price_old") or row.get("rate_hour") is None:
        return row
    return {**row, "rate_hour": f"{row['rate_hour']:.3f}{MARK}"}


def _splits(text: str) -> str:
    """``a=4x1 b=4x1 c=16x1`` as its distinct splits, ``4x1/16x1`` (--wide names groups)."""
    return _cut("/".join(dict.fromkeys(part.split("=")[-1] for part in text.split())), 12)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "~"


def matrix_text(c: Comparison) -> str:
    """Rows A, columns B, cell 1/r; ``*`` where A is cheaper at today's cheapest rates."""
    body = []
    for a in c.matrix_gpus:
        cells = []
        for b in c.matrix_gpus:
            be = next((x for x in c.break_evens if (x.gpu_a, x.gpu_b) == (a, b)), None)
            if be is None:
                cells.append("-")
            else:
                cells.append(f"{be.threshold:.2f}{'*' if be.a_wins_now else ''}")
        body.append([a, *cells])
    return compact_table(body, ["A \\ B", *c.matrix_gpus])


def render_text(c: Comparison, rows: list[dict[str, Any]], allowance: float,
                prices: str, top: int = 10, wide: bool = False,
                dating: PriceDating | None = None, read: str = "") -> str:
    """The human report: the ``top`` cheapest rows of ``rows`` (every column if ``wide``);
    a price marked old (``price_old``, :func:`row_dict` with ``dating``) ends in ``!``,
    and ``dating`` adds the price dates of the shown offers' providers and the legend."""
    s = c.spread
    shown = [_marked(r) for r in rows[:top]]
    table = (table_text(shown, COLUMNS) if wide else
             table_text(shown, NARROW, compact=True))  # fmt: skip
    lines = [
        f"{c.gpu} at every provider and region for {c.model}, {c.runs} run(s), cheapest first:",
        "",
        table,
    ]
    if len(rows) > len(shown):
        lines.append(f"({len(rows) - len(shown)} more offer(s); --top N shows more, --format "
                     "csv or json lists every one)")
    lines += [
        "",
        f"Spread over {len(c.rows)} offer(s), $ all runs: min {s.low:.2f}, median "
        f"{s.median:.2f}, max {s.high:.2f} (max/min {s.ratio:.2f}x)",
    ]
    if len(c.matrix_gpus) > 1:
        lines += [
            "",
            "Break-even (each GPU at its fastest split that fits): row A is the cheaper "
            "fine-tune only if its $/h is below cell x column B's $/h; * = A is cheaper at "
            "today's cheapest rates",
            matrix_text(c),
        ]
        if len(c.gpus_by_cost) > len(c.matrix_gpus):
            lines.append(f"({len(c.matrix_gpus)} cheapest GPUs shown; --format json has all "
                         f"{len(c.gpus_by_cost)})")
    if any(p.pricing == "spot" for p in c.rows):
        lines.append(f"note: spot hours include a {allowance:.0%} interruption allowance")
    lines += [f"note: {n}" for n in c.notes]
    lines.append(f"prices: {prices}")
    if dating is not None:
        offers = [p.offer for p in c.rows[:top]]
        summary = dating.summary(offers, read)
        lines += [summary] if summary else []
        if any(r.get("price_old") for r in rows[:top]):
            lines.append(dating.legend())
    return "\n".join(lines if wide else fit_width(lines))


def row_dict(p: Plan, cheapest: float, dating: PriceDating | None = None) -> dict[str, Any]:
    """One offer as a flat dict (numbers stay numbers); the table shows the same fields;
    ``dating`` adds the price date fields (:meth:`OfferDate.fields`)."""
    row = {
        "gpu": p.gpu, "provider": p.provider, "region": p.region,
        "instance_type": p.instance_type, "pricing": p.pricing, "rate_hour": p.rate_hour,
        "spot_allowance": p.allowance,
        "splits": splits_text(p),
        "time_source": "/".join(dict.fromkeys(g.estimate.time_source for g in p.groups)),
        "runs": p.runs, "instance_hours": p.instance_hours, "gpu_hours": p.gpu_hours,
        "cost_per_run": p.cost / p.runs,
        "cost": p.cost, "vs_cheapest": p.cost / cheapest if cheapest > 0 else None,
    }
    if dating is not None:
        row.update(dating.of(p.offer).fields())
    return row


def comparison_dict(c: Comparison, dating: PriceDating | None = None) -> dict[str, Any]:
    """The JSON form: every row, the spread, and the break-even matrix of every GPU."""
    gpus = sorted({b.gpu_a for b in c.break_evens} | {b.gpu_b for b in c.break_evens})
    low = c.spread.low
    return {
        "model": c.model, "gpu": c.gpu, "runs": c.runs,
        "rows": [{**row_dict(p, low, dating), "groups": groups_dict(p)} for p in c.rows],
        "spread": {"min": c.spread.low, "median": c.spread.median, "max": c.spread.high,
                   "max_over_min": c.spread.ratio, "offers": len(c.rows)},
        "gpus_by_cost": c.gpus_by_cost,
        "break_even": {
            "meaning": "row A is the cheaper fine-tune iff rate_A < threshold x rate_B",
            "gpus": gpus,
            "matrix": {a: {b: c.threshold(a, b) for b in gpus if b != a} for a in gpus},
            "shown": c.matrix_gpus,
        },
        "notes": c.notes,
    }
