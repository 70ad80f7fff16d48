"""A steady CPU load, timed: how fast the host's CPU runs, moment by moment.

Repeats the fixed pure-Python task of ``gacost.calibration.host_probe`` (13-31 ms on the lent
H100 hosts) and records the wall clock at each end and the task's seconds, until it is
stopped (SIGTERM or SIGINT) or ``--seconds`` pass; then prints one JSON line. Run beside a
training process on another CPU (``taskset``) to see whether the host's speed moves with the
training's time per update (bench/MODEL.md, "One run is one draw"; ``bash
bench/calibrate_rounds_h200.sh probe`` and ``probe2``).

    taskset -c 12 python bench/host_probe.py --seconds 300 > probe.json
"""

from __future__ import annotations

import argparse
import json
import signal
import time

from gacost.calibration.host_probe import task


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seconds", type=float, default=600.0, help="stop after this long")
    p.add_argument("--pause", type=float, default=0.03, help="seconds between tasks")
    a = p.parse_args()
    stop = False

    def halt(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, halt)
    signal.signal(signal.SIGINT, halt)
    ends: list[float] = []
    seconds: list[float] = []
    deadline = time.time() + a.seconds
    while not stop and time.time() < deadline:
        t0 = time.perf_counter()
        task()
        seconds.append(time.perf_counter() - t0)
        ends.append(time.time())
        time.sleep(a.pause)
    print(json.dumps({"ends_unix": [round(t, 4) for t in ends],
                      "task_s": [round(t, 6) for t in seconds]}))


if __name__ == "__main__":
    main()
