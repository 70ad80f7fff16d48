"""The solver: (estimates, offers, constraints) -> ranked plans. Pure functions only.

A plan is one GPU offer (on-demand or spot) with one split. Cost per run is
``seconds_per_update * updates * rate / 3600``; runs are sequential on one instance. A
data-parallel estimate over N GPUs pairs with offers of exactly N GPUs, priced per instance
(all N GPUs); single-GPU estimates pair with single-GPU offers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from gacost.advisor.split_estimates import Source, SplitEstimate
from gacost.base.errors import InfeasibleError
from gacost.base.records import Offer

Pricing = Literal["on-demand", "spot"]


@dataclass(frozen=True)
class Constraints:
    """What the user asked for, in solver terms."""

    updates: int
    runs: int
    objective: str = "min_cost"
    spot: bool = False
    deadline_hours: float | None = None
    budget_usd: float | None = None


@dataclass(frozen=True)
class Plan:
    """One way to run the job: an offer, a pricing option and a split."""

    gpu: str
    provider: str
    region: str
    instance_type: str
    gpu_count: float
    pricing: Pricing
    rate_hour: float
    micro_batch: int
    grad_accum: int
    seconds_per_update: float
    time_source: Source
    peak_gib: float | None
    usable_gib: float
    fits: bool
    hours_per_run: float
    cost_per_run: float
    hours_all_runs: float
    cost_all_runs: float
    price_source: str
    price_date: str
    world_size: int = 1

    @property
    def split(self) -> str:
        """``m x k`` as text, with `` x N GPUs`` for a data-parallel run."""
        base = f"{self.micro_batch}x{self.grad_accum}"
        return base if self.world_size == 1 else f"{base} x {self.world_size} GPUs"


def run_cost(seconds_per_update: float, updates: int, rate_hour: float) -> float:
    """Dollars for one run: seconds x rate / 3600."""
    return seconds_per_update * updates * rate_hour / 3600.0


def _price_options(offer: Offer, spot: bool) -> list[tuple[Pricing, float]]:
    options: list[tuple[Pricing, float]] = []
    if offer.price_hour is not None and offer.price_hour > 0:
        options.append(("on-demand", offer.price_hour))
    if spot and offer.spot_hour is not None and offer.spot_hour > 0:
        options.append(("spot", offer.spot_hour))
    return options


def enumerate_plans(
    estimates: Sequence[SplitEstimate], offers: Sequence[Offer], c: Constraints
) -> list[Plan]:
    """Every (offer, pricing, split) whose split fits the GPU and has a time.

    An estimate for N GPUs per run pairs only with offers of ``gpu_count == N``.
    """
    by_gpu: dict[tuple[str, float], list[SplitEstimate]] = {}
    for e in estimates:
        if e.fits and e.seconds_per_update is not None:
            by_gpu.setdefault((e.gpu, float(e.world_size)), []).append(e)
    plans: list[Plan] = []
    for offer in offers:
        for pricing, rate in _price_options(offer, c.spot):
            for e in by_gpu.get((offer.gpu, float(offer.gpu_count)), ()):
                assert e.seconds_per_update is not None
                hours = e.seconds_per_update * c.updates / 3600.0
                cost = run_cost(e.seconds_per_update, c.updates, rate)
                plans.append(
                    Plan(
                        gpu=offer.gpu,
                        provider=offer.provider,
                        region=offer.region,
                        instance_type=offer.instance_type,
                        gpu_count=offer.gpu_count,
                        pricing=pricing,
                        rate_hour=rate,
                        micro_batch=e.micro_batch,
                        grad_accum=e.grad_accum,
                        seconds_per_update=e.seconds_per_update,
                        time_source=e.time_source,
                        peak_gib=e.peak_gib,
                        usable_gib=e.usable_gib,
                        fits=e.fits,
                        hours_per_run=hours,
                        cost_per_run=cost,
                        hours_all_runs=hours * c.runs,
                        cost_all_runs=cost * c.runs,
                        price_source=offer.source,
                        price_date=offer.fetched_at,
                        world_size=e.world_size,
                    )
                )
    return plans


def _sort_key(objective: str) -> Callable[[Plan], tuple[float, float, str, str]]:
    if objective in ("min_time", "min_time_under_budget"):
        return lambda p: (p.hours_all_runs, p.cost_all_runs, p.provider, p.region)
    return lambda p: (p.cost_all_runs, p.hours_all_runs, p.provider, p.region)


def rank(plans: Sequence[Plan], c: Constraints) -> list[Plan]:
    """Plans that meet the constraints, best first; InfeasibleError when none does."""
    if not plans:
        raise InfeasibleError(
            "no split of the job fits any candidate GPU that has a price; allow more GPUs "
            "(gpus:), a smaller sequence_length, gradient_checkpointing: true or method: qlora"
        )
    kept = list(plans)
    if c.objective == "min_cost_under_deadline":
        assert c.deadline_hours is not None
        kept = [p for p in plans if p.hours_all_runs <= c.deadline_hours]
        if not kept:
            fastest = min(plans, key=lambda p: p.hours_all_runs)
            raise InfeasibleError(
                f"deadline_hours: no plan finishes {c.runs} run(s) in {c.deadline_hours:g} h; "
                f"the fastest ({fastest.gpu} on {fastest.provider}, {fastest.split}) needs "
                f"{fastest.hours_all_runs:.2f} h: raise deadline_hours to at least "
                f"{fastest.hours_all_runs:.2f} or lower runs"
            )
    elif c.objective == "min_time_under_budget":
        assert c.budget_usd is not None
        kept = [p for p in plans if p.cost_all_runs <= c.budget_usd]
        if not kept:
            cheapest = min(plans, key=lambda p: p.cost_all_runs)
            raise InfeasibleError(
                f"budget_usd: no plan runs {c.runs} run(s) for ${c.budget_usd:g}; the cheapest "
                f"({cheapest.gpu} on {cheapest.provider}, {cheapest.split}) costs "
                f"${cheapest.cost_all_runs:.2f}: raise budget_usd to at least "
                f"{cheapest.cost_all_runs:.2f} or lower runs"
            )
    return sorted(kept, key=_sort_key(c.objective))


def best_per_offer(plans: Sequence[Plan]) -> list[Plan]:
    """Keep the first (best-ranked) plan of every offer and pricing option, order kept."""
    seen: set[tuple[str, str, str, str, str]] = set()
    out = []
    for p in plans:
        key = (p.gpu, p.provider, p.region, p.instance_type, p.pricing)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out
