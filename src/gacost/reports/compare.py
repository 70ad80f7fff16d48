"""The ``compare`` report: one GPU at every provider and the break-even matrix."""

from __future__ import annotations

from tabulate import tabulate

from gacost.advisor.compare import Comparison
from gacost.reports.formats import Column, fixed, plain, table_text

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
