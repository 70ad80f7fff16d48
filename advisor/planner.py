"""The one planner: (run groups and their split estimates, offers, objective) -> ranked plans.

``recommend``, ``budget`` and ``compare`` all plan through :func:`plan`. A :class:`Plan` is
one offer and pricing option (on-demand or spot) running every run of the job:

- each run group runs at its fastest split that fits the offer's GPU (at one rate the
  fastest split is also the cheapest); a data-parallel estimate over N GPUs pairs with
  offers of exactly N GPUs, priced per instance;
- a run is indivisible and runs on one instance; ``instances`` instances of the offer run
  the runs in parallel, packed longest first (LPT: each run, longest first, goes to the
  least-loaded instance); the wall-clock is the makespan of that packing. Runs are
  identical within a group, so they are packed as ``(hours, count)`` blocks: a big block
  in arithmetic (:func:`level_fill`), which gives what one-by-one LPT gives, so planning
  costs grow with the instances, not with the run count;
- billing is per busy hour: cost = instance-hours x rate, whatever the instance count
  (GPU-hours = instance-hours x GPUs per instance);
- spot hours carry the spot allowance (0.2 = 20 % more time for interruptions and
  restarts) in wall-clock and cost alike;
- the objective (:mod:`gacost.advisor.objectives`) picks the instance count within
  :class:`Limits` and ranks the plans.

Plans hold references to their offer and estimates, not copies. Pure functions only.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from gacost.advisor import checkpoints, offer_costs
from gacost.advisor.split_estimates import Source, SplitEstimate
from gacost.base.errors import InfeasibleError
from gacost.base.records import Offer

if TYPE_CHECKING:
    from gacost.advisor.objectives import Objective

Pricing = Literal["on-demand", "spot"]
OfferKey = tuple[str, str, str, str, str]
TOL = 1e-9  # relative tolerance of every deadline and budget comparison
Runs = Sequence[tuple[float, int]]  # (hours of one run, how many runs take that long)
EXACT_UPTO = 256  # blocks of at most this many runs are packed one by one (the heap)
NOTHING_FITS = (
    "no split of the job fits any candidate GPU that has a price; allow more GPUs (gpus:), a "
    "smaller sequence_length, gradient_checkpointing: true or method: qlora"
)


@dataclass(frozen=True)
class Limits:
    """What the user allows: spot, its time allowance, and parallel instances.

    ``parallel``: instances a plan runs on when the objective does not ask for more (the
    wall-clock of a cost objective); ``max_instances``: the most instances of one offer a
    deadline or time objective may rent at once.
    """

    spot: bool = False
    spot_allowance: float = 0.2
    parallel: int = 1
    max_instances: int = 8

    def __post_init__(self) -> None:
        if not (math.isfinite(self.spot_allowance) and 0.0 <= self.spot_allowance <= 10.0):
            raise ValueError(f"spot allowance must be from 0 to 10, got {self.spot_allowance}")
        if self.parallel < 1 or self.max_instances < 1:
            raise ValueError("parallel and max_instances must be at least 1")


@dataclass(frozen=True)
class RunGroup:
    """A group of identical runs as planned (the whole job is one group without a sweep)."""

    name: str
    runs: int
    updates: int
    sequence_length: int
    effective_batch: int
    save_every: int = 0  # updates between checkpoints (0: none); one more at the end
    save_bytes: float = 0.0  # bytes of one checkpoint (advisor.checkpoints)

    @property
    def saves(self) -> int:
        """Checkpoints of one run: every ``save_every`` updates and at the end."""
        return checkpoints.saves_per_run(self.updates, self.save_every)


@dataclass(frozen=True)
class GroupRun:
    """One run group on one offer at its chosen split."""

    group: RunGroup
    estimate: SplitEstimate

    @property
    def seconds_per_update(self) -> float:
        """The estimate's seconds per update."""
        assert self.estimate.seconds_per_update is not None
        return self.estimate.seconds_per_update

    @property
    def hours_per_run(self) -> float:
        """One run's hours, without any spot allowance: the updates, the estimate's
        once-per-run set-up (torch.compile's compilation) and the run's checkpoints."""
        return (self.seconds_per_update * self.group.updates
                + self.estimate.setup_seconds + self.checkpoint_seconds) / 3600.0

    @property
    def save_rate(self) -> float:
        """Seconds per GB of checkpoint on this GPU's machine: recorded by a run there
        (the estimate's), else the measured default."""
        return self.estimate.save_seconds_per_gb or checkpoints.SAVE_SECONDS_PER_GB

    @property
    def checkpoint_seconds(self) -> float:
        """Seconds one run spends writing its checkpoints."""
        return self.group.saves * checkpoints.save_seconds(self.group.save_bytes, self.save_rate)

    @property
    def hours_band(self) -> tuple[float, float] | None:
        """One run's 90 % band of hours: the seconds per update's band, and the checkpoints
        at the machine's recorded rate, else at the measured range of seconds per GB
        (``checkpoints.SAVE_SECONDS_PER_GB_RANGE``)."""
        band = self.estimate.seconds_band
        if band is None:
            return None
        g = self.group
        rates = ((self.save_rate,) * 2 if self.estimate.save_seconds_per_gb
                 else checkpoints.SAVE_SECONDS_PER_GB_RANGE)
        saves = [g.saves * checkpoints.save_seconds(g.save_bytes, rate) for rate in rates]
        lo, hi = ((s * g.updates + self.estimate.setup_seconds + c) / 3600.0
                  for s, c in zip(band, saves, strict=True))
        return lo, hi


