# ARCHIVED 2026-12-03 (issue 21), not maintained: a one-off run on the lent H200 on 2026-12-02
# (issue 3). It produced bench/results/h200-run1-* and bench/results/h200-run2-* (the table, the
# calibrate profiles, the logs); the numbers are in bench/RESULTS.md, "`gacost calibrate`
# against the full published protocol". Runs published_protocol.py beside it.
"""`gacost calibrate` against the full published protocol, on the attached GPU.

Runs ``gacost calibrate`` once (all splits in one process, adaptive stopping), then the
full protocol (10 warm-up + 100 timed updates, each split in its own process, plain TRL:
``bench/archive/published_protocol.py``), and prints one table: each split's seconds per update
from both, the relative difference, and the device seconds each approach held the GPU
(process wall-clock, start-up included). Writes the numbers as JSON.

    python bench/archive/calibration_vs_protocol.py --job bench/jobs/qwen3-1.7b-lora-bf16.yaml \
        --config data/models/Qwen--Qwen3-1.7B.json --out results/
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from tabulate import tabulate


def run_timed(cmd: list[str]) -> tuple[float, str]:
    """Run ``cmd``; its wall-clock seconds and stdout (exit with its output on failure)."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}")
    return wall, proc.stdout


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--job", required=True)
    p.add_argument("--config", required=True, help="architecture config for the protocol")
    p.add_argument("--splits", default="1x4,2x2,4x1")
    p.add_argument("--precision", default="bf16")
    p.add_argument("--seq-len", type=int, default=512)
    p.add_argument("--out", type=Path, default=Path("."))
    p.add_argument(
        "--calibrate-repeats",
        type=int,
        default=1,
        help="run gacost calibrate this many times (the first is compared; the "
        "others show its run-to-run spread)",
    )
    a = p.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)

    repeats = []
    for i in range(a.calibrate_repeats):
        path = a.out / f"calibrate-profile-{i + 1}.json"
        wall, text = run_timed(
            [
                sys.executable,
                "-m",
                "gacost",
                "calibrate",
                "--job",
                a.job,
                "--splits",
                a.splits,
                "--out",
                str(path),
                "--quiet",
            ]
        )
        print(text)
        repeats.append((wall, json.loads(path.read_text())))
    cal_wall, profile = repeats[0]
    measured = {f"{s['micro_batch']}x{s['grad_accum']}": s for s in profile["splits"]}

    protocol = {}
    for split in a.splits.split(","):
        m, k = split.split("x")
        wall, text = run_timed(
            [
                sys.executable,
                "bench/archive/published_protocol.py",
                "--config",
                a.config,
                "--micro-batch",
                m,
                "--grad-accum",
                k,
                "--seq-len",
                str(a.seq_len),
                "--precision",
                a.precision,
            ]
        )
        row = json.loads(text.strip().splitlines()[-1])
        row["process_wall_s"] = wall
        protocol[split] = row
        print(json.dumps(row))

    rows, out_rows = [], []
    for split, ref in protocol.items():
        got = measured[split]
        s_cal = got["seconds_per_update"]
        diff = (s_cal - ref["median_s"]) / ref["median_s"]
        out_rows.append(
            {
                "split": split,
                "calibrate_s": s_cal,
                "calibrate_status": got["status"],
                "calibrate_timed": got["timed_updates"],
                "protocol_median_s": ref["median_s"],
                "protocol_mean_s": ref["mean_s"],
                "rel_diff": diff,
                "protocol_process_s": ref["process_wall_s"],
                "calibrate_peak_reserved_gib": got["peak_reserved_gib"],
                "protocol_peak_reserved_gib": ref["peak_reserved_gib"],
            }
        )
        rows.append(
            [
                split,
                f"{s_cal:.4f}",
                got["timed_updates"],
                f"{ref['median_s']:.4f}",
                f"{diff:+.1%}",
                f"{ref['process_wall_s']:.1f}",
                f"{got['peak_reserved_gib']:.2f}",
                f"{ref['peak_reserved_gib']:.2f}",
            ]
        )
    protocol_total = sum(r["process_wall_s"] for r in protocol.values())
    rank_cal = sorted(protocol, key=lambda s: measured[s]["seconds_per_update"])
    rank_ref = sorted(protocol, key=lambda s: protocol[s]["median_s"])
    print(
        tabulate(
            rows,
            headers=[
                "split",
                "calibrate s/update",
                "timed",
                "protocol s/update",
                "diff",
                "protocol process s",
                "cal. peak GiB",
                "prot. peak GiB",
            ],
            disable_numparse=True,
        )
    )
    print(
        f"\ncalibrate: {cal_wall:.1f} s of device time (one process, "
        f"{profile['gpu_seconds']:.1f} s inside gacost); protocol: {protocol_total:.1f} s "
        f"({len(protocol)} processes); ratio {cal_wall / protocol_total:.1%}"
    )
    print(
        f"ranking calibrate {rank_cal}, protocol {rank_ref}: "
        f"{'same' if rank_cal == rank_ref else 'DIFFERENT'}"
    )
    for i, (wall, prof) in enumerate(repeats[1:], 2):
        line = ", ".join(
            f"{s['micro_batch']}x{s['grad_accum']} {s['seconds_per_update']:.4f}"
            for s in prof["splits"]
            if s["seconds_per_update"]
        )
        print(f"calibrate repeat {i}: {line} ({wall:.1f} s)")
    summary = {
        "gpu": profile["gpu"],
        "rows": out_rows,
        "calibrate_process_s": cal_wall,
        "calibrate_repeats": [
            {
                "process_s": w,
                "splits": {
                    f"{s['micro_batch']}x{s['grad_accum']}": s["seconds_per_update"]
                    for s in pr["splits"]
                },
            }
            for w, pr in repeats
        ],
        "protocol": protocol,
        "calibrate_gpu_seconds_reported": profile["gpu_seconds"],
        "protocol_process_s": protocol_total,
        "same_ranking": rank_cal == rank_ref,
        "max_abs_rel_diff": max(abs(r["rel_diff"]) for r in out_rows),
    }
    (a.out / "calibration_vs_protocol.json").write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
