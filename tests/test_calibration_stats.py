"""Pure pieces of the calibration: statistics, stopping rules, OOM classification, parsing."""

from __future__ import annotations

from pathlib import Path

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


def test_two_passes_pool_into_one_estimate_that_admits_their_gap() -> None:
    from gacost.base.profile import SplitResult
    from gacost.calibration.passes import pool_passes

    # pass 1 ran inside a burst of host interference (+20%), pass 2 did not
    first = SplitResult(2, 2, "ok", seconds_per_update=1.2, warmup_updates=2,
                        update_times=(3.0, 1.5, 1.2, 1.19, 1.21, 1.2, 1.22),
                        peak_allocated_gib=3.0, peak_reserved_gib=None, wall_seconds=10.0)
    second = SplitResult(2, 2, "ok", seconds_per_update=1.0, warmup_updates=1,
                         update_times=(1.4, 1.0, 0.99, 1.01, 1.0, 1.02),
                         peak_allocated_gib=3.1, peak_reserved_gib=3.5, wall_seconds=8.0)
    pooled = pool_passes(first, second, seq_len=512, world=1)
    timed = [1.2, 1.19, 1.21, 1.2, 1.22, 1.0, 0.99, 1.01, 1.0, 1.02]
    # the median of all ten: what the bill sees, bursts included
    ranked = sorted(timed)
    assert pooled.seconds_per_update == pytest.approx((ranked[4] + ranked[5]) / 2)
    assert pooled.pass_seconds == (stats.estimate(timed[:5]), stats.estimate(timed[5:]))
    assert pooled.pass_seconds == pytest.approx((1.2, 1.0))
    assert pooled.timed_updates == 10 and pooled.warmup_updates == 2
    assert pooled.update_times == first.update_times + second.update_times
    # the interval covers both passes, and the precision is at least half their gap
    assert pooled.ci_low_s is not None and pooled.ci_high_s is not None
    assert pooled.ci_low_s <= 1.0 and pooled.ci_high_s >= 1.2
    assert pooled.precision is not None and pooled.precision >= 0.1 / 1.1 - 1e-3
    assert pooled.rel_precision == pooled.precision
    assert pooled.peak_allocated_gib == 3.1 and pooled.peak_reserved_gib == 3.5
    assert pooled.wall_seconds == 18.0
    assert pooled.tokens_per_s == pytest.approx(4 * 512 / pooled.seconds_per_update, abs=0.06)


def test_the_estimate_is_the_median_and_bursts_are_counted_not_hidden() -> None:
    # 12 updates: 9 quiet at ~0.30 s, then a burst of 3 at ~0.45 s (one-sided interference)
    quiet, burst = [0.30, 0.31, 0.29, 0.30, 0.30, 0.31, 0.29, 0.30, 0.30], [0.44, 0.47, 0.45]
    both = quiet + burst
    assert stats.estimate(both) == stats.median(both) == pytest.approx(0.30)
    assert stats.slow_outliers(both) == 3  # above Q3 + 1.5 IQR
    assert stats.slow_outliers(quiet) == 0
    # a burst as long as the quiet part is no outlier: the median moves with it, as the bill
    longer = quiet + [0.45] * 9
    assert stats.slow_outliers(longer) == 0 and stats.estimate(longer) > 0.37
    assert stats.slow_outliers([0.5, 9.0, 0.4]) == 0  # below 4 values: none counted

def test_machine_facts_name_the_vm_and_the_hypervisor(tmp_path: Path) -> None:
    from gacost.calibration.env import machine_facts

    (tmp_path / "sys_vendor").write_text("Amazon EC2\n")
    (tmp_path / "product_name").write_text("g6.xlarge\n")
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu vme hypervisor lahf_lm\n")
    assert machine_facts(str(tmp_path), str(cpuinfo)) == {
        "system_vendor": "Amazon EC2", "system_product": "g6.xlarge", "hypervisor": "yes"}
    assert machine_facts(str(tmp_path / "none"), str(tmp_path / "none")) == {}
