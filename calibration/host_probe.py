"""How fast this machine's CPU runs interpreter work: the host speed a profile records.

A host-bound split's time per update follows the speed of the host's CPU, and one GPU kind's
hosts differ: starts of the same lent H100 kind ran the same split 0.22 to 0.44 s per update
while a fixed Python task took 13 to 31 ms (bench/MODEL.md, "Host speed: a probe"). The
probe times that task back to back for a few seconds; its mean milliseconds per task (slow
spells included) is the host's speed. ``gacost calibrate`` records it in the profile
(``host["probe_ms"]``) and ``gacost probe`` measures it on a fresh instance, so that
``recommend --host-probe-ms`` can carry a calibrated machine's host to another instance of
the same kind.

Standard library only (and the project's error tree): the probe runs before torch is
imported, or where it is not installed.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from gacost.base.errors import CalibrationError

PAUSE_S = 0.03  # between tasks, as in the bench runs the probe was validated on
DEFAULT_SECONDS = 5.0
MAX_SECONDS = 600.0  # the longest probe any command or the callback takes


def default_seconds(on_gpu: bool) -> float:
    """How long ``calibrate`` and ``GacostCallback`` probe when not told: DEFAULT_SECONDS on a
    GPU; none on the CPU, where the time is all host and there is no GPU's host to carry."""
    return DEFAULT_SECONDS if on_gpu else 0.0


def checked_seconds(seconds: float, where: str) -> float:
    """``seconds`` when 0 (no probe) to MAX_SECONDS, else a one-line error naming ``where``."""
    if not 0.0 <= seconds <= MAX_SECONDS:
        raise CalibrationError(
            f"{where}: give 0 (no probe) to {MAX_SECONDS:g} seconds, not {seconds:g}")
    return seconds


def task(n: int = 120_000) -> int:
    """A fixed amount of interpreter work (integer arithmetic, a dict and a list): about
    13 to 30 ms on the lent H100 hosts. Changing it makes recorded probes incomparable."""
    seen: dict[int, int] = {}
    out = []
    for i in range(n):
        seen[i & 1023] = seen.get(i & 1023, 0) + i
        out.append(i * 3 % 7)
    return len(out) + len(seen)


@dataclass(frozen=True)
class HostSpeed:
    """What a probe saw: milliseconds per task, their mean (the host's speed), median and
    the share of tasks in a slow spell (over 1.5x the fastest tenth's time)."""

    task_ms: tuple[float, ...]

    @property
    def mean_ms(self) -> float:
        return statistics.fmean(self.task_ms)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.task_ms)

    @property
    def slow_share(self) -> float:
        ordered = sorted(self.task_ms)
        fast = ordered[max(0, len(ordered) // 10 - 1)]
        return sum(t > 1.5 * fast for t in ordered) / len(ordered)


def probe(
    seconds: float = DEFAULT_SECONDS, *, pause: float = PAUSE_S,
    clock: Callable[[], float] = time.perf_counter,
    on_task: Callable[[int], None] | None = None,
) -> HostSpeed:
    """Time :func:`task` back to back (``pause`` s apart) for ``seconds`` (at least three
    tasks); ``on_task(count)`` after each, for progress."""
    times: list[float] = []
    deadline = clock() + seconds
    while len(times) < 3 or clock() < deadline:
        start = clock()
        task()
        times.append((clock() - start) * 1000.0)
        if on_task is not None:
            on_task(len(times))
        time.sleep(pause)
    return HostSpeed(tuple(times))

