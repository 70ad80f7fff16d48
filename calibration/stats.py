"""Pure statistics for the sweep: median, IQR, a distribution-free CI, stopping rules."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence


def median(xs: Sequence[float]) -> float:
    """The median."""
    return float(statistics.median(xs))


def quiet_time(xs: Sequence[float]) -> float:
    """Seconds per update robust to one-sided host interference: the lower quartile.

    Interference on a shared host (other tenants, daemons, the GIL) only ever slows an
    update down and comes in bursts of 5-20 updates; the median of a short sample moves
    with them. Measured on the lent H200 host (bench/RESULTS.md, "Repeatability"): over 8
    calibrations the pooled median read 9-31% above the 100-update protocol, the lower
    quartile -3% to +9%. Below 4 values it is the median.
    """
    if len(xs) < 4:
        return median(xs)
    return float(statistics.quantiles(xs, n=4, method="inclusive")[0])


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
