"""``gacost budget --job F``: totals, wall-clock, deadline and budget plans for many runs,
rendered as a text table, JSON or CSV from the same rows."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from gacost.advisor.budget import (
    BudgetPlan,
    BudgetRow,
    Collected,
    best_by_pricing,
    collect,
    parse_hours,
    plan_budget,
)
from gacost.advisor.estimate import job_limits
from gacost.advisor.objectives import hours_text
from gacost.advisor.planner import Plan
from gacost.base.errors import JobSpecError
from gacost.commands.formats import (
    Column,
    fit_width,
    fixed,
    plain,
    rows_csv,
    short_region,
    table_text,
    yes_no,
)
from gacost.commands.inputs import add_common, load_inputs, number, trl_notes
from gacost.commands.plans import groups_dict, splits_text
from gacost.commands.saved_profiles import add_profile_folder_flag, load_saved


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of ``gacost budget`` (its parser made by :mod:`gacost.commands.cli`)."""
    add_common(p)
    add_profile_folder_flag(p)
    p.add_argument("--budget", metavar="USD", help="dollars: the most runs or sweeps it buys")
    p.add_argument("--deadline", metavar="T",
                   help="finish all runs within T (12h, 90m, 1.5d or hours)")
    p.add_argument("--max-instances", metavar="P",
                   help="instances one plan may run in parallel to meet --deadline "
                        "(default: the job's max_instances, 8)")
    p.add_argument("--parallel", default="1", metavar="P",
                   help="instances for the wall-clock column (default 1)")
    p.add_argument("--top", default="10", metavar="N", help="show the N best offers (default 10)")
    p.add_argument("--wide", action="store_true",
                   help="every column (instance, budget flags, full region names) on "
                        "unwrapped lines; the default fits 120 columns")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> str:
    """Compute and render the plan."""
    parallel = int(number("--parallel", args.parallel, integer=True, high=100_000))
    max_instances = None if args.max_instances is None else int(
        number("--max-instances", args.max_instances, integer=True, high=100_000))
    top = int(number("--top", args.top, integer=True))
    budget = None if args.budget is None else number("--budget", args.budget)
    try:
        deadline = None if args.deadline is None else parse_hours(args.deadline)
    except ValueError as exc:
        raise JobSpecError(f"--deadline: {exc}") from None
    inputs = load_inputs(args)
    job, table, allowance = inputs.job, inputs.table, inputs.allowance
    saved = load_saved(args, job)  # the profile folder's profiles of the job's workload
    profiles = [*inputs.profiles, *saved.profiles]
    notes = [*saved.notes, *saved.used_lines()]
    if deadline is None and job.deadline_hours is not None:
        deadline = job.deadline_hours
        notes.append(f"deadline {deadline:g} h from the job's deadline_hours")
    if budget is None and job.budget_usd is not None:
        budget = job.budget_usd
        notes.append(f"budget ${budget:g} from the job's budget_usd")
    spot = args.spot or job.spot
    limits = job_limits(job, spot=spot, spot_allowance=allowance, parallel=parallel,
                        max_instances=max_instances)
    found = collect(job, table.offers, profiles, limits, host_probe=inputs.host_probe)
    plan = plan_budget(found.plans, limits, deadline_hours=deadline, budget_usd=budget,
                       job_objective=job.objective)
    notes = [*notes, *plan.notes, *found.notes]
    if not spot:
        notes.append("spot prices not considered (the job has spot: false; --spot adds them)")
    prices = f"{table.source}, as of {table.as_of}"
    if args.format == "json":
        out = plan_dict(found, plan, limits.spot_allowance, notes, prices)
        if inputs.trl is not None:
            out["trl_config"] = inputs.trl.summary()
        return json.dumps(out, indent=2)
    rows = [budget_row(r, plan) for r in plan.rows[:top]]
    if args.format == "csv":
        return rows_csv(rows).rstrip("\n")
    text = render_text(found, plan, limits.spot_allowance, rows, notes, prices,
                       wide=args.wide)
    return "\n".join([text, *trl_notes(inputs.trl)])