@dataclass(frozen=True)
class Plan:
    """One offer and pricing option running every run group, on ``instances`` instances."""

    offer: Offer
    pricing: Pricing
    rate_hour: float
    groups: tuple[GroupRun, ...]
    allowance: float = 0.0
    instances: int = 1

    # -- the offer
    @property
    def gpu(self) -> str:
        """The offer's GPU."""
        return self.offer.gpu

    @property
    def provider(self) -> str:
        """The offer's provider."""
        return self.offer.provider

    @property
    def region(self) -> str:
        """The offer's region."""
        return self.offer.region

    @property
    def instance_type(self) -> str:
        """The offer's instance type."""
        return self.offer.instance_type

    @property
    def key(self) -> OfferKey:
        """Identifies the offer and pricing option."""
        o = self.offer
        return (o.gpu, o.provider, o.region, o.instance_type, self.pricing)

    @property
    def label(self) -> str:
        """``GPU on provider region (instance, pricing)``."""
        return (f"{self.gpu} on {self.provider} {self.region} "
                f"({self.instance_type}, {self.pricing})")

    # -- the first group's split (the whole job without a sweep)
    @property
    def estimate(self) -> SplitEstimate:
        """The split estimate of the first run group."""
        return self.groups[0].estimate

    @property
    def split(self) -> str:
        """``m x k`` as text (with the machinery options on, e.g. ``+compile``), with
        `` x N GPUs`` for a data-parallel run."""
        e = self.estimate
        base = e.split_label
        return base if e.world_size == 1 else f"{base} x {e.world_size} GPUs"

    @property
    def time_source(self) -> Source:
        """``measured`` when every group's time is measured, else ``predicted``."""
        if all(g.estimate.time_source == "measured" for g in self.groups):
            return "measured"
        return "predicted"

    # -- time and money
    def wall_hours_per_run(self, g: GroupRun) -> float:
        """One run's hours on this offer, the spot allowance included."""
        return g.hours_per_run * (1.0 + self.allowance)

    @property
    def hours_per_run(self) -> float:
        """One run of the first group, the spot allowance included."""
        return self.wall_hours_per_run(self.groups[0])

    @property
    def hours_band(self) -> tuple[float, float] | None:
        """The 90 % band of :attr:`hours_per_run`, when the estimate has one."""
        band = self.groups[0].hours_band
        return None if band is None else (band[0] * (1.0 + self.allowance),
                                          band[1] * (1.0 + self.allowance))

    @property
    def cost_per_run(self) -> float:
        """Dollars for one run of the first group: seconds x rate / 3600, with the spot
        allowance."""
        g = self.groups[0]
        return g.hours_per_run * self.rate_hour * (1.0 + self.allowance)

    @property
    def runs(self) -> int:
        """Runs in all."""
        return sum(g.group.runs for g in self.groups)

    def run_blocks(self) -> tuple[tuple[float, int], ...]:
        """The runs as ``(hours, count)`` blocks, longest first (allowance included)."""
        return merged_blocks((self.wall_hours_per_run(g), g.group.runs) for g in self.groups)

    @property
    def instance_hours(self) -> float:
        """Billed instance-hours of all runs (allowance, billing minimum and step included):
        what the rate, a price per instance-hour, is paid for."""
        terms = offer_costs.terms_for(self.offer.provider)
        return sum(g.group.runs * offer_costs.billed_hours(self.wall_hours_per_run(g), terms)
                   for g in self.groups)

    @property
    def gpu_hours(self) -> float:
        """GPU-hours of all runs: instance-hours x GPUs per instance."""
        return self.instance_hours * self.offer.gpu_count

    @property
    def cost(self) -> float:
        """Dollars for all runs: instance-hours x rate, whatever the instance count."""
        return self.instance_hours * self.rate_hour

    @property
    def wall_hours(self) -> float:
        """Wall-clock hours of all runs on ``instances`` instances (LPT packing)."""
        return makespan(self.run_blocks(), self.instances)

    @property
    def longest_run_hours(self) -> float:
        """The longest single run: no number of instances finishes sooner."""
        return max((self.wall_hours_per_run(g) for g in self.groups), default=0.0)

    def on(self, instances: int) -> Plan:
        """The same plan on ``instances`` instances."""
        return replace(self, instances=instances)


