"""``gacost compare --job F [--gpu G]``: one GPU at every provider, and break-even ratios."""

from __future__ import annotations

import argparse
import json

from tabulate import tabulate

from advisor.commands.budget import Column, add_common, fixed, load_inputs, plain, table_text
from advisor.compare import Comparison, compare, comparison_dict, row_dict
from advisor.render import rows_csv


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the subcommand."""
    p = sub.add_parser("compare", help="price one GPU at every provider; GPU break-even matrix")
    add_common(p)
    p.add_argument("--gpu", metavar="G", help="the GPU to compare (default: the recommended one)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> str:
    """Compute and render the comparison."""
    job, table, profiles, allowance = load_inputs(args)
    c = compare(job, table.offers, profiles, gpu=args.gpu, spot=args.spot,
                spot_allowance=allowance)
    if args.format == "json":
        out = comparison_dict(c)
        out["prices"] = {"source": table.source, "as_of": table.as_of}
        return json.dumps(out, indent=2)
    rows = [row_dict(p, c.spread.low) for p in c.rows]
    if args.format == "csv":
        return rows_csv(rows).rstrip("\n")
    return render_text(c, rows, allowance, f"{table.source}, as of {table.as_of}")


COLUMNS: list[Column] = [
    ("provider", "provider", plain), ("region", "region", plain),
    ("instance_type", "instance", plain), ("pricing", "pricing", plain),
    ("rate_hour", "$/h", fixed(3)), ("splits", "m x k", plain), ("time_source", "time", plain),
    ("gpu_hours", "GPU-h", fixed(2)), ("cost_per_run", "$/run", fixed(2)),
    ("cost", "$ all runs", fixed(2)), ("vs_cheapest", "x cheapest", fixed(2)),
]


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
    return tabulate(body, headers=["A \\ B", *c.matrix_gpus], disable_numparse=True)


def render_text(c: Comparison, rows: list[dict[str, object]], allowance: float,
                prices: str) -> str:
    """The human report."""
    s = c.spread
    lines = [
        f"{c.gpu} at every provider and region for {c.model}, {c.runs} run(s), cheapest first:",
        "",
        table_text(rows, COLUMNS),
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
    return "\n".join(lines)