# The report: the same rows as a text table, JSON and CSV.

def budget_row(r: BudgetRow, bp: BudgetPlan) -> dict[str, Any]:
    """One row as a flat dict (numbers stay numbers); the table shows the same fields."""
    p = r.plan
    out: dict[str, Any] = {
        "gpu": p.gpu, "provider": p.provider, "region": p.region,
        "instance_type": p.instance_type, "pricing": p.pricing, "rate_hour": p.rate_hour,
        "spot_allowance": p.allowance, "runs": p.runs, "instance_hours": p.instance_hours,
        "gpu_hours": p.gpu_hours, "cost": p.cost, "unit_cost": r.unit_cost,
        "instances": p.instances, "wall_hours": p.wall_hours,
    }
    if bp.deadline_hours is not None:
        out.update(meets_deadline=p.wall_hours <= bp.deadline_hours * (1 + 1e-9))
    if r.units_bought is not None:
        out.update(units_bought=r.units_bought, within_budget=r.within_budget)
    out["splits"] = splits_text(p)
    return out


def plan_dict(found: Collected, plan: BudgetPlan, allowance: float, notes: list[str],
              prices: str) -> dict[str, Any]:
    """The JSON form: every row (with per-group details) and the parameters."""
    return {
        "model": found.model,
        "groups": [vars(g) for g in found.groups],
        "runs": plan.runs, "unit": plan.unit,
        "assumptions": {"packing": "longest-processing-time first", "spot_allowance":
                        allowance, "billing": "instance-hours x rate",
                        "checkpoints": "the job's save_steps, in each run's hours"},
        "parallel": plan.limits.parallel, "max_instances": plan.limits.max_instances,
        "deadline_hours": plan.deadline_hours, "budget_usd": plan.budget_usd,
        "best": {**budget_row(plan.best, plan), "groups": groups_dict(plan.best.plan)},
        "best_by_pricing": {
            pricing: None if row is None else budget_row(row, plan)
            for pricing in ("on-demand", "spot")
            for row in [best_by_pricing(plan, pricing)]
        },
        "rows": [{**budget_row(r, plan), "groups": groups_dict(r.plan)} for r in plan.rows],
        "notes": notes, "prices": prices,
    }


# The default table's columns (within commands.formats.WIDTH); --wide shows all.
NARROW = ("gpu", "provider", "region", "pricing", "rate_hour", "instance_hours", "cost",
          "unit_cost", "instances", "wall_hours", "meets_deadline", "units_bought", "splits")


