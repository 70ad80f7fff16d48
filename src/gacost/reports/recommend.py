"""Render reports as a text table, JSON or CSV. The same fields go to every format."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from tabulate import tabulate

from gacost.advisor.planner import Plan
from gacost.advisor.recommend import Report
from gacost.advisor.split_estimates import SplitEstimate
from gacost.reports.formats import rows_csv

PLAN_COLUMNS = [
    ("gpu", "GPU"), ("provider", "provider"), ("region", "region"),
    ("instance_type", "instance"), ("pricing", "pricing"), ("rate_hour", "$/h"),
    ("split", "m x k"), ("seconds_per_update", "s/update"), ("hours_per_run", "hours"),
    ("cost_per_run", "$/fine-tune"), ("cost_all_runs", "$/all runs"),
    ("fits", "fits VRAM"), ("peak_gib", "peak GiB"), ("time_source", "time"),
]


def _estimate(r: Report, p: Plan) -> SplitEstimate | None:
    for e in r.estimates:
        if (e.gpu, e.micro_batch, e.grad_accum) == (p.gpu, p.micro_batch, p.grad_accum):
            return e
    return None


def plan_row(p: Plan, e: SplitEstimate | None = None) -> dict[str, Any]:
    """One plan as a flat dict (numbers stay numbers); ``e`` adds its 90 % bands."""
    row = {key: getattr(p, key) for key, _ in PLAN_COLUMNS}
    row.update(micro_batch=p.micro_batch, grad_accum=p.grad_accum, gpu_count=p.gpu_count,
               usable_gib=p.usable_gib, hours_all_runs=p.hours_all_runs,
               price_source=p.price_source, price_date=p.price_date)
    if e is not None:
        row.update(seconds_low=e.seconds_low, seconds_high=e.seconds_high,
                   peak_low_gib=e.peak_low_gib, peak_high_gib=e.peak_high_gib,
                   headroom_gib=e.headroom_gib)
    return row


def _band(lo: float | None, hi: float | None, fmt: str) -> str:
    return "" if lo is None or hi is None else f"{lo:{fmt}}-{hi:{fmt}}"


def _fmt_plan(p: Plan, e: SplitEstimate | None = None) -> list[Any]:
    peak = "" if p.peak_gib is None else f"{p.peak_gib:.1f}/{p.usable_gib:.1f}"
    band = "" if e is None else _band(e.seconds_low, e.seconds_high, ".3f")
    return [
        p.gpu, p.provider, p.region, p.instance_type, p.pricing, f"{p.rate_hour:.3f}",
        p.split, f"{p.seconds_per_update:.3f}", band, f"{p.hours_per_run:.2f}",
        f"{p.cost_per_run:.2f}", f"{p.cost_all_runs:.2f}", "yes" if p.fits else "no",
        peak, p.time_source,
    ]


def _plan_headers() -> list[str]:
    heads = [h for _, h in PLAN_COLUMNS]
    heads.insert(heads.index("s/update") + 1, "90% band")
    return heads


def _split_row(e: SplitEstimate) -> list[str]:
    room = e.headroom_gib
    return [
        f"{e.micro_batch}x{e.grad_accum}",
        "" if e.seconds_per_update is None else f"{e.seconds_per_update:.3f}",
        _band(e.seconds_low, e.seconds_high, ".3f"),
        "" if e.peak_gib is None else f"{e.peak_gib:.2f}",
        _band(e.peak_low_gib, e.peak_high_gib, ".1f"),
        f"{e.usable_gib:.1f}",
        "" if room is None else f"{room:+.1f}",
        ("yes (tight)" if e.memory_tight else "yes") if e.fits else "no",
        e.time_source,
    ]


def render_text(r: Report) -> str:
    """The human report."""
    w = r.recommended
    we = _estimate(r, w)
    hours_band = ""
    if we is not None and we.seconds_band is not None and w.seconds_per_update:
        lo, hi = (x / w.seconds_per_update * w.hours_per_run for x in we.seconds_band)
        hours_band = f", 90% band {lo:.2f}-{hi:.2f} h"
    out = [
        f"Job: {r.model}, {r.updates} updates x {r.runs} run(s), effective batch "
        f"{r.effective_batch}, objective {r.objective}",
        "",
        f"Recommended: {w.gpu} on {w.provider} {w.region} ({w.instance_type}, {w.pricing}), "
        f"split {w.split} (micro-batch {w.micro_batch} x {w.grad_accum} accumulation steps): "
        f"{w.hours_per_run:.2f} h and ${w.cost_per_run:.2f} per fine-tune, "
        f"${w.cost_all_runs:.2f} for {r.runs} run(s) [{w.time_source}{hours_band}]",
        "",
        tabulate([_fmt_plan(p, _estimate(r, p)) for p in r.plans], headers=_plan_headers(),
                 disable_numparse=True),
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
    out += [f"calibrate: {a}" for a in r.advice]
    if r.model_fit:
        out.append(f"note: {r.model_fit[0]}; predicted figures carry 90% bands (bench/MODEL.md)")
    if any(p.time_source == "predicted" for p in r.plans[:1]):
        out.append("note: the recommended time is predicted; `gacost calibrate` on that GPU "
                   "measures it")
    return "\n".join(out)


def report_dict(r: Report) -> dict[str, Any]:
    """The JSON form of a report."""
    return {
        "model": r.model, "updates": r.updates, "runs": r.runs, "objective": r.objective,
        "effective_batch": r.effective_batch,
        "recommended": plan_row(r.recommended, _estimate(r, r.recommended)),
        "plans": [plan_row(p, _estimate(r, p)) for p in r.plans],
        "splits_on_recommended": [
            {**asdict(e), "headroom_gib": e.headroom_gib, "memory_tight": e.memory_tight}
            for e in r.splits_on_recommended
        ],
        "best_split_per_gpu": {g: asdict(b) for g, b in r.best.items()},
        "break_even": [{**asdict(b), "a_wins_now": b.a_wins_now} for b in r.break_evens],
        "skipped": [asdict(s) for s in r.skipped],
        "notes": r.notes,
        "prices": {"source": r.price_source, "as_of": r.price_as_of},
        "calibrate": r.calibrate,
        "advice": r.advice,
        "model_fit": r.model_fit,
    }


def render_json(r: Report) -> str:
    """Pretty JSON."""
    return json.dumps(report_dict(r), indent=2)


def render_csv(r: Report) -> str:
    """The plans table as CSV (one row per plan, same fields as the table and more)."""
    return rows_csv([plan_row(p, _estimate(r, p)) for p in r.plans])
