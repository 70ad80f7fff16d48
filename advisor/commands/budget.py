"""``gacost budget --job F``: totals, wall-clock, deadline and budget plans for many runs."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from typing import Any

from tabulate import tabulate

from advisor.budget import (
    BudgetPlan,
    Collected,
    best_by_pricing,
    collect,
    groups_dict,
    hours_text,
    parse_hours,
    plan_budget,
)
from advisor.budget import row_dict as budget_row
from advisor.commands.common import price_table
from advisor.errors import JobSpecError
from advisor.job import Job, load_job
from advisor.profile import Profile, read_profile
from advisor.render import rows_csv
from pricing.snapshot import PriceTable

Column = tuple[str, str, Callable[[Any], str]]


def add_common(p: argparse.ArgumentParser) -> None:
    """Flags shared by ``budget`` and ``compare``."""
    p.add_argument("--job", required=True, help="the job spec (YAML), with runs: or sweep:")
    p.add_argument("--profile", action="append", default=[], metavar="P",
                   help="a calibration profile (JSON) to use; repeatable")
    p.add_argument("--prices", metavar="F",
                   help="a price file in the snapshot CSV format (default: embedded snapshot)")
    p.add_argument("--spot", action="store_true",
                   help="also price spot offers (as the job's spot: true does)")
    p.add_argument("--spot-allowance", default="0.2", metavar="X",
                   help="extra time added to spot runs for interruptions (default 0.2 = 20%%)")
    p.add_argument("--format", choices=("table", "json", "csv"), default="table")
    p.add_argument("--refresh-prices", action="store_true",
                   help="fetch price sources whose cache is older than the max age first "
                        "(network; see `gacost prices --list-sources`)")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the subcommand."""
    p = sub.add_parser("budget", help="plan many runs or a sweep: totals, deadline, budget")
    add_common(p)
    p.add_argument("--budget", metavar="USD", help="dollars: the most runs or sweeps it buys")
    p.add_argument("--deadline", metavar="T",
                   help="finish all runs within T (12h, 90m, 1.5d or hours)")
    p.add_argument("--max-instances", default="8", metavar="P",
                   help="instances one plan may run in parallel to meet --deadline (default 8)")
    p.add_argument("--parallel", default="1", metavar="P",
                   help="instances for the wall-clock column (default 1)")
    p.add_argument("--top", default="10", metavar="N", help="show the N best offers (default 10)")
    p.set_defaults(run=run)


def number(flag: str, text: str, *, low: float = 0.0, high: float = float("inf"),
           integer: bool = False, strict_low: bool = True) -> float:
    """A flag's number, or a one-line ``--flag: ...`` error (exit code 2)."""
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        kind = "an integer" if integer else "a number"
        raise JobSpecError(f"{flag}: expected {kind}, got {text!r}") from None
    too_low = value <= low if strict_low else value < low
    if too_low or value > high or value != value:
        bound = f"> {low:g}" if strict_low else f">= {low:g}"
        upper = f" and <= {high:g}" if high != float("inf") else ""
        raise JobSpecError(f"{flag}: must be {bound}{upper}, got {text}")
    return value


def load_inputs(args: argparse.Namespace) -> tuple[Job, PriceTable, list[Profile], float]:
    """The job, price table, profiles and spot allowance of the shared flags."""
    allowance = number("--spot-allowance", args.spot_allowance, low=0.0, high=10.0,
                       strict_low=False)
    job = load_job(args.job)
    profiles = [read_profile(p) for p in args.profile]
    return job, price_table(args.prices, refresh=args.refresh_prices), profiles, allowance


def run(args: argparse.Namespace) -> str:
    """Compute and render the plan."""
    parallel = int(number("--parallel", args.parallel, integer=True, high=100_000))
    max_instances = int(number("--max-instances", args.max_instances, integer=True,
                               high=100_000))
    top = int(number("--top", args.top, integer=True))
    budget = None if args.budget is None else number("--budget", args.budget)
    try:
        deadline = None if args.deadline is None else parse_hours(args.deadline)
    except ValueError as exc:
        raise JobSpecError(f"--deadline: {exc}") from None
    job, table, profiles, allowance = load_inputs(args)
    notes = []
    if deadline is None and job.deadline_hours is not None:
        deadline = job.deadline_hours
        notes.append(f"deadline {deadline:g} h from the job's deadline_hours")
    if budget is None and job.budget_usd is not None:
        budget = job.budget_usd
        notes.append(f"budget ${budget:g} from the job's budget_usd")
    spot = args.spot or job.spot
    found = collect(job, table.offers, profiles, spot=spot, spot_allowance=allowance)
    plan = plan_budget(found.plans, parallel=parallel, deadline_hours=deadline,
                       budget_usd=budget, max_instances=max_instances)
    notes = [*notes, *plan.notes, *found.notes]
    if not spot:
        notes.append("spot prices not considered (the job has spot: false; --spot adds them)")
    prices = f"{table.source}, as of {table.as_of}"
    if args.format == "json":
        return json.dumps(plan_dict(found, plan, allowance, notes, prices), indent=2)
    rows = [budget_row(r) for r in plan.rows[:top]]
    if args.format == "csv":
        return rows_csv(rows).rstrip("\n")
    return render_text(found, plan, allowance, rows, notes, prices)


