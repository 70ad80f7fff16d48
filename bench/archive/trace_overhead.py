# ARCHIVED 2026-12-03 (issue 21), not maintained: a one-off on the 2-core CPU VM on 2026-12-02
# (issue 11 item 3). It produced bench/results/trace-overhead-tiny-cpu.json and
# bench/results/trace-overhead-smollm2-135m-cpu.json; the numbers are in bench/RESULTS.md,
# "What the calibration trace costs" (the H200 figures there came from repeatability.py).
"""What the calibration trace costs: ``gacost calibrate`` with and without ``--no-trace``.

Runs ``gacost calibrate --job J`` (default protocol settings, one process per run) alternately
with the trace on and off, ``--repeats`` times each, and prints per run: the process wall,
the device seconds the profile records (``gpu_seconds``: model set-up and all splits), the
seconds the trace added (sum of ``splits[].trace.wall_seconds``: the profiled updates, the
profiler start/stop and the analysis) and their share of ``gpu_seconds``; per split, the
median s/update with and without the trace (the trace must not change the timed updates).
Writes the numbers as JSON.

    python bench/archive/trace_overhead.py --job tests/fixtures/calib/tiny-job.yaml --device cpu \
        --out bench/results/trace-overhead-tiny-cpu.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def calibrate(job: str, device: str, trace: bool, extra: list[str]) -> dict[str, Any]:
    """One ``gacost calibrate`` process; its profile and wall-clock."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "p.json"
        cmd = [sys.executable, "-m", "gacost", "calibrate", "--job", job, "--out", str(out),
               "--device", device, "--quiet", *extra, *([] if trace else ["--no-trace"])]
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
            raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}")
        profile = json.loads(out.read_text())
    splits = profile["splits"]
    traced = sum((s.get("trace") or {}).get("wall_seconds") or 0.0 for s in splits)
    return {
        "trace": trace,
        "process_wall_s": round(wall, 2),
        "gpu_seconds": profile["gpu_seconds"],
        "trace_seconds": round(traced, 3),
        "trace_share": round(traced / profile["gpu_seconds"], 4),
        "splits": {
            f"{s['micro_batch']}x{s['grad_accum']}": {
                "status": s["status"],
                "seconds_per_update": s["seconds_per_update"],
                "timed_updates": s["timed_updates"],
                "wall_seconds": s["wall_seconds"],
                "trace": s.get("trace"),
            }
            for s in splits
        },
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--job", required=True)
    p.add_argument("--device", default="auto")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--out", type=Path)
    p.add_argument("extra", nargs="*", help="more calibrate flags, after --")
    a = p.parse_args()
    runs = [
        calibrate(a.job, a.device, trace, a.extra)
        for _ in range(a.repeats)
        for trace in (True, False)
    ]
    for r in runs:
        per_split = ", ".join(
            f"{name} {s['seconds_per_update']:.4f} s"
            + (f" (trace {s['trace']['wall_seconds']:.2f} of {s['wall_seconds']:.2f} s)"
               if s["trace"] else f" ({s['wall_seconds']:.2f} s)")
            for name, s in r["splits"].items()
        )
        print(
            f"trace {'on ' if r['trace'] else 'off'}: process {r['process_wall_s']:.1f} s, "
            f"gpu_seconds {r['gpu_seconds']:.1f}, trace {r['trace_seconds']:.2f} s "
            f"({r['trace_share']:.1%}); {per_split}"
        )
    on = [r["gpu_seconds"] for r in runs if r["trace"]]
    off = [r["gpu_seconds"] for r in runs if not r["trace"]]
    share = [r["trace_share"] for r in runs if r["trace"]]
    summary = {
        "gpu_seconds_on_median": statistics.median(on),
        "gpu_seconds_off_median": statistics.median(off),
        "trace_share_median": statistics.median(share),
    }
    print(json.dumps(summary))
    if a.out:
        a.out.write_text(json.dumps({"job": a.job, "device": a.device, "runs": runs,
                                     "summary": summary}, indent=1) + "\n")


if __name__ == "__main__":
    main()