def run_blocks(durations: Iterable[float]) -> tuple[tuple[float, int], ...]:
    """Single run durations as ``(hours, count)`` blocks, longest first."""
    return merged_blocks((d, 1) for d in durations)


def merged_blocks(runs: Iterable[tuple[float, int]]) -> tuple[tuple[float, int], ...]:
    """``(hours, count)`` blocks longest first, equal hours merged, empty blocks dropped."""
    counts: dict[float, int] = {}
    for hours, count in runs:
        if count < 0:
            raise ValueError("a run count cannot be negative")
        if count:
            counts[hours] = counts.get(hours, 0) + count
    return tuple(sorted(counts.items(), key=lambda t: -t[0]))


def heap_fill(loads: Sequence[float], hours: float, count: int) -> list[float]:
    """``loads`` after ``count`` runs of ``hours`` each go, one by one, to the least-loaded
    instance (the lower index on a tie)."""
    heap = [(load, i) for i, load in enumerate(loads)]
    heapq.heapify(heap)
    for _ in range(count):
        load, i = heapq.heappop(heap)
        heapq.heappush(heap, (load + hours, i))
    return [load for load, _ in sorted(heap, key=lambda t: t[1])]


def level_fill(loads: Sequence[float], hours: float, count: int) -> list[float]:
    """What :func:`heap_fill` gives, in arithmetic: O(P log P) whatever ``count``.

    Instance i's n-th run would end at ``loads[i] + n x hours``; the one-by-one packing
    takes the ``count`` smallest of those ends (the lower index on a tie). Writing
    ``loads[i] = lowest + a_i x hours + f_i`` (0 <= f_i < hours), instance i's ends sit on
    levels ``a_i, a_i + 1, ...``: the packing fills whole levels, then the last level in
    the order (f_i, i). Sums may differ from the one-by-one ones in the last bits.
    """
    n = len(loads)
    if count <= 0 or hours <= 0 or n == 0:
        return list(loads)
    low = min(loads)
    if low == max(loads):  # level instances (the first block): round robin
        q, r = divmod(count, n)
        return [x + (q + (i < r)) * hours for i, x in enumerate(loads)]
    level = [max(0, math.floor((x - low) / hours)) for x in loads]
    part = [x - low - a * hours for x, a in zip(loads, level, strict=True)]
    order = sorted(range(n), key=lambda i: (level[i], part[i], i))
    # the level L of the count-th end: with the m lowest-level instances open, the ends on
    # levels below L + 1 number m (L + 1) - (their levels' sum)
    top, opened = 0, 0
    for m in range(1, n + 1):
        opened += level[order[m - 1]]
        top = max(level[order[m - 1]], -(-(count + opened) // m) - 1)
        if m == n or top < level[order[m]]:
            break
    taken = [max(0, top - a) for a in level]  # every end below level `top`
    rest = count - sum(taken)
    for i in sorted((i for i in range(n) if level[i] <= top), key=lambda i: (part[i], i)):
        if rest == 0:
            break
        taken[i] += 1
        rest -= 1
    return [x + k * hours for x, k in zip(loads, taken, strict=True)]


def lpt_loads(runs: Runs, instances: int) -> list[float]:
    """Hours per instance when runs, longest first, go to the least-loaded instance
    (``runs``: ``(hours, count)`` blocks; a block of many identical runs is arithmetic)."""
    if instances <= 0:
        raise ValueError("instances must be positive")
    loads = [0.0] * instances
    for hours, count in merged_blocks(runs):
        fill = heap_fill if count <= EXACT_UPTO else level_fill
        loads = fill(loads, hours, count)
    return loads


def makespan(runs: Runs, instances: int) -> float:
    """Wall-clock hours of the LPT packing on ``instances`` instances (one big block of
    identical runs: ceil(runs / instances) runs end to end)."""
    blocks = merged_blocks(runs)
    if instances > 0 and len(blocks) == 1 and blocks[0][1] > EXACT_UPTO:
        hours, count = blocks[0]
        return -(-count // instances) * hours
    return max(lpt_loads(blocks, instances), default=0.0)


def run_count(runs: Runs) -> int:
    """Runs in all."""
    return sum(count for _, count in runs)


def instances_needed(runs: Runs, target: float) -> int:
    """A lower bound on the instances any packing of ``runs`` within ``target`` hours needs:
    the total hours over ``target``, and, for every duration, the runs at least that long
    over how many of them fit on one instance."""
    total, longer, bound = 0.0, 0, 1
    for hours, count in merged_blocks(runs):
        total += hours * count
        longer += count
        if hours > 0:
            fit = max(1, math.floor(target / hours * (1.0 + 1e-9)))
            bound = max(bound, -(-longer // fit))
    return max(bound, math.ceil(total / target - TOL))


def fewest_instances(runs: Runs, deadline_hours: float, limit: int) -> int | None:
    """The fewest instances (at most ``limit``) whose LPT makespan meets the deadline."""
    blocks = merged_blocks(runs)
    if not blocks:
        return 1
    target = deadline_hours * (1.0 + TOL)
    if blocks[0][0] > target:
        return None
    for p in range(instances_needed(blocks, target), min(limit, run_count(blocks)) + 1):
        if makespan(blocks, p) <= target:
            return p
    return None


def quickest_instances(runs: Runs, limit: int) -> int:
    """The fewest instances (at most ``limit``) that reach the shortest makespan."""
    blocks = merged_blocks(runs)
    cap = max(1, min(limit, run_count(blocks)))
    best = makespan(blocks, cap)
    if best <= 0:
        return 1
    start = min(cap, instances_needed(blocks, best * (1 + TOL)))
    return next(p for p in range(start, cap + 1) if makespan(blocks, p) <= best * (1 + TOL))


def ceil_cents(x: float) -> float:
    """``x`` rounded up to the next hundredth (what to raise a limit to, in messages)."""
    return math.ceil(x * 100.0 - 1e-6) / 100.0


def _price_options(offer: Offer, spot: bool) -> list[tuple[Pricing, float]]:
    options: list[tuple[Pricing, float]] = []
    if offer.price_hour is not None and offer.price_hour > 0:
        options.append(("on-demand", offer.price_hour))
    if spot and offer.spot_hour is not None and offer.spot_hour > 0:
        options.append(("spot", offer.spot_hour))
    return options


def fastest_fitting(estimates: Sequence[SplitEstimate]) -> dict[tuple[str, int], SplitEstimate]:
    """The fastest split that fits, per (GPU, GPUs per run); the first on a tie."""
    best: dict[tuple[str, int], SplitEstimate] = {}
    for e in estimates:
        if not e.fits or e.seconds_per_update is None:
            continue
        key = (e.gpu, e.world_size)
        cur = best.get(key)
        if cur is None or e.seconds_per_update < (cur.seconds_per_update or math.inf):
            best[key] = e
    return best


def candidate_plans(
    groups: Sequence[tuple[RunGroup, Sequence[SplitEstimate]]],
    offers: Sequence[Offer],
    limits: Limits,
) -> tuple[list[Plan], dict[str, set[str]]]:
    """Every offer and pricing option that can run every group, on ``limits.parallel``
    instances; and, per GPU, the groups that fit none of its splits."""
    best = [(g, fastest_fitting(est)) for g, est in groups]
    plans: list[Plan] = []
    missing: dict[str, set[str]] = {}
    for offer in offers:
        key = (offer.gpu, int(offer.gpu_count)) if offer.gpu_count == int(offer.gpu_count) else None
        chosen = [(g, table.get(key) if key else None) for g, table in best]
        absent = {g.name for g, e in chosen if e is None}
        if absent:
            if len(absent) < len(chosen):
                missing.setdefault(offer.gpu, set()).update(absent)
            continue
        runs = tuple(GroupRun(g, e) for g, e in chosen if e is not None)
        for pricing, rate in _price_options(offer, limits.spot):
            allowance = 0.0 if pricing != "spot" else offer_costs.spot_allowance(
                offer.interruption_per_hour, default=limits.spot_allowance,
                checkpoint_hours=offer_costs.checkpoint_hours(
                    runs[0].seconds_per_update,
                    runs[0].group.save_every or runs[0].group.updates),
                restart_hours=offer_costs.terms_for(offer.provider).startup_s / 3600.0)
            plans.append(Plan(offer, pricing, rate, runs, allowance, limits.parallel))
    return plans, missing


def plan(candidates: Sequence[Plan], objective: Objective, limits: Limits) -> list[Plan]:
    """The plans that meet the objective's constraints, each on the instance count it
    chooses, best first; InfeasibleError (saying what would work) when none does."""
    if not candidates:
        raise InfeasibleError(NOTHING_FITS)
    kept = [p for p in (objective.choose(c, limits) for c in candidates) if p is not None]
    if not kept:
        raise InfeasibleError(objective.infeasible(candidates, limits))
    return sorted(kept, key=objective.sort_key)