def plan_dict(found: Collected, plan: BudgetPlan, allowance: float, notes: list[str],
              prices: str) -> dict[str, Any]:
    """The JSON form: every row (with per-group details) and the parameters."""
    return {
        "model": found.model,
        "groups": [vars(g) for g in found.groups],
        "runs": plan.runs, "unit": plan.unit,
        "assumptions": {"packing": "longest-processing-time first", "spot_allowance":
                        allowance, "billing": "GPU-hours x rate"},
        "parallel": plan.parallel, "max_instances": plan.max_instances,
        "deadline_hours": plan.deadline_hours, "budget_usd": plan.budget_usd,
        "best": {**budget_row(plan.best), "groups": groups_dict(plan.best.plan)},
        "best_by_pricing": {
            pricing: None if row is None else budget_row(row)
            for pricing in ("on-demand", "spot")
            for row in [best_by_pricing(plan, pricing)]
        },
        "rows": [{**budget_row(r), "groups": groups_dict(r.plan)} for r in plan.rows],
        "notes": notes, "prices": prices,
    }


def fixed(digits: int) -> Callable[[Any], str]:
    return lambda v: "" if v is None else f"{v:.{digits}f}"


def yes_no(v: Any) -> str:
    return "" if v is None else ("yes" if v else "no")


def plain(v: Any) -> str:
    return "" if v is None else str(v)


def table_text(rows: Sequence[dict[str, Any]], columns: Sequence[Column]) -> str:
    """Dict rows as a text table of the columns present in the rows."""
    present = [c for c in columns if rows and c[0] in rows[0]]
    return tabulate([[fmt(r[key]) for key, _, fmt in present] for r in rows],
                    headers=[h for _, h, _ in present], disable_numparse=True)


def render_text(found: Collected, plan: BudgetPlan, allowance: float,
                rows: Sequence[dict[str, Any]], notes: Sequence[str], prices: str) -> str:
    """The human report: the groups, the answer in one line, the table, the notes."""
    lines = [f"Job: {found.model}, {plan.runs} run(s) in {len(found.groups)} group(s)"]
    lines += [f"  {g.name}: {g.runs} run(s) x {g.updates} updates, sequence {g.sequence_length},"
              f" effective batch {g.effective_batch}" for g in found.groups]
    lines += ["", _answer(plan), ""]
    unit = "$/run" if plan.unit == "run" else "$/sweep"
    columns: list[Column] = [
        ("gpu", "GPU", plain), ("provider", "provider", plain), ("region", "region", plain),
        ("instance_type", "instance", plain), ("pricing", "pricing", plain),
        ("rate_hour", "$/h", fixed(3)), ("gpu_hours", "GPU-h", fixed(2)),
        ("cost", "$ total", fixed(2)),
        ("unit_cost", unit, fixed(2)), ("wall_hours", f"wall h on {plan.parallel}", fixed(2)),
        ("instances", "instances", plain), ("deadline_wall_hours", "wall h", fixed(2)),
        ("meets_deadline", "meets deadline", yes_no),
        ("units_bought", "runs bought" if plan.unit == "run" else "sweeps bought", plain),
        ("within_budget", "all in budget", yes_no), ("splits", "m x k", plain),
    ]
    if plan.unit == "sweep":  # one sweep is the whole job: same as "$ total"
        columns = [c for c in columns if c[0] != "unit_cost"]
    lines.append(table_text(rows, columns))
    lines += ["", f"assumptions: whole runs packed longest first onto instances of one offer; "
              f"cost = GPU-hours x rate; spot hours +{allowance:.0%} for interruptions"]
    lines += [f"note: {n}" for n in notes]
    lines.append(f"prices: {prices}")
    return "\n".join(lines)


def _answer(plan: BudgetPlan) -> str:
    b, p = plan.best, plan.best.plan
    if plan.deadline_hours is not None:
        text = (f"Deadline {hours_text(plan.deadline_hours)} (at most {plan.max_instances} "
                f"instances): cheapest is {p.label} on {b.instances} instance(s): "
                f"{b.deadline_wall_hours or 0.0:.2f} h wall-clock, {p.gpu_hours:.2f} GPU-h, "
                f"${p.cost:.2f}")
        if plan.budget_usd is not None:
            text += f" (budget ${plan.budget_usd:g})"
        other = best_by_pricing(plan, "on-demand" if p.pricing == "spot" else "spot")
        if other is not None:
            text += (f"\n  best {other.plan.pricing}: {other.plan.label} on {other.instances} "
                     f"instance(s): {other.deadline_wall_hours or 0.0:.2f} h, "
                     f"${other.plan.cost:.2f}")
        return text
    if plan.budget_usd is not None:
        what = "runs" if plan.unit == "run" else "complete sweeps"
        return (f"Budget ${plan.budget_usd:g}: {p.label} buys the most, {b.units_bought} "
                f"{what} at ${b.unit_cost:.2f} each (the job needs {plan.runs} run(s), "
                f"${p.cost:.2f} there)")
    return (f"Cheapest: {p.label}: {p.gpu_hours:.2f} GPU-h, ${p.cost:.2f} for {plan.runs} "
            f"run(s), {b.wall_hours:.2f} h wall-clock on {plan.parallel} instance(s)")
