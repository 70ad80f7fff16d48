"""Pure pieces of the calibration: statistics, stopping rules, OOM classification, parsing."""

from __future__ import annotations

import pytest

from gacost.base.errors import CalibrationError
from gacost.calibration import stats
from gacost.calibration.oom import is_oom
from gacost.calibration.request import parse_size_gib, parse_splits


def test_median_and_iqr() -> None:
    assert stats.median([3.0, 1.0, 2.0]) == 2.0
    assert stats.iqr([1.0, 2.0, 3.0, 4.0, 5.0]) == 2.0
    assert stats.iqr([1.0]) == 0.0


def test_median_ci_is_the_range_for_small_samples_and_narrows() -> None:
    assert stats.median_ci([1.0, 5.0, 3.0]) == (1.0, 5.0)
    xs = [float(i) for i in range(100)]
    lo, hi = stats.median_ci(xs)
    assert 38 <= lo < 49.5 < hi <= 61  # ranks 40 and 61 (1-based) of 100


def test_stability_needs_min_n_and_a_tight_ci() -> None:
    steady = [1.0, 1.01, 0.99, 1.0, 1.005, 0.995]
    assert stats.is_stable(steady, rel_tol=0.02, min_n=5)
    assert not stats.is_stable(steady[:4], rel_tol=0.02, min_n=5)
    assert not stats.is_stable([1.0, 1.3, 0.8, 1.1, 0.9, 1.2], rel_tol=0.02, min_n=5)


def test_clearly_slower() -> None:
    assert stats.clearly_slower([2.0, 2.1, 2.2], best=1.0, margin=0.15, min_n=3)
    assert not stats.clearly_slower([2.0, 1.1, 2.2], best=1.0, margin=0.15, min_n=3)
    assert not stats.clearly_slower([2.0, 2.1], best=1.0, margin=0.15, min_n=3)
    assert not stats.clearly_slower([2.0, 2.1, 2.2], best=None, margin=0.15, min_n=3)


class OutOfMemoryError(RuntimeError):
    """Same name as torch's class: ``is_oom`` must not need torch to recognise it."""


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"), True),
        (OutOfMemoryError("anything"), True),
        (RuntimeError("CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate"), True),
        (RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried 9 GB"), True),
        (RuntimeError("shape mismatch"), False),
        (ValueError("out of memory"), False),
        (KeyboardInterrupt(), False),
    ],
)
def test_is_oom(exc: BaseException, expected: bool) -> None:
    assert is_oom(exc) is expected


def test_parse_splits() -> None:
    assert parse_splits("4x1, 1x4,2X2", 4) == ((1, 4), (2, 2), (4, 1))
    with pytest.raises(CalibrationError, match="does not multiply"):
        parse_splits("3x1", 4)
    with pytest.raises(CalibrationError, match="not of the form"):
        parse_splits("two", 4)


@pytest.mark.parametrize(("text", "gib"), [("16GiB", 16.0), ("24 gb", 24.0), ("7.5", 7.5)])
def test_parse_size(text: str, gib: float) -> None:
    assert parse_size_gib(text) == gib


def test_parse_size_rejects_nonsense() -> None:
    with pytest.raises(CalibrationError, match="--vram-limit"):
        parse_size_gib("lots")
