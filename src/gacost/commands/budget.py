"""``gacost budget --job F``: totals, wall-clock, deadline and budget plans for many runs."""

from __future__ import annotations

import argparse
import json

from gacost.advisor.budget import collect, parse_hours, plan_budget
from gacost.advisor.estimate import job_limits
from gacost.base.errors import JobSpecError
from gacost.commands.inputs import add_common, load_inputs, number, trl_notes
from gacost.reports.budget import budget_row, plan_dict, render_text
from gacost.reports.formats import rows_csv


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the subcommand."""
    p = sub.add_parser("budget", help="plan many runs or a sweep: totals, deadline, budget")
    add_common(p)
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
    job, table, profiles, allowance = inputs.job, inputs.table, inputs.profiles, inputs.allowance
    notes = []
    if deadline is None and job.deadline_hours is not None:
        deadline = job.deadline_hours
        notes.append(f"deadline {deadline:g} h from the job's deadline_hours")
    if budget is None and job.budget_usd is not None:
        budget = job.budget_usd
        notes.append(f"budget ${budget:g} from the job's budget_usd")
    spot = args.spot or job.spot
    limits = job_limits(job, spot=spot, spot_allowance=allowance, parallel=parallel,
                        max_instances=max_instances)
    found = collect(job, table.offers, profiles, limits)
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


