"""Render reports as a text table, JSON or CSV. The same fields go to every format."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from tabulate import tabulate

from advisor.recommend import Report
from advisor.solver import Plan

PLAN_COLUMNS = [
    ("gpu", "GPU"), ("provider", "provider"), ("region", "region"),
    ("instance_type", "instance"), ("pricing", "pricing"), ("rate_hour", "$/h"),
    ("split", "m x k"), ("seconds_per_update", "s/update"), ("hours_per_run", "hours"),
    ("cost_per_run", "$/fine-tune"), ("cost_all_runs", "$/all runs"),
    ("fits", "fits VRAM"), ("peak_gib", "peak GiB"), ("time_source", "time"),
]


def plan_row(p: Plan) -> dict[str, Any]:
    """One plan as a flat dict (numbers stay numbers)."""
    row = {key: getattr(p, key) for key, _ in PLAN_COLUMNS}
    row.update(micro_batch=p.micro_batch, grad_accum=p.grad_accum, gpu_count=p.gpu_count,
               usable_gib=p.usable_gib, hours_all_runs=p.hours_all_runs,
               price_source=p.price_source, price_date=p.price_date)
    return row


def _fmt_plan(p: Plan) -> list[Any]:
    peak = "" if p.peak_gib is None else f"{p.peak_gib:.1f}/{p.usable_gib:.1f}"
    return [
        p.gpu, p.provider, p.region, p.instance_type, p.pricing, f"{p.rate_hour:.3f}",
        p.split, f"{p.seconds_per_update:.3f}", f"{p.hours_per_run:.2f}",
        f"{p.cost_per_run:.2f}", f"{p.cost_all_runs:.2f}", "yes" if p.fits else "no",
        peak, p.time_source,
    ]


def render_text(r: Report) -> str:
    """The human report."""
    w = r.recommended
    out = [
        f"Job: {r.model}, {r.updates} updates x {r.runs} run(s), effective batch "
        f"{r.effective_batch}, objective {r.objective}",
        "",
        f"Recommended: {w.gpu} on {w.provider} {w.region} ({w.instance_type}, {w.pricing}), "
        f"split {w.split} (micro-batch {w.micro_batch} x {w.grad_accum} accumulation steps): "
        f"{w.hours_per_run:.2f} h and ${w.cost_per_run:.2f} per fine-tune, "
        f"${w.cost_all_runs:.2f} for {r.runs} run(s) [{w.time_source}]",
        "",
        tabulate([_fmt_plan(p) for p in r.plans], headers=[h for _, h in PLAN_COLUMNS],
                 disable_numparse=True),
        "",
        f"Splits on {w.gpu}:",
        tabulate(
            [[f"{e.micro_batch}x{e.grad_accum}",
              "" if e.seconds_per_update is None else f"{e.seconds_per_update:.3f}",
              "" if e.peak_gib is None else f"{e.peak_gib:.2f}", f"{e.usable_gib:.1f}",
              "yes" if e.fits else "no", e.time_source]
             for e in r.splits_on_recommended],
            headers=["m x k", "s/update", "peak GiB", "usable GiB", "fits", "time"],
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
    if any(p.time_source == "predicted" for p in r.plans[:1]):
        out.append("note: the recommended time is predicted; `gacost calibrate` on that GPU "
                   "measures it")
    return "\n".join(out)


def report_dict(r: Report) -> dict[str, Any]:
    """The JSON form of a report."""
    return {
        "model": r.model, "updates": r.updates, "runs": r.runs, "objective": r.objective,
        "effective_batch": r.effective_batch,
        "recommended": plan_row(r.recommended),
        "plans": [plan_row(p) for p in r.plans],
        "splits_on_recommended": [
            {**asdict(e), "headroom_gib": e.headroom_gib} for e in r.splits_on_recommended
        ],
        "best_split_per_gpu": {g: asdict(b) for g, b in r.best.items()},
        "break_even": [{**asdict(b), "a_wins_now": b.a_wins_now} for b in r.break_evens],
        "skipped": [asdict(s) for s in r.skipped],
        "notes": r.notes,
        "prices": {"source": r.price_source, "as_of": r.price_as_of},
    }


def render_json(r: Report) -> str:
    """Pretty JSON."""
    return json.dumps(report_dict(r), indent=2)


def render_csv(r: Report) -> str:
    """The plans table as CSV (one row per plan, same fields as the table and more)."""
    return rows_csv([plan_row(p) for p in r.plans])


def rows_csv(rows: Sequence[dict[str, Any]]) -> str:
    """Dict rows as CSV text with the first row's keys as header."""
    buf = io.StringIO()
    if rows:
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return buf.getvalue()
