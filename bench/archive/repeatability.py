# ARCHIVED 2026-12-03 (issue 21), not maintained: a one-off run on the lent H200 on 2026-12-02
# (issue 11 item 7). It produced bench/results/repeatability/ (rep-a to rep-d, summary.json);
# the numbers are in bench/RESULTS.md, "Repeatability of `gacost calibrate`" and
# "torch.compile and Liger through `gacost calibrate`". Imports calibration_vs_protocol.py and
# runs published_protocol.py, both beside it.
"""Repeatability of `gacost calibrate` against the full published protocol (issue 11, item 7).

Three phases, so the device work can be spread over calls and compared here:

    # on the GPU machine: N calibrations, each a fresh process with the defaults
    python bench/archive/repeatability.py calibrate --job bench/jobs/qwen3-1.7b-lora-bf16.yaml \
        --repeats 3 --out $OUT/rep
    # on the GPU machine: the protocol (10 warm-up + 100 timed updates, each split in its own
    # process, plain TRL: bench/archive/published_protocol.py), for some or all splits
    python bench/archive/repeatability.py protocol --config data/models/Qwen--Qwen3-1.7B.json \
        --splits 4x1,2x2 --out $OUT/rep
    # anywhere: the table (printed, and JSON next to the inputs)
    python bench/archive/repeatability.py compare --dirs bench/results/repeatability/rep-a \
        bench/results/repeatability/rep-b --json bench/results/repeatability/summary.json

Targets (issue 11): the same fastest split in every calibration; every fully timed (``ok``)
split within 5% of the protocol's median; each calibration under 15% of the protocol's
device time (process wall-clock, start-up included, for both).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from calibration_vs_protocol import run_timed  # bench/ is on the path of a bench script
from tabulate import tabulate

from gacost.calibration import stats


def lower_quartile(xs: list[float]) -> float:
    """The estimate calibrate used until 2026-12-03 (the median below 4 values)."""
    if len(xs) < 4:
        return stats.median(xs)
    return float(statistics.quantiles(xs, n=4, method="inclusive")[0])


def calibrate(a: argparse.Namespace) -> None:
    a.out.mkdir(parents=True, exist_ok=True)
    for i in range(a.repeats):
        name = f"calibrate-{a.tag}{i + 1}"
        path = a.out / f"{name}.json"
        cmd = [sys.executable, "-m", "gacost", "calibrate", "--job", a.job, "--splits",
               a.splits, "--out", str(path), "--quiet", *a.extra]
        wall, text = run_timed(cmd)
        print(text, flush=True)
        (a.out / f"{name}.wall").write_text(json.dumps({"process_s": wall, "argv": cmd[3:]}))


def protocol(a: argparse.Namespace) -> None:
    a.out.mkdir(parents=True, exist_ok=True)
    for split in a.splits.split(","):
        m, k = split.split("x")
        wall, text = run_timed([sys.executable, "bench/archive/published_protocol.py",
                                "--config", a.config, "--micro-batch", m, "--grad-accum", k,
                                "--seq-len", str(a.seq_len), "--precision", a.precision])
        row = json.loads(text.strip().splitlines()[-1])
        row["process_wall_s"] = wall
        (a.out / f"protocol-{split}.json").write_text(json.dumps(row))
        print(split, f"median {row['median_s']:.4f} s, process {wall:.1f} s", flush=True)


def _split_key(s: dict[str, Any]) -> str:
    return f"{s['micro_batch']}x{s['grad_accum']}"


def _timed_updates(s: dict[str, Any]) -> tuple[list[float], list[float]]:
    """A split's timed updates of pass 1 and pass 2 (each pass's warm-up left out). Pass 2
    starts with one warm-up update; its boundary is where both stored pass estimates are
    reproduced (by the median or the lower quartile, whichever the profile used)."""
    times = s["update_times"][s["warmup_updates"]:]
    passes = s.get("pass_seconds") or s.get("pass_medians") or []
    if len(passes) != 2:
        return times, []
    for n1 in range(2, len(times) - 1):
        a, b = times[:n1], times[n1 + 1:]
        for est in (stats.median, lower_quartile):
            if abs(est(a) - passes[0]) < 2e-6 and abs(est(b) - passes[1]) < 2e-6:
                return a, b
    raise SystemExit(f"split {_split_key(s)}: pass boundary not found")


def compare(a: argparse.Namespace) -> None:
    protocol_runs: dict[str, list[dict[str, Any]]] = {}
    calibrations: list[tuple[str, float | None, dict[str, Any]]] = []
    for d in a.dirs:
        for f in sorted(d.glob("protocol-*.json")):
            row = json.loads(f.read_text())
            protocol_runs.setdefault(f.stem.removeprefix("protocol-"), []).append(row)
        for f in sorted(d.glob("calibrate-*.json")):
            wall_file = f.with_suffix(".wall")
            wall = json.loads(wall_file.read_text())["process_s"] if wall_file.exists() else None
            calibrations.append((f"{d.name}/{f.stem.removeprefix('calibrate-')}", wall,
                                 json.loads(f.read_text())))
    if not protocol_runs or not calibrations:
        raise SystemExit("compare: need protocol-*.json and calibrate-*.json in --dirs")
    # the reference: the mean of the protocol runs' medians; its device time: one run per split
    reference = {k: statistics.fmean(r["median_s"] for r in runs)
                 for k, runs in protocol_runs.items()}
    protocol_s = sum(runs[0]["process_wall_s"] for runs in protocol_runs.values())
    fastest_ref = min(reference, key=lambda k: reference[k])
    rows, out = [], []
    for name, wall, prof in calibrations:
        splits = {_split_key(s): s for s in prof["splits"]}
        timed = {k: s for k, s in splits.items() if s.get("seconds_per_update")}
        fastest = min(timed, key=lambda k: timed[k]["seconds_per_update"])
        for key in sorted(reference):
            s = splits.get(key)
            if s is None or s["status"] != "ok":
                continue
            p1, p2 = _timed_updates(s)
            est = {"median": stats.median(p1 + p2), "lower_quartile": lower_quartile(p1 + p2),
                   "pass1_median": stats.median(p1)}
            diff = {k: v / reference[key] - 1 for k, v in est.items()}
            rec = {"calibration": name, "split": key, "timed": len(p1) + len(p2),
                   "passes": 2 if p2 else 1, "estimates": est, "rel_diff": diff,
                   "protocol_reference_s": reference[key], "fastest": fastest,
                   "device_s": None if wall is None else round(wall, 1),
                   "device_share": None if wall is None else round(wall / protocol_s, 4)}
            out.append(rec)
            rows.append([name, key, rec["timed"],
                         *(f"{est[k]:.4f} ({diff[k]:+.1%})" for k in est), fastest,
                         "" if wall is None else f"{wall:.0f} ({wall / protocol_s:.1%})"])
    print("protocol runs (median s/update): " + "; ".join(
        f"{k}: " + ", ".join(f"{r['median_s']:.4f}" for r in runs)
        for k, runs in sorted(protocol_runs.items())))
    print(tabulate(rows, headers=["calibration", "split", "timed", "median (vs protocol)",
                                  "lower quartile", "pass-1 median", "fastest",
                                  "device s (share)"], disable_numparse=True))
    summary: dict[str, Any] = {
        "protocol_runs": protocol_runs, "protocol_reference_s": reference,
        "protocol_device_s": round(protocol_s, 1), "protocol_fastest": fastest_ref,
        "rows": out,
        "same_fastest_every_time": all(r["fastest"] == fastest_ref for r in out),
        "within_5pct": {k: sum(abs(r["rel_diff"][k]) <= 0.05 for r in out)
                        for k in ("median", "lower_quartile", "pass1_median")},
        "worst_abs_rel_diff": {k: max(abs(r["rel_diff"][k]) for r in out)
                               for k in ("median", "lower_quartile", "pass1_median")},
        "ok_splits": len(out),
    }
    shares = [r["device_share"] for r in out if r["device_share"] is not None]
    summary["device_share_range"] = [min(shares), max(shares)] if shares else None
    print(f"\nprotocol: {protocol_s:.0f} device s, fastest {fastest_ref}; same fastest every "
          f"time: {summary['same_fastest_every_time']}; within 5% of the protocol "
          f"({len(out)} ok splits): {summary['within_5pct']}; worst "
          + ", ".join(f"{k} {v:.1%}" for k, v in summary["worst_abs_rel_diff"].items()))
    if a.json:
        a.json.write_text(json.dumps(summary, indent=2) + "\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="phase", required=True)
    c = sub.add_parser("calibrate")
    c.add_argument("--job", required=True)
    c.add_argument("--splits", default="1x4,2x2,4x1")
    c.add_argument("--repeats", type=int, default=3)
    c.add_argument("--tag", default="", help="prefix of the profile names (e.g. notrace-)")
    c.add_argument("--out", type=Path, required=True)
    c.add_argument("extra", nargs="*", help="more calibrate flags, after --")
    r = sub.add_parser("protocol")
    r.add_argument("--config", required=True)
    r.add_argument("--splits", default="1x4,2x2,4x1")
    r.add_argument("--seq-len", type=int, default=512)
    r.add_argument("--precision", default="bf16")
    r.add_argument("--out", type=Path, required=True)
    m = sub.add_parser("compare")
    m.add_argument("--dirs", type=Path, nargs="+", required=True)
    m.add_argument("--json", type=Path)
    a = p.parse_args()
    {"calibrate": calibrate, "protocol": protocol, "compare": compare}[a.phase](a)


if __name__ == "__main__":
    main()
