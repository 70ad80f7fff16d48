"""How long ``gacost calibrate`` will hold a GPU, from the model's seconds per update: what
``calibrate --sky`` prices before it rents anything.

The protocol (``calibration.sweep``): per split, ``warmup`` untimed updates, then timed
updates until the median's CI is within tolerance, or ``max_seconds`` of timed updates (at
least ``min_timed``), or ``max_timed`` updates; ``passes = 2`` times every split again (one
warm-up each). The estimate takes the time budget as spent (the CI stop and the drop rule
only shorten it): ``min(max_timed, max(min_timed, ceil(max_seconds / t)))`` timed
updates at the split's ``t`` seconds per update. On top of that:

- a process start, imports and model build per process: each split in its own process on
  a GPU (``isolation`` ``auto`` or ``process``, a single GPU, two splits or more), one
  process otherwise. :data:`LOAD_SECONDS`: 15-25 s per split were measured for 0.6B-4B
  models on an H200 host (bench/RESULTS.md, "Device time of a process per split"); 25 is
  taken;
- the trace of the first split (every split with ``trace_all``): one warm-up, one update
  and up to two profiled updates, plus :data:`TRACE_SECONDS` for the profiler itself
  (README: 6-15 s a split on an H200 host);
- torch.compile's compilation (the estimate's ``setup_seconds``) once per process;
- a split the model says does not fit is started and runs out of memory: a process and an
  update's worth of time.

Pure: split estimates and the sweep options in, seconds out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from gacost.advisor.split_estimates import SplitEstimate
from gacost.base.split import Split
from gacost.calibration.request import SweepOptions

LOAD_SECONDS = 25.0
TRACE_SECONDS = 10.0
TRACE_UPDATES = 4
UNKNOWN_UPDATE_SECONDS = 5.0  # an update of a split the model has no time for (stated)


@dataclass(frozen=True)
class CalibrationTime:
    """Expected device seconds of one calibration, and what they rest on."""

    seconds: float
    splits: int
    processes: int
    predicted_oom: int  # splits the model says run out of memory (a start each)
    basis: str  # "measured", "predicted" or "measured and predicted"


def timed_updates(seconds_per_update: float, options: SweepOptions) -> int:
    """Timed updates of one pass over a split of ``seconds_per_update``."""
    by_time = math.ceil(options.max_seconds / seconds_per_update)
    return min(options.max_timed, max(options.min_timed, by_time))


def split_seconds(seconds_per_update: float, options: SweepOptions) -> float:
    """The updates of one split (warm-up and timed, every pass), trace and loads aside."""
    timed = timed_updates(seconds_per_update, options)
    updates = options.warmup + timed
    if options.passes == 2:
        updates += 1 + timed
    return updates * seconds_per_update


def calibration_time(
    splits: Sequence[Split],
    estimates: Sequence[SplitEstimate],
    options: SweepOptions,
    world: int = 1,
) -> CalibrationTime:
    """Expected device seconds of calibrating ``splits`` with ``options`` on ``world`` GPUs,
    from ``estimates`` (one GPU's, at that world size and the calibration's levers)."""
    by_split = {e.split: e for e in estimates}
    own_process = world == 1 and len(splits) >= 2 and options.isolation in ("auto", "process")
    processes = len(splits) if own_process else 1
    total = LOAD_SECONDS * processes
    sources: set[str] = set()
    oom = 0
    traced = False
    for split in sorted(splits, reverse=True):  # largest micro-batch first, as calibrate runs
        e = by_split.get(split)
        t = e.seconds_per_update if e is not None and e.seconds_per_update else None
        if e is not None:
            sources.add(e.time_source)
        if e is not None and not e.fits:
            oom += 1
            total += t or UNKNOWN_UPDATE_SECONDS
            continue
        t = t or UNKNOWN_UPDATE_SECONDS
        total += split_seconds(t, options)
        if e is not None and e.setup_seconds and own_process:
            total += e.setup_seconds
        if options.trace and (options.trace_all or not traced):
            total += TRACE_UPDATES * t + TRACE_SECONDS
            traced = True
    if not own_process:
        total += max((e.setup_seconds for e in estimates), default=0.0)
    basis = " and ".join(sorted(sources)) or "predicted"
    return CalibrationTime(total, len(splits), processes, oom, basis)
