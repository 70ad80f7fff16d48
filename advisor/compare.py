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

from gacost.advisor.breakeven import BreakEven
from gacost.advisor.budget import collect
from gacost.advisor.estimate import HostProbe
from gacost.advisor.objectives import MinCost
from gacost.advisor.planner import Limits, Plan, plan
from gacost.advisor.recommend import recommend
from gacost.base.errors import InfeasibleError, UnknownNameError
from gacost.base.gpu_names import no_spec_text, resolve_gpus, without_spec
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
    rows: list[Plan]
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


def _unconstrained(job: Job, spot: bool, allowance: float) -> Job:
    return job.model_copy(update={
        "sweep": None, "runs": job.total_runs, "objective": "min_cost",
        "deadline_hours": None, "budget_usd": None, "spot": spot, "spot_allowance": allowance,
    })


def _pick_gpu(job: Job, offers: Sequence[Offer], profiles: Sequence[Profile], gpu: str | None,
              fallback: str, notes: list[str], by_cost: Sequence[str],
              host_probe: HostProbe | None = None) -> str:
    """The GPU to compare: ``gpu`` (a family, as ``prices --gpu`` takes it: its member the
    job runs cheapest on), else the one ``recommend`` picks."""
    if gpu is not None:
        try:
            names = resolve_gpus([gpu], priced=(o.gpu for o in offers))
        except UnknownNameError as exc:
            raise UnknownNameError(f"--gpu: {exc}") from None
        if without_spec(names):
            raise UnknownNameError(f"--gpu: {no_spec_text(names)}")
        if len(names) == 1:
            return names[0]
        priced = [g for g in by_cost if g in names]
        if not priced:
            raise InfeasibleError(
                f"--gpu: no offer in the price data runs the job on the {gpu} family "
                f"({', '.join(names)}); GPUs with offers: {', '.join(by_cost)}")
        notes.append(f"--gpu {gpu} is a family ({', '.join(names)}): comparing {priced[0]}, "
                     f"the cheapest of them for this job; --gpu NAME compares another")
        return priced[0]
    try:
        return recommend(job.model_copy(update={"sweep": None}), offers, profiles,
                         top=1, host_probe=host_probe).recommended.gpu
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
    spot_allowance: float | None = None,
    matrix_size: int = 6,
    host_probe: HostProbe | None = None,
) -> Comparison:
    """Price the job at every offer of one GPU and compare GPUs by break-even ratio;
    ``host_probe``: the instance to train on (:func:`~gacost.advisor.estimate.estimate_job`)."""
    spot = spot or job.spot
    allowance = job.spot_allowance if spot_allowance is None else spot_allowance
    overview = recommend(_unconstrained(job, spot, allowance), offers, profiles,
                         top=2 * len(offers) + 1, host_probe=host_probe)
    notes = list(overview.notes)
    by_cost = list(dict.fromkeys(p.gpu for p in overview.plans))
    chosen = _pick_gpu(job, offers, profiles, gpu, overview.recommended.gpu, notes, by_cost,
                       host_probe)
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
    limits = Limits(spot=spot, spot_allowance=allowance)
    try:
        found = collect(job.model_copy(update={"gpus": [chosen]}), offers, profiles, limits,
                        host_probe=host_probe)
    except InfeasibleError as exc:
        raise InfeasibleError(f"--gpu: {chosen}: {exc}") from None
    rows = plan(found.plans, MinCost(), limits)
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
