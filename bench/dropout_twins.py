"""LoRA dropout's host cost: run 28's twins against the model's ``dropout_host_launches``.

The model charges each dropout kernel (``kernel_counts.dropout_kernels_per_microstep``) the
host time of ``TimeModelParams.dropout_host_launches`` average launches (bench/MODEL.md
"Kernel counts", LoRA dropout): 2.0, derived here; 3.0 until the twenty-ninth session, from
two single pairs of 2026-12-03 on the lent H200, whose host moved 22 % within the hour. Run
28 (``bash bench/calibrate_rounds_h200.sh dropouttwins1`` and ``dropouttwins2``, two lent H100
starts) runs five host-bound LoRA jobs at dropout 0 and 0.05 back to back, each in its own
process, dropout 0 first in the first call and 0.05 first in the second, so that a drift
between a pair's two processes falls on both sides. Per pair: the time ratio (of the runs'
mean and median update), its standard error from the updates' spread, the model's ratio at
one, three and the shipped launches per dropout kernel, and the value each pair implies
(interpolated through one and three: the model's ratio is linear in it to within a part in a
thousand there); the summary over both orders and each order alone. The two 2026-12-03 pairs
are printed beside them, on the same scale.

    python bench/dropout_twins.py

Prints the tables and writes ``bench/results/dropout_twins.json``.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from dataclasses import replace
from pathlib import Path
from statistics import geometric_mean
from typing import Any

from gacost.advisor import predictor
from gacost.advisor.time_model import DEFAULT_PARAMS
from gacost.base import gpu_table
from gacost.base.gpu_names import canonical_gpu
from gacost.base.job import Job, load_job
from gacost.base.split import Split

sys.path.insert(0, str(Path(__file__).resolve().parent))
from heldout_sets import RESULTS, RUNS  # noqa: E402
from host_speed import idle_probe_ms, lines  # noqa: E402

ROOT = RESULTS.parents[1]
RUN = RUNS / "run28"
# each call's machine start, by the folder of its idle probes (`gacost probe`): run 28's first
# call ran on one lent H100 start with held-out session 15's case AG, whose probes are that
# start's; the second call's start was given back before a probe ran there. A call with none
# here is printed without a probe
START_PROBES = {1: RESULTS / "heldout-2026-12-07g"}
OUT = RESULTS / "dropout_twins.json"
SHIPPED = DEFAULT_PARAMS.dropout_host_launches
# the pairs the shipped value was derived from (shared/research/measurements-2026-12-03.md
# section 2, own-process plain TRL on the lent H200, median s/update, dropout 0 -> 0.05)
EARLIER_PAIRS = (
    ("bench/jobs/qwen3-1.7b-lora-bf16-dropout.yaml", "1x4", 1.459, 1.694),
    ("bench/jobs/qwen3-0.6b-lora-nogc-dropout.yaml", "1x8", 1.729, 2.041),
)


def with_dropout(job: Job, dropout: float) -> Job:
    return job.model_copy(update={"lora": job.lora.model_copy(update={"dropout": dropout})})


def log_se(times: list[float]) -> float:
    """Standard error of the log of a run's mean update (its updates taken as independent)."""
    logs = [math.log(t) for t in times]
    return statistics.stdev(logs) / math.sqrt(len(logs))


