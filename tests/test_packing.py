"""Packing many identical runs is arithmetic: checked against the one-by-one LPT it replaces.

The oracle below is the planner's old packing, kept here verbatim in spirit: every single
run, longest first, goes to the least-loaded instance (a heap). The planner now packs
``(hours, count)`` blocks, a big block in O(P log P) arithmetic (:func:`level_fill`); on
small cases both must give the same loads, makespans and instance counts.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gacost.advisor import planner
from gacost.advisor.planner import (
    TOL,
    fewest_instances,
    heap_fill,
    level_fill,
    lpt_loads,
    makespan,
    merged_blocks,
    quickest_instances,
    run_blocks,
)


def oracle_loads(durations: Sequence[float], instances: int) -> list[float]:
    heap = [(0.0, i) for i in range(instances)]
    for d in sorted(durations, reverse=True):
        load, i = heapq.heappop(heap)
        heapq.heappush(heap, (load + d, i))
    return [load for load, _ in sorted(heap, key=lambda t: t[1])]


def oracle_makespan(durations: Sequence[float], instances: int) -> float:
    return max(oracle_loads(durations, instances), default=0.0)


def oracle_fewest(durations: Sequence[float], deadline: float, limit: int) -> int | None:
    if not durations:
        return 1
    target = deadline * (1.0 + TOL)
    if max(durations) > target:
        return None
    for p in range(1, min(limit, len(durations)) + 1):
        if oracle_makespan(durations, p) <= target:
            return p
    return None


def oracle_quickest(durations: Sequence[float], limit: int) -> int:
    cap = max(1, min(limit, len(durations)))
    best = oracle_makespan(durations, cap)
    return next(p for p in range(1, cap + 1)
                if oracle_makespan(durations, p) <= best * (1 + TOL))


def expand(blocks: Sequence[tuple[float, int]]) -> list[float]:
    return [h for h, n in blocks for _ in range(n)]


# quarter hours: sums are exact, so ties are real ties and loads match instance by instance
QUARTERS = st.integers(1, 24).map(lambda q: q / 4)
ANY_HOURS = st.floats(0.01, 30.0, allow_nan=False, allow_infinity=False)
BLOCKS = st.lists(st.tuples(QUARTERS, st.integers(0, 40)), min_size=0, max_size=4)
ANY_BLOCKS = st.lists(st.tuples(ANY_HOURS, st.integers(0, 40)), min_size=0, max_size=4)


# every block through level_fill (0), or the planner's own threshold
THRESHOLDS = pytest.mark.parametrize("exact_upto", [0, planner.EXACT_UPTO])


@settings(max_examples=300, deadline=None)
@given(loads=st.lists(QUARTERS, min_size=1, max_size=9), hours=QUARTERS,
       count=st.integers(0, 60))
def test_level_fill_is_the_one_by_one_fill_on_exact_sums(
        loads: list[float], hours: float, count: int) -> None:
    assert level_fill(loads, hours, count) == heap_fill(loads, hours, count)


@settings(max_examples=300, deadline=None)
@given(loads=st.lists(ANY_HOURS, min_size=1, max_size=9), hours=ANY_HOURS,
       count=st.integers(0, 60))
def test_level_fill_is_the_one_by_one_fill_on_any_hours(
        loads: list[float], hours: float, count: int) -> None:
    fast, slow = level_fill(loads, hours, count), heap_fill(loads, hours, count)
    assert sorted(fast) == pytest.approx(sorted(slow), rel=1e-9)


@THRESHOLDS
@settings(max_examples=150, deadline=None)
@given(blocks=BLOCKS, instances=st.integers(1, 10))
def test_block_packing_matches_the_oracle(
        exact_upto: int, blocks: list[tuple[float, int]], instances: int) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(planner, "EXACT_UPTO", exact_upto)
        loads = lpt_loads(blocks, instances)
        assert loads == oracle_loads(expand(blocks), instances)
        assert makespan(blocks, instances) == oracle_makespan(expand(blocks), instances)


@THRESHOLDS
@settings(max_examples=150, deadline=None)
@given(blocks=ANY_BLOCKS, instances=st.integers(1, 10))
def test_block_packing_matches_the_oracle_on_any_hours(
        exact_upto: int, blocks: list[tuple[float, int]], instances: int) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(planner, "EXACT_UPTO", exact_upto)
        fast, slow = lpt_loads(blocks, instances), oracle_loads(expand(blocks), instances)
        assert sorted(fast) == pytest.approx(sorted(slow), rel=1e-9)


@THRESHOLDS
@settings(max_examples=150, deadline=None)
@given(blocks=BLOCKS, limit=st.integers(1, 12), deadline=st.integers(1, 80))
def test_instance_counts_match_the_oracle(
        exact_upto: int, blocks: list[tuple[float, int]], limit: int, deadline: int) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(planner, "EXACT_UPTO", exact_upto)
        durations = expand(blocks)
        hours = deadline / 4
        assert fewest_instances(blocks, hours, limit) == oracle_fewest(durations, hours, limit)
        assert quickest_instances(blocks, limit) == oracle_quickest(durations, limit)


def test_blocks_merge_equal_hours_longest_first() -> None:
    assert merged_blocks([(1.0, 2), (3.0, 1), (1.0, 5), (2.0, 0)]) == ((3.0, 1), (1.0, 7))
    assert run_blocks([2, 3, 2]) == ((3, 1), (2, 2))
    with pytest.raises(ValueError, match="negative"):
        merged_blocks([(1.0, -1)])


def test_a_million_identical_runs_is_ceil_n_over_p() -> None:
    n, hours = 10**6, 0.75
    for p in (1, 7, 8, 1000):
        loads = lpt_loads([(hours, n)], p)
        assert len(loads) == p and sum(loads) == pytest.approx(n * hours)
        assert makespan([(hours, n)], p) == pytest.approx(math.ceil(n / p) * hours)
    # 10^6 runs of 0.75 h in 200 h: 266 runs per instance, so 3760 instances
    assert fewest_instances([(hours, n)], 200.0, 10**5) == math.ceil(n / 266)
    assert quickest_instances([(hours, n)], 8) == 8
    # a sweep: the long runs first, then the short ones level the instances
    mixed = [(3.0, 10**5), (1.0, 3 * 10**5 + 1)]
    assert makespan(mixed, 4) == pytest.approx(math.ceil((3e5 + 3e5 + 1) / 4))
