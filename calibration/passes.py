"""Two timed passes of one split pooled into one result (pure; no torch).

Host interference on a shared machine comes in bursts that only slow updates down; a split
timed twice, far apart (calibrate's second pass runs the splits in reverse order), is
pooled: the estimate (the median of all timed updates, :func:`stats.estimate`) and
the median's CI of all timed updates, each pass's estimate, and a precision that is never
below half the gap between the passes.
"""

from __future__ import annotations

from dataclasses import replace

from gacost.base.profile import SplitResult
from gacost.calibration import stats


def pool_passes(
    first: SplitResult, second: SplitResult, seq_len: int, world: int = 1
) -> SplitResult:
    """One split's two passes as one result: the estimate (:func:`stats.estimate`) and CI
    of all timed updates, each pass's estimate, and a precision that is at least half the
    gap between the passes."""
    a = first.update_times[first.warmup_updates :]
    b = second.update_times[second.warmup_updates :]
    timed = [*a, *b]
    med = stats.estimate(timed)
    lo, hi = stats.median_ci(timed)
    medians = (stats.estimate(a), stats.estimate(b))
    lo, hi = min(lo, med, *medians), max(hi, med, *medians)
    alloc = _larger(first.peak_allocated_gib, second.peak_allocated_gib)
    reserved = _larger(first.peak_reserved_gib, second.peak_reserved_gib)
    return replace(
        first,
        seconds_per_update=round(med, 6),
        iqr_seconds=round(stats.iqr(timed), 6),
        ci_low_s=round(lo, 6),
        ci_high_s=round(hi, 6),
        update_times=first.update_times + second.update_times,
        peak_allocated_gib=alloc,
        peak_reserved_gib=reserved,
        tokens_per_s=round(first.micro_batch * first.grad_accum * world * seq_len / med, 1),
        timed_updates=len(timed),
        wall_seconds=round((first.wall_seconds or 0.0) + (second.wall_seconds or 0.0), 3),
        pass_seconds=tuple(round(x, 6) for x in medians),
        precision=round(max((hi - lo) / 2, abs(medians[0] - medians[1]) / 2) / med, 4),
    )


def _larger(a: float | None, b: float | None) -> float | None:
    return max((v for v in (a, b) if v is not None), default=None)