def twin_pairs() -> list[dict[str, Any]]:
    """Each pair of runs that differ only in dropout, in the order they ran."""
    pairs = []
    for call, path in enumerate(sorted(RUN.glob("run28-dropout-twins*.jsonl")), 1):
        runs = lines(path)
        for first, second in zip(runs[::2], runs[1::2], strict=True):
            by = {load_job(ROOT / r["job"]).lora.dropout: r for r in (first, second)}
            assert len(by) == 2 and 0.0 in by and first["split"] == second["split"], path
            d0, dp = by[0.0], by[max(by)]
            timed = {d: r["update_times"][r["warmup"]:] for d, r in by.items()}
            pairs.append({
                "call": call, "job": d0["job"], "dropout_job": dp["job"], "split": d0["split"],
                "dropout": max(by), "gpu": d0["gpu"],
                "first": "dropout" if first is dp else "dropout 0",
                "d0_mean_s": d0["mean_s"], "dropout_mean_s": dp["mean_s"],
                "d0_median_s": d0["median_s"], "dropout_median_s": dp["median_s"],
                "ratio_mean": dp["mean_s"] / d0["mean_s"],
                "ratio_median": dp["median_s"] / d0["median_s"],
                "log_se": math.hypot(*(log_se(t) for t in timed.values())),
            })
    return pairs


def model_ratio(job: Job, split: str, gpu: str, launches: float) -> float:
    """The model's dropout/no-dropout time ratio of ``split`` on an unmeasured ``gpu``
    machine with each dropout kernel costing ``launches`` average launches of host time (the
    reference fit alone: no measured profile stands in for either twin)."""
    fit = predictor.reference_model(replace(DEFAULT_PARAMS, dropout_host_launches=launches))
    spec = gpu_table.gpu_specs()[gpu]
    m, k = Split.parse(split)

    def seconds(j: Job) -> float:
        workload = j.workload()
        arch = predictor.arch_for(workload.model)
        assert arch is not None, workload.model
        band = fit.seconds(arch, predictor.setup_for(workload), spec, m, k)
        assert band is not None, gpu
        return band.value

    return seconds(job) / seconds(with_dropout(job, 0.0))


def implied(job: Job, split: str, gpu: str, measured: float) -> dict[str, float]:
    """The model's ratio at one launch per dropout kernel, at three and at the shipped value,
    and the value that gives ``measured`` (linear through the first two)."""
    one, three = (model_ratio(job, split, gpu, x) for x in (1.0, 3.0))
    return {"model_ratio_1": one, "model_ratio_3": three,
            "model_ratio_shipped": model_ratio(job, split, gpu, SHIPPED),
            "implied_launches": 1.0 + 2.0 * (measured - one) / (three - one)}


def weighted(values: list[float], ses: list[float]) -> tuple[float, float]:
    """Inverse-variance mean and its standard error, widened by sqrt(chi2 / dof) where the
    values scatter more than their own errors allow (a pair's error from its updates'
    spread misses what moves between its two processes)."""
    w = [1 / s ** 2 for s in ses]
    mean = sum(v * x for v, x in zip(values, w, strict=True)) / sum(w)
    chi2 = sum((v - mean) ** 2 * x for v, x in zip(values, w, strict=True))
    widen = math.sqrt(max(1.0, chi2 / (len(values) - 1))) if len(values) > 1 else 1.0
    return mean, widen / math.sqrt(sum(w))


