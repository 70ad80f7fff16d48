"""fp16 against bf16: run 21's twins, which the time model takes as the same work.

The model counts fp16's launches as bf16's (the same autocast casts) and charges neither
GradScaler's kernels nor its syncs. Run 21 (``bash bench/calibrate_rounds_h200.sh
fp16twins1`` then ``fp16twins2``, one lent H100 start) ran the published T4/L4 workload
(Qwen3-1.7B LoRA, dropout 0) at 1x4, 2x2 and 4x1 and a host-bound SmolLM2-360M LoRA at 4x4
in both precisions, each pair back to back in its own processes, bf16 first in the first
call and fp16 first in the second, then one traced update pair (1x4, then 4x1). This script
pairs them: the time ratio of each pair, the launch counts of the traces, and the model's
prediction for that unmeasured H100 machine alone and with the start's idle probes.

    python bench/fp16_twins.py

Prints the tables and writes ``bench/results/fp16_twins.json``.
"""

from __future__ import annotations

import functools
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

from gacost.advisor.estimate import HostProbe
from gacost.base.gpu_names import canonical_gpu
from gacost.base.job import load_job
from gacost.base.split import Split

sys.path.insert(0, str(Path(__file__).resolve().parent))
from heldout_user_runs import predictions as split_estimates  # noqa: E402
from host_speed import idle_probe_ms, lines  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "bench" / "results" / "calibrate-vs-user" / "run21"
OUT = ROOT / "bench" / "results" / "fp16_twins.json"


@functools.cache
def precision_of(job: str) -> str:
    """The precision the job file names (the twins differ in nothing else)."""
    return load_job(ROOT / job).precision


def twin_pairs() -> list[dict[str, Any]]:
    """Each pair of runs that differ only in precision, in the order they ran."""
    pairs = []
    for call, path in enumerate(sorted((RUN / "fp16").glob("fp16-twins-*.jsonl")), 1):
        runs = lines(path)
        for first, second in zip(runs[::2], runs[1::2], strict=True):
            by = {precision_of(r["job"]): r for r in (first, second)}
            assert set(by) == {"bf16", "fp16"} and first["split"] == second["split"], path
            pairs.append({
                "call": call, "job": Path(by["bf16"]["job"]).stem.replace("-bf16", ""),
                "split": first["split"], "first": precision_of(first["job"]),
                "bf16_s": by["bf16"]["median_s"], "fp16_s": by["fp16"]["median_s"],
                "ratio": by["fp16"]["median_s"] / by["bf16"]["median_s"],
                "jobs": {p: r["job"] for p, r in by.items()},
            })
    return pairs


def traced() -> list[dict[str, Any]]:
    """The traced updates: launches and operators per micro-step, host us per launch."""
    out = []
    for path in sorted((RUN / "fp16").glob("fp16-trace-*.jsonl")):
        for r in lines(path):
            t = r["trace"]
            out.append({"precision": precision_of(r["job"]), "split": r["split"],
                        "launches": t["kernels_per_microstep"] + t["copies_per_microstep"],
                        "operators": t["ops_per_microstep"],
                        "host_us_per_launch": t["host_us_per_kernel"],
                        "median_s": r["median_s"]})
    return out


def predictions(pairs: list[dict[str, Any]], probe_ms: float) -> list[dict[str, Any]]:
    """The shipped model on each job and split (an unmeasured machine of the runs' GPU),
    alone and with the start's probe, against the geometric mean of its runs."""
    gpu = canonical_gpu(lines(next((RUN / "fp16").glob("fp16-twins-*.jsonl")))[0]["gpu"])
    assert gpu is not None
    rows = []
    for precision in ("bf16", "fp16"):
        jobs = dict.fromkeys((p["jobs"][precision], p["split"]) for p in pairs)
        for job_path, split in jobs:
            job = load_job(ROOT / job_path).model_copy(update={"gpus": [gpu]})
            m, k = Split.parse(split)
            runs = [p[f"{precision}_s"] for p in pairs
                    if p["jobs"][precision] == job_path and p["split"] == split]
            measured = statistics.geometric_mean(runs)
            row: dict[str, Any] = {"job": Path(job_path).stem, "split": split, "gpu": gpu,
                                   "runs_s": runs, "measured_s": measured}
            for name, probe in (("model", None), ("with_probe", HostProbe(probe_ms, gpu))):
                e = split_estimates(job, [], probe=probe)[m, k]
                seconds = e.seconds_per_update or 0.0
                row[name] = {"seconds": seconds, "error": seconds / measured - 1.0,
                             "band": [e.seconds_low, e.seconds_high],
                             "covered": (e.seconds_low or 0.0) <= measured
                             <= (e.seconds_high or math.inf)}
            rows.append(row)
    return rows


def main() -> None:
    pairs = twin_pairs()
    print("fp16 against bf16, each pair back to back in its own processes (run 21, one H100 "
          "start)")
    print(f"{'call':>4s} {'job':36s} {'split':5s} {'first':5s} {'bf16 s':>7s} {'fp16 s':>7s} "
          f"{'fp16/bf16':>9s}")
    for p in pairs:
        print(f"{p['call']:4d} {p['job']:36s} {p['split']:5s} {p['first']:5s} "
              f"{p['bf16_s']:7.3f} {p['fp16_s']:7.3f} {p['ratio']:9.3f}")
    logs = [math.log(p["ratio"]) for p in pairs]
    mean, sd = statistics.fmean(logs), statistics.stdev(logs)
    se = sd / math.sqrt(len(logs))
    print(f"geometric mean fp16/bf16 {math.exp(mean):.3f} over {len(pairs)} pairs "
          f"(log sd {sd:.3f}, se {se:.3f}; 95 %: {math.exp(mean - 2 * se):.2f}-"
          f"{math.exp(mean + 2 * se):.2f})")
    traces = traced()
    print("\nTraced updates: launches and operators per micro-step")
    for t in traces:
        print(f"  {t['precision']} {t['split']}: {t['launches']:.0f} launches, "
              f"{t['operators']:.0f} operators, {t['host_us_per_launch']:.1f} us per launch")
    probe_ms = idle_probe_ms(RUN)  # the start's idle probes (`gacost probe`, 10 s)
    assert probe_ms is not None, RUN
    rows = predictions(pairs, probe_ms)
    print(f"\nThe model on an unmeasured {rows[0]['gpu']} machine, alone and with the start's "
          f"idle probe ({probe_ms:.1f} ms), against the geometric mean of the runs")
    print(f"{'job':38s} {'split':5s} {'measured':>8s} {'model':>7s} {'error':>7s} "
          f"{'probe':>7s} {'error':>7s}")
    for r in rows:
        a, b = r["model"], r["with_probe"]
        print(f"{r['job']:38s} {r['split']:5s} {r['measured_s']:8.3f} {a['seconds']:7.3f} "
              f"{a['error']:+7.1%} {b['seconds']:7.3f} {b['error']:+7.1%}")
    summary = {name: {"median_abs_error": statistics.median(abs(r[name]["error"]) for r in rows),
                      "covered": sum(r[name]["covered"] for r in rows), "rows": len(rows)}
               for name in ("model", "with_probe")}
    for name, s in summary.items():
        print(f"{name}: median |error| {s['median_abs_error']:.1%}, {s['covered']} of "
              f"{s['rows']} in the 90 % band")
    OUT.write_text(json.dumps({
        "pairs": pairs, "ratio": {"geometric_mean": math.exp(mean), "log_sd": sd,
                                  "log_se": se},
        "traces": traces, "probe_ms": probe_ms, "predictions": rows, "summary": summary,
    }, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
