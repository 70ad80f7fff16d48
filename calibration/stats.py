"""Pure statistics for the sweep: median, IQR, a distribution-free CI, stopping rules."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence


def median(xs: Sequence[float]) -> float:
    """The median."""
    return float(statistics.median(xs))


def estimate(xs: Sequence[float]) -> float:
    """Seconds per update as the bill sees them: the median of the timed (steady-state)
    updates.

    Until 2026-12-03 this was the lower quartile, to resist bursts of host interference; but
    a user's run pays for those bursts too, and against the same split run by a plain TRL
    script in its own process the lower quartile read 10-31% fast on host-bound splits
    (``shared/research/measurements-2026-12-03.md``). Slow updates are reported
    (:func:`slow_outliers`), not hidden.
    """
    return median(xs)


def slow_outliers(xs: Sequence[float]) -> int:
    """How many updates lie above the upper fence (Q3 + 1.5 IQR, and at least 10% above the
    median): bursts of interference, counted in the estimate and named in the split's note."""
    if len(xs) < 4:
        return 0
    q1, mid, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    fence = max(q3 + 1.5 * (q3 - q1), 1.1 * mid)
    return sum(1 for x in xs if x > fence)


def iqr(xs: Sequence[float]) -> float:
    """Inter-quartile range (0 for fewer than two values)."""
    if len(xs) < 2:
        return 0.0
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return float(q[2] - q[0])


def median_ci(xs: Sequence[float], z: float = 1.96) -> tuple[float, float]:
    """A ~95% confidence interval of the median from order statistics (no normality assumed).

    The 1-based ranks ``n/2 - z*sqrt(n)/2`` and ``1 + n/2 + z*sqrt(n)/2`` of the sorted
    sample, clipped to the sample; below about 10 values that is the whole range.
    """
    s = sorted(xs)
    n = len(s)
    half = z * math.sqrt(n) / 2
    lo = max(1, math.floor(n / 2 - half))
    hi = min(n, math.ceil(1 + n / 2 + half))
    return s[lo - 1], s[hi - 1]


def is_stable(xs: Sequence[float], rel_tol: float, min_n: int) -> bool:
    """True once the median's CI lies within ``+-rel_tol`` of the median."""
    if len(xs) < min_n:
        return False
    lo, hi = median_ci(xs)
    m = median(xs)
    return (m - lo) <= rel_tol * m and (hi - m) <= rel_tol * m


def clearly_slower(xs: Sequence[float], best: float | None, margin: float, min_n: int) -> bool:
    """True when even the fastest of ``min_n``+ updates is ``margin`` slower than ``best``."""
    if best is None or len(xs) < min_n:
        return False
    return min(xs) > best * (1.0 + margin)