def analyse() -> dict[str, Any]:
    """Run 28's pairs and the earlier ones against the model, and their summary."""
    pairs = twin_pairs()
    for p in pairs:
        gpu = canonical_gpu(p["gpu"])
        assert gpu is not None, p["gpu"]
        p.update(implied(load_job(ROOT / p["dropout_job"]), p["split"], gpu, p["ratio_mean"]))
        # the implied value's standard error: the ratio's, through the model's slope
        slope = (p["model_ratio_3"] - p["model_ratio_1"]) / 2.0
        p["implied_se"] = p["ratio_mean"] * p["log_se"] / slope
    value, se = weighted([p["implied_launches"] for p in pairs],
                         [p["implied_se"] for p in pairs])
    summary = {
        "pairs": len(pairs), "calls": len({p["call"] for p in pairs}),
        "geometric_mean_ratio": geometric_mean([p["ratio_mean"] for p in pairs]),
        "geometric_mean_ratio_median": geometric_mean([p["ratio_median"] for p in pairs]),
        "model_geometric_mean_ratio": geometric_mean([p["model_ratio_shipped"] for p in pairs]),
        "implied_launches": value, "implied_launches_se": se,
        # each order alone: the second process of a pair ran faster when the two orders differ
        "by_call": {str(call): {
            "first": part[0]["first"],
            "geometric_mean_ratio": geometric_mean([p["ratio_mean"] for p in part]),
            "implied_launches": weighted([p["implied_launches"] for p in part],
                                         [p["implied_se"] for p in part])[0]}
            for call in sorted({p["call"] for p in pairs})
            if (part := [p for p in pairs if p["call"] == call])},
    }
    earlier = [{"job": path, "split": split, "gpu": "H200-SXM", "d0_s": d0, "dropout_s": dp,
                "ratio": dp / d0, **implied(load_job(ROOT / path), split, "H200-SXM", dp / d0)}
               for path, split, d0, dp in EARLIER_PAIRS]
    probes = {str(call): idle_probe_ms(folder) for call, folder in START_PROBES.items()}
    return {"probe_ms_by_call": probes, "shipped": SHIPPED, "pairs": pairs,
            "summary": summary, "earlier_pairs": earlier}


def main() -> None:
    result = analyse()
    pairs, summary = result["pairs"], result["summary"]
    probes = ", ".join(f"call {c} {ms:.1f} ms" for c, ms in result["probe_ms_by_call"].items()
                       if ms)
    print(f"LoRA dropout twins, each pair back to back in its own processes (run 28, "
          f"{len(pairs)} pairs; idle probes of the calls' starts: {probes or 'none'}); the "
          "model: the reference fit on an unmeasured machine of the runs' GPU")
    print(f"{'call':>4s} {'job':40s} {'split':5s} {'first':9s} {'d0 s':>6s} {'d s':>6s} "
          f"{'ratio':>6s} {'+-':>5s} {'model 1':>7s} {f'model {SHIPPED:g}':>7s} "
          f"{'implied':>7s}")
    for p in pairs:
        print(f"{p['call']:4d} {Path(p['job']).stem:40s} {p['split']:5s} {p['first']:9s} "
              f"{p['d0_mean_s']:6.3f} {p['dropout_mean_s']:6.3f} {p['ratio_mean']:6.3f} "
              f"{p['ratio_mean'] * p['log_se']:5.3f} {p['model_ratio_1']:7.3f} "
              f"{p['model_ratio_shipped']:7.3f} {p['implied_launches']:7.2f}")
    print(f"geometric mean ratio {summary['geometric_mean_ratio']:.3f} of the means "
          f"({summary['geometric_mean_ratio_median']:.3f} of the medians) against the "
          f"model's {summary['model_geometric_mean_ratio']:.3f}; launches per dropout kernel "
          f"implied {summary['implied_launches']:.2f} +- {summary['implied_launches_se']:.2f} "
          f"(inverse-variance mean, its error widened by the pairs' scatter; shipped "
          f"{SHIPPED:g})")
    print("\nThe 2026-12-03 pairs (lent H200, medians, not back to back) on the same scale:")
    for r in result["earlier_pairs"]:
        print(f"  {Path(r['job']).stem:40s} {r['split']:5s} {r['d0_s']:.3f} -> "
              f"{r['dropout_s']:.3f}: ratio {r['ratio']:.3f}, model {r['model_ratio_1']:.3f} "
              f"(1) / {r['model_ratio_shipped']:.3f} ({SHIPPED:g}), implied "
              f"{r['implied_launches']:.2f}")
    print("each order alone: " + "; ".join(
        f"call {c} ({o['first']} first) ratio {o['geometric_mean_ratio']:.3f}, implied "
        f"{o['implied_launches']:.2f}" for c, o in summary["by_call"].items()))
    if summary["calls"] < 2:
        print("\none call only (dropout 0 first): the order is not balanced until "
              "dropouttwins2 runs; the shipped value stays")
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
