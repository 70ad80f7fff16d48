"""The same fine-tune priced at every provider and region, and the GPUs' break-even matrix.

For one GPU (default: the one ``recommend`` picks), every single-GPU offer runs the job at
its best split (the fastest that fits; the rate does not change which split is fastest),
cheapest first, with the spread of the totals. The break-even matrix compares GPUs at
their fastest fitting splits: cell (A, B) = 1 / r with r = t_A / t_B, so A is the cheaper
fine-tune iff rate_A < cell x rate_B.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gacost.advisor.breakeven import BreakEven
from gacost.advisor.budget import OfferPlan, collect, groups_dict, splits_text
from gacost.advisor.recommend import recommend
from gacost.base import gpu_table
from gacost.base.errors import InfeasibleError, UnknownNameError
from gacost.base.job import Job
from gacost.base.profile import Profile
from gacost.base.records import Offer


@dataclass(frozen=True)
class Spread:
    """Min, median and max of the totals over the offers, and max / min."""

    low: float
    median: float
    high: float

    @property
    def ratio(self) -> float:
        """How many times the dearest offer costs the cheapest."""
        return self.high / self.low if self.low > 0 else float("inf")


@dataclass(frozen=True)
class Comparison:
    """Offers of one GPU cheapest first, the spread, and break-even thresholds."""

    model: str
    gpu: str
    runs: int
    rows: list[OfferPlan]
    spread: Spread
    gpus_by_cost: list[str]
    matrix_gpus: list[str]
    break_evens: list[BreakEven]
    notes: list[str] = field(default_factory=list)

    def threshold(self, a: str, b: str) -> float | None:
        """1 / r for A against B, None when either has no estimate."""
        for be in self.break_evens:
            if (be.gpu_a, be.gpu_b) == (a, b):
                return be.threshold
        return None


def spread(costs: Sequence[float]) -> Spread:
    """Min, median and max of ``costs`` (at least one)."""
    return Spread(min(costs), statistics.median(costs), max(costs))


def _unconstrained(job: Job, spot: bool) -> Job:
    return job.model_copy(update={
        "sweep": None, "runs": job.total_runs, "objective": "min_cost",
        "deadline_hours": None, "budget_usd": None, "spot": spot,
    })


def _pick_gpu(job: Job, offers: Sequence[Offer], profiles: Sequence[Profile], gpu: str | None,
              fallback: str, notes: list[str]) -> str:
    if gpu is not None:
        try:
            names = gpu_table.resolve_gpus([gpu])
        except UnknownNameError as exc:
            raise UnknownNameError(f"--gpu: {exc}") from None
        if len(names) != 1:
            raise UnknownNameError(
                f"--gpu: '{gpu}' is a family ({', '.join(names)}); name one of them"
            )
        return names[0]
    try:
        return recommend(job.model_copy(update={"sweep": None}), offers, profiles,
                         top=1).recommended.gpu
    except InfeasibleError as exc:
        notes.append(f"the job's constraints are not met ({exc}); comparing the cheapest GPU")
        return fallback


def compare(
    job: Job,
    offers: Sequence[Offer],
    profiles: Sequence[Profile] = (),
    *,
    gpu: str | None = None,
    spot: bool = False,
    spot_allowance: float = 0.2,
    matrix_size: int = 6,
) -> Comparison:
    """Price the job at every offer of one GPU and compare GPUs by break-even ratio."""
    spot = spot or job.spot
    overview = recommend(_unconstrained(job, spot), offers, profiles,
                         top=2 * len(offers) + 1)
    notes = list(overview.notes)
    by_cost = list(dict.fromkeys(p.gpu for p in overview.plans))
    chosen = _pick_gpu(job, offers, profiles, gpu, overview.recommended.gpu, notes)
    wanted = None if job.providers is None else {p.lower() for p in job.providers}
    if not any(o.gpu == chosen and o.gpu_count == 1
               and (wanted is None or o.provider in wanted) for o in offers):
        raise InfeasibleError(
            f"--gpu: no single-GPU offer for {chosen} in the price data"
            f"{' for the job providers' if wanted else ''}; GPUs with offers: "
            f"{', '.join(by_cost)}"
        )
    for skipped in overview.skipped:
        if skipped.gpu == chosen:
            raise InfeasibleError(f"--gpu: {chosen} cannot run the job: {skipped.reason}")
    try:
        found = collect(job.model_copy(update={"gpus": [chosen]}), offers, profiles,
                        spot=spot, spot_allowance=spot_allowance)
    except InfeasibleError as exc:
        raise InfeasibleError(f"--gpu: {chosen}: {exc}") from None
    rows = sorted(found.plans, key=lambda p: (p.cost, p.gpu_hours, p.key))
    shown = by_cost[:matrix_size]
    if chosen in overview.best and chosen not in shown:
        shown = [*shown[: matrix_size - 1], chosen]
    notes += found.dropped
    return Comparison(
        model=overview.model, gpu=chosen, runs=job.total_runs, rows=rows,
        spread=spread([p.cost for p in rows]), gpus_by_cost=by_cost,
        matrix_gpus=[g for g in shown if g in overview.best],
        break_evens=overview.break_evens, notes=notes,
    )


def row_dict(p: OfferPlan, cheapest: float) -> dict[str, Any]:
    """One offer as a flat dict (numbers stay numbers); the table shows the same fields."""
    return {
        "gpu": p.gpu, "provider": p.provider, "region": p.region,
        "instance_type": p.instance_type, "pricing": p.pricing, "rate_hour": p.rate_hour,
        "spot_allowance": p.allowance,
        "splits": splits_text(p),
        "time_source": "/".join(dict.fromkeys(g.time_source for g in p.groups)),
        "runs": p.runs, "gpu_hours": p.gpu_hours, "cost_per_run": p.cost / p.runs,
        "cost": p.cost, "vs_cheapest": p.cost / cheapest if cheapest > 0 else None,
    }


def comparison_dict(c: Comparison) -> dict[str, Any]:
    """The JSON form: every row, the spread, and the break-even matrix of every GPU."""
    gpus = sorted({b.gpu_a for b in c.break_evens} | {b.gpu_b for b in c.break_evens})
    low = c.spread.low
    return {
        "model": c.model, "gpu": c.gpu, "runs": c.runs,
        "rows": [{**row_dict(p, low), "groups": groups_dict(p)} for p in c.rows],
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
