"""``gacost calibrate`` against the user's own run, on the same machine in the same hour.

For each workload (a job file and its splits): every split runs once as the user's plain TRL
script in its own process (``bench/user_script.py``, TRL defaults), then ``gacost
calibrate`` measures the same splits (its defaults: one process per split on a GPU), and
the two medians are compared. Prints a table and writes one JSON file with every number
(the user runs' update times and the calibration profiles).

    python bench/calibrate_vs_user.py --out $OUT/calib-vs-user-1.json \
        bench/jobs/qwen3-1.7b-lora-bf16.yaml:1x4,2x2,4x1 bench/jobs/...:4x1,1x4

Targets (issue 19): every fully timed split within 5% of the user's run, every split
dropped early within 10%, the same fastest split; device time stated.
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

BENCH = Path(__file__).resolve().parent


def run(cmd: list[str], timeout: float) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return time.perf_counter() - started, done


def host_probe(seconds: float) -> dict[str, Any]:
    """The host probe a user runs before training (``gacost probe``), in this process."""
    if seconds <= 0:
        return {}
    from gacost.calibration.host_probe import probe

    speed = probe(seconds)
    return {"probe_before_ms": speed.mean_ms, "probe_before_median_ms": speed.median_ms,
            "probe_before_slow_share": speed.slow_share}


def user_split(job: str, split: str, warmup: int, updates: int,
               probe_seconds: float = 0.0) -> dict[str, Any]:
    m, k = split.split("x")
    probed = host_probe(probe_seconds)
    wall, done = run([sys.executable, str(BENCH / "user_script.py"), job, "--micro-batch", m,
                      "--grad-accum", k, "--warmup", str(warmup), "--updates", str(updates)],
                     timeout=400)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode or not lines:
        return {"split": split, "error": done.stderr[-600:], "wall_s": wall, **probed}
    return {**json.loads(lines[-1]), "wall_s": wall, **probed}


def calibrate(job: str, splits: str, folder: Path, extra: list[str]) -> dict[str, Any]:
    out = folder / (Path(job).stem + ".json")
    wall, done = run([sys.executable, "-m", "gacost", "calibrate", "--job", job, "--splits",
                      splits, "--out", str(out), "--quiet", "--force", *extra], timeout=600)
    if done.returncode or not out.exists():
        return {"error": done.stderr[-800:], "wall_s": wall}
    return {"profile": json.loads(out.read_text()), "wall_s": wall, "summary": done.stdout}


def compare(user: list[dict[str, Any]], cals: list[dict[str, Any]]
            ) -> list[dict[str, Any]]:
    """Each calibration's split against the median of the user runs of that split (over the
    rounds: runs alternate, so drift in the host falls on both sides)."""
    rows = []
    for cal in cals:
        splits = {f"{s['micro_batch']}x{s['grad_accum']}": s
                  for s in cal.get("profile", {}).get("splits", [])}
        for split, s in splits.items():
            runs = [float(u["median_s"]) for u in user
                    if u.get("split") == split and u.get("median_s")]
            theirs = statistics.median(runs) if runs else None
            mine = s.get("seconds_per_update")
            rows.append({
                "variant": cal["variant"], "round": cal["round"], "split": split,
                "user_median_s": theirs, "user_runs_s": runs, "calibrate_s": mine,
                "status": s.get("status"), "timed": s.get("timed_updates"),
                "error": (mine / theirs - 1) if mine and theirs else None,
            })
    return rows


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per variant and split: the median over rounds of calibrate's readings against the
    median over rounds of the user's runs (the bias, with host drift averaged on both sides),
    and the spread of each side across processes."""
    out = []
    for key in sorted({(str(r["variant"]), str(r["split"])) for r in rows}):
        mine = [float(r["calibrate_s"]) for r in rows
                if (r["variant"], r["split"]) == key and r["calibrate_s"]]
        theirs: list[float] = next(
            (r["user_runs_s"] for r in rows if (r["variant"], r["split"]) == key), [])
        if not mine or not theirs:
            continue
        cal, user = statistics.median(mine), statistics.median(theirs)
        out.append({"variant": key[0], "split": key[1], "calibrate_median_s": cal,
                    "user_median_s": user, "bias": cal / user - 1,
                    "calibrate_runs_s": mine, "user_runs_s": theirs,
                    "statuses": [r["status"] for r in rows if (r["variant"], r["split"]) == key],
                    "user_spread": max(theirs) / min(theirs) - 1,
                    "calibrate_spread": max(mine) / min(mine) - 1})
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("workloads", nargs="+", help="JOB.yaml:MxK,MxK")
    p.add_argument("--out", required=True)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--updates", type=int, default=15)
    p.add_argument("--rounds", type=int, default=1,
                   help="alternate user runs and calibrations this many times")
    p.add_argument("--variant", action="append", default=[],
                   help="extra calibrate flags of a variant, e.g. '--no-trace' (repeatable; "
                        "the default calibration always runs)")
    p.add_argument("--calibrate-args", default="",
                   help="flags added to every calibration, e.g. '--trace-all'")
    p.add_argument("--user-only", action="store_true",
                   help="only the user's runs (held-out measurements for the model), no calibrate")
    p.add_argument("--probe-before", type=float, default=0.0, metavar="S",
                   help="time the host probe for S seconds before each user run (its ms in "
                        "the run's row)")
    a = p.parse_args()
    variants = [] if a.user_only else ["", *a.variant]
    report: dict[str, Any] = {"workloads": []}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for spec in a.workloads:
            job, splits = spec.split(":")
            user: list[dict[str, Any]] = []
            cals: list[dict[str, Any]] = []
            entry: dict[str, Any] = {"job": job, "user": user, "calibrate": cals}
            report["workloads"].append(entry)
            for round_ in range(a.rounds):
                for s in splits.split(","):
                    user.append({**user_split(job, s, a.warmup, a.updates, a.probe_before),
                                 "round": round_})
                    print(f"  user {s}: {user[-1].get('median_s')}", flush=True)
                    Path(a.out).write_text(json.dumps(report, indent=1))  # kept if killed
                for variant in variants:
                    cal = calibrate(job, splits, Path(tmp),
                                    [*variant.split(), *a.calibrate_args.split()])
                    cals.append({**cal, "variant": variant or "default", "round": round_})
                    Path(a.out).write_text(json.dumps(report, indent=1))
            rows = compare(user, cals)
            entry["rows"] = rows
            entry["summary"] = summary(rows)
            for r in entry["summary"]:
                print(f"{Path(job).stem:34s} {r['variant']:10s} {r['split']:>5s} median of "
                      f"{len(r['calibrate_runs_s'])} calibrations {r['calibrate_median_s']:.3f} s "
                      f"vs {len(r['user_runs_s'])} user runs {r['user_median_s']:.3f} s: "
                      f"{r['bias']:+.1%} (user spread {r['user_spread']:.0%}, calibrate "
                      f"{r['calibrate_spread']:.0%}; {r['statuses']})", flush=True)
            for r in rows:
                err = f"{r['error']:+.1%}" if r["error"] is not None else "n/a"
                print(f"{Path(job).stem:34s} {r['variant']:10s} r{r['round']} {r['split']:>5s} "
                      f"user {r['user_runs_s']} calibrate {r['calibrate_s']} "
                      f"({r['status']}, {r['timed']} timed) {err}", flush=True)
            print(f"  calibrate wall {sum(float(c.get('wall_s', 0)) for c in cals):.1f} s; "
                  f"user runs {sum(float(u.get('wall_s', 0)) for u in user):.1f} s", flush=True)
            Path(a.out).write_text(json.dumps(report, indent=1))
    report["wall_s"] = time.perf_counter() - started
    Path(a.out).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
