"""Break-even hourly-rate ratios between GPUs.

If GPU A needs r = t_A / t_B times GPU B's wall-clock for the same fine-tune (each at its
fastest split that fits), A is the cheaper fine-tune iff price_A < price_B / r. The
threshold ``1 / r`` is what this module reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import permutations

from gacost.advisor.split_estimates import Source, SplitEstimate


@dataclass(frozen=True)
class GpuBest:
    """The fastest split that fits on one GPU."""

    gpu: str
    micro_batch: int
    grad_accum: int
    seconds_per_update: float
    time_source: Source


@dataclass(frozen=True)
class BreakEven:
    """A against B: A wins iff rate_A < threshold x rate_B."""

    gpu_a: str
    gpu_b: str
    time_ratio: float
    threshold: float
    rate_a: float | None = None
    rate_b: float | None = None

    @property
    def a_wins_now(self) -> bool | None:
        """At the given rates, is A the cheaper fine-tune? None without both rates."""
        if self.rate_a is None or self.rate_b is None:
            return None
        return self.rate_a < self.threshold * self.rate_b

    def sentence(self) -> str:
        """The comparison in words."""
        text = (
            f"{self.gpu_a} is cheaper than {self.gpu_b} only if its hourly rate is below "
            f"{self.threshold:.2f} x {self.gpu_b}'s ({self.gpu_a} takes {self.time_ratio:.2f}x "
            f"the time)"
        )
        if self.rate_a is not None and self.rate_b is not None:
            winner = self.gpu_a if self.a_wins_now else self.gpu_b
            text += (
                f"; cheapest now ${self.rate_a:.3f}/h vs ${self.rate_b:.3f}/h = "
                f"{self.rate_a / self.rate_b:.2f} x, so {winner} is cheaper"
            )
        return text


def best_splits(estimates: Sequence[SplitEstimate]) -> dict[str, GpuBest]:
    """Fastest fitting split per GPU."""
    best: dict[str, GpuBest] = {}
    for e in estimates:
        if not e.fits or e.seconds_per_update is None:
            continue
        cur = best.get(e.gpu)
        if cur is None or e.seconds_per_update < cur.seconds_per_update:
            best[e.gpu] = GpuBest(
                e.gpu, e.micro_batch, e.grad_accum, e.seconds_per_update, e.time_source
            )
    return best


def break_even(
    a: GpuBest, b: GpuBest, rate_a: float | None = None, rate_b: float | None = None
) -> BreakEven:
    """A against B."""
    r = a.seconds_per_update / b.seconds_per_update
    return BreakEven(a.gpu, b.gpu, r, 1.0 / r, rate_a, rate_b)


def all_pairs(best: dict[str, GpuBest], rates: dict[str, float]) -> list[BreakEven]:
    """Every ordered pair of GPUs, with the cheapest current rates where known."""
    return [
        break_even(best[a], best[b], rates.get(a), rates.get(b))
        for a, b in permutations(sorted(best), 2)
    ]
