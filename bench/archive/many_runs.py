# ARCHIVED 2026-12-03 (issue 21), not maintained: a one-off on the 2-core VM on 2026-12-03
# (issue 18 item 1); it prints a table and writes no file. The numbers are in
# bench/RESULTS.md, "Planning many runs".
"""Planning cost against the run count (issue 18): ``recommend`` and ``budget`` on one job
with ``runs:`` set to each of ``--runs``, each command in its own process, timed.

    python bench/archive/many_runs.py --job examples/qwen3-1.7b-lora.yaml --runs 3,1000,100000

Planning packs identical runs as ``(hours, count)`` blocks in arithmetic, so the seconds
should not grow with ``runs`` (the job schema allows up to 100000). Exit code 3 (nothing
meets a deadline) counts as an answer.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tabulate import tabulate


def timed(cmd: list[str]) -> tuple[float, int]:
    """Wall-clock seconds and exit code of ``cmd`` (0 or 3 expected)."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 3):
        sys.stderr.write(proc.stdout[-2000:] + proc.stderr[-2000:])
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}")
    return wall, proc.returncode


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--job", required=True, type=Path)
    p.add_argument("--runs", default="3,1000,100000")
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    text = a.job.read_text(encoding="utf-8")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(x) for x in a.runs.split(",")):
            job = Path(tmp) / f"runs-{n}.yaml"
            job.write_text(re.sub(r"(?m)^runs: .*$", f"runs: {n}", text), encoding="utf-8")
            for command in ("recommend", "budget"):
                cmd = [sys.executable, "-m", "gacost", command, "--job", str(job)]
                times = [timed(cmd) for _ in range(a.repeats)]
                rows.append([command, n, f"{min(t for t, _ in times):.2f}",
                             f"{max(t for t, _ in times):.2f}", times[0][1]])
    print(tabulate(rows, headers=["command", "runs", "min s", "max s", "exit"]))


if __name__ == "__main__":
    main()