def render_text(found: Collected, plan: BudgetPlan, allowance: float,
                rows: Sequence[dict[str, Any]], notes: Sequence[str], prices: str,
                wide: bool = False) -> str:
    """The human report: the groups, the answer in one line, the table, the notes; within
    :data:`~gacost.commands.formats.WIDTH` columns unless ``wide``."""
    lines = [f"Job: {found.model}, {plan.runs} run(s) in {len(found.groups)} group(s)"]
    lines += [f"  {g.name}: {g.runs} run(s) x {g.updates} updates, sequence {g.sequence_length},"
              f" effective batch {g.effective_batch}" for g in found.groups]
    lines += ["", _answer(plan), ""]
    unit = "$/run" if plan.unit == "run" else "$/sweep"
    columns: list[Column] = [
        ("gpu", "GPU", plain), ("provider", "provider", plain), ("region", "region", plain),
        ("instance_type", "instance", plain), ("pricing", "pricing", plain),
        ("rate_hour", "$/h", fixed(3)), ("instance_hours", "inst-h", fixed(2)),
        ("gpu_hours", "GPU-h", fixed(2)),
        ("cost", "$ total", fixed(2)),
        ("unit_cost", unit, fixed(2)), ("instances", "instances", plain),
        ("wall_hours", "wall h", fixed(2)), ("meets_deadline", "meets deadline", yes_no),
        ("units_bought", "runs bought" if plan.unit == "run" else "sweeps bought", plain),
        ("within_budget", "all in budget", yes_no), ("splits", "m x k", plain),
    ]
    if plan.unit == "sweep":  # one sweep is the whole job: same as "$ total"
        columns = [c for c in columns if c[0] != "unit_cost"]
    if not wide:
        short = {"region": short_region, "splits": _short_splits}
        columns = [(k, SHORT_HEADS.get(h, h), short.get(k, f))
                   for k, h, f in columns if k in NARROW]
    lines.append(table_text(rows, columns, compact=not wide))
    lines += ["", f"assumptions: whole runs packed longest first onto instances of one offer; "
              f"a run's hours include its checkpoints (the job's save_steps); cost = "
              f"instance-hours (inst-h) x rate; spot hours +{allowance:.0%} for interruptions"]
    lines += [f"note: {n}" for n in notes]
    lines.append(f"prices: {prices}")
    return "\n".join(lines if wide else fit_width(lines))


def _short_splits(text: Any) -> str:
    """``group=4x1 other=16x1`` as the distinct splits (``4x1,16x1``) when it is long."""
    value = plain(text)
    if len(value) <= 20:
        return value
    return ",".join(dict.fromkeys(part.split("=")[-1] for part in value.split()))


SHORT_HEADS = {"instances": "inst.", "meets deadline": "in time", "runs bought": "buys",
               "sweeps bought": "buys"}


def _answer(plan: BudgetPlan) -> str:
    b, p = plan.best, plan.best.plan
    if plan.deadline_hours is not None:
        text = (f"Deadline {hours_text(plan.deadline_hours)} (at most "
                f"{plan.limits.max_instances} instances): cheapest is {p.label} on "
                f"{p.instances} instance(s): {p.wall_hours:.2f} h wall-clock, "
                f"{_hours(p)}, ${p.cost:.2f}")
        if plan.budget_usd is not None:
            text += f" (budget ${plan.budget_usd:g})"
        other = best_by_pricing(plan, "on-demand" if p.pricing == "spot" else "spot")
        if other is not None:
            text += (f"\n  best {other.plan.pricing}: {other.plan.label} on "
                     f"{other.plan.instances} instance(s): {other.plan.wall_hours:.2f} h, "
                     f"${other.plan.cost:.2f}")
        return text
    if plan.objective.ranks_by_time:
        budget = plan.objective.budget_usd  # MinTime has none: a --budget only counts runs
        within = "" if budget is None else f" within ${budget:g}"
        return (f"Quickest{within} (at most {plan.limits.max_instances} instances): {p.label}"
                f" on {p.instances} instance(s): {p.wall_hours:.2f} h wall-clock, {_hours(p)},"
                f" ${p.cost:.2f} for {plan.runs} run(s)")
    if plan.budget_usd is not None:
        what = "runs" if plan.unit == "run" else "complete sweeps"
        return (f"Budget ${plan.budget_usd:g}: {p.label} buys the most, {b.units_bought} "
                f"{what} at ${b.unit_cost:.2f} each (the job needs {plan.runs} run(s), "
                f"${p.cost:.2f} there)")
    return (f"Cheapest: {p.label}: {_hours(p)}, ${p.cost:.2f} for {plan.runs} "
            f"run(s), {p.wall_hours:.2f} h wall-clock on {p.instances} instance(s)")


def _hours(p: Plan) -> str:
    """``1.50 instance-h``, with the GPU-hours when an instance has several GPUs."""
    text = f"{p.instance_hours:.2f} instance-h"
    return text if p.offer.gpu_count == 1 else f"{text} ({p.gpu_hours:.2f} GPU-h)"
