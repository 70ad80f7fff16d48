"""QLoRA's host seconds per launch against its LoRA twin's, from pairs run on one host.

Each pair is a host-bound QLoRA split (bitsandbytes NF4 as TRL builds it) and the same job
with ``method: lora`` (bench/jobs/twins/, bench/jobs/heldout4/twin-h22-...), each the user's
plain TRL script in its own process, one after the other (``bash
bench/calibrate_rounds_h200.sh qloratrace``, ``qloratrace2``, ``qloratwins1``,
``qloratwins2``; results in ``bench/results/calibrate-vs-user/run9/qlora/``). From each run's
median seconds per update the host's part of a micro-step is taken out of the model's
smooth maximum, ``host = (t^p - gpu^p)^(1/p)`` with ``t`` the micro-step (the optimizer's
prior taken off) and ``gpu`` the model's GPU time at the reference fit, and divided by the
model's launch-equivalents (kernels, copies and dropout's Python cost). The factor of a
pair is QLoRA's host per launch over its twin's: the machine's speed cancels. A workload run
twice counts once (the geometric mean of its pairs); the derived
``TimeModelParams.host_factor_qlora`` is the geometric mean over workloads. Where a run was
traced (``--trace``), the profiler's host microseconds per kernel are shown beside it.

    python bench/qlora_host.py

Prints the table and writes ``bench/results/qlora_host.json``.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any

from gacost.advisor import predictor, time_model
from gacost.advisor.time_model import DEFAULT_PARAMS
from gacost.base import gpu_table
from gacost.base.job import load_job

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "bench" / "results" / "calibrate-vs-user" / "run9" / "qlora"
OUT = ROOT / "bench" / "results" / "qlora_host.json"
GPU = "H200-SXM"


def host_per_launch(run: dict[str, Any]) -> tuple[float, float]:
    """The host seconds per launch-equivalent of a user run (bench/user_script.py line) under
    the reference model with LoRA's host factor, and the model's host share there."""
    job = load_job(ROOT / run["job"])
    arch = predictor.arch_for(job.model)
    assert arch is not None, job.model
    setup = predictor.setup_for(job.workload(arch.name))
    # QLoRA's own factor is what is measured: price both members at LoRA's (1)
    terms = replace(DEFAULT_PARAMS, host_factor_qlora=1.0)
    costs = time_model.work_costs(arch, setup, terms)
    rates = time_model.gpu_rates(gpu_table.gpu_specs()[GPU], costs.compute_precision, terms)
    assert rates is not None
    params = predictor.reference_model().params(GPU)
    m, k = run["micro_batch"], run["grad_accum"]
    micro = (run["median_s"] - time_model.optimizer_seconds(costs, rates)) / k
    gpu = time_model.micro_step(costs, rates, params, m).gpu
    p = terms.overlap
    host = (micro ** p - gpu ** p) ** (1 / p) if micro > gpu else 0.0
    launches = (costs.launches_at(m) + costs.extra_host_launches) * costs.host_launch_factor
    return host / launches, time_model.host_share(costs, rates, params, m)


def pairs() -> list[dict[str, Any]]:
    """QLoRA runs matched with the LoRA twin run next to them in the same file."""
    out = []
    for path in sorted(RUNS.glob("*.jsonl")):
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        twins = {Path(r["job"]).stem.removeprefix("twin-"): r for r in lines
                 if Path(r["job"]).stem.startswith("twin-")}
        for r in lines:
            stem = Path(r["job"]).stem
            twin_key = next((key for key in twins
                             if key.split("-")[0] == stem.split("-")[0]), None)
            if stem.startswith("twin-") or twin_key is None:
                continue
            twin = twins[twin_key]
            (q_host, q_share), (l_host, l_share) = host_per_launch(r), host_per_launch(twin)
            traced = [(x.get("trace") or {}).get("host_us_per_kernel") for x in (r, twin)]
            out.append({
                "file": path.name, "workload": stem.split("-")[0], "job": r["job"],
                "twin": twin["job"], "split": r["split"],
                "qlora_s": round(r["median_s"], 4), "lora_s": round(twin["median_s"], 4),
                "qlora_host_share": round(q_share, 3), "lora_host_share": round(l_share, 3),
                "qlora_us_per_launch": round(q_host * 1e6, 2),
                "lora_us_per_launch": round(l_host * 1e6, 2),
                "factor": round(q_host / l_host, 4),
                "traced_us_per_kernel": traced if all(traced) else None,
            })
    return out


def main() -> None:
    rows = pairs()
    print(f"{'workload':9s} {'file':20s} {'split':>5s} {'QLoRA s':>8s} {'LoRA s':>7s} "
          f"{'host share':>10s} {'us/launch Q':>11s} {'L':>6s} {'factor':>7s}  traced us/kernel")
    for r in rows:
        traced = ("" if not r["traced_us_per_kernel"] else
                  "{:.1f} / {:.1f} = {:.2f}".format(
                      *r["traced_us_per_kernel"],
                      r["traced_us_per_kernel"][0] / r["traced_us_per_kernel"][1]))
        print(f"{r['workload']:9s} {r['file']:20s} {r['split']:>5s} {r['qlora_s']:8.3f} "
              f"{r['lora_s']:7.3f} {r['qlora_host_share']:5.2f}/{r['lora_host_share']:4.2f} "
              f"{r['qlora_us_per_launch']:11.1f} {r['lora_us_per_launch']:6.1f} "
              f"{r['factor']:7.3f}  {traced}")
    by_workload: dict[str, list[float]] = {}
    for r in rows:
        by_workload.setdefault(r["workload"], []).append(math.log(r["factor"]))
    per_workload = {w: math.exp(statistics.fmean(v)) for w, v in sorted(by_workload.items())}
    derived = math.exp(statistics.fmean(math.log(f) for f in per_workload.values()))
    spread = statistics.stdev(math.log(f) for f in per_workload.values())
    print("\nper workload: " + ", ".join(f"{w} {f:.3f}" for w, f in per_workload.items()))
    print(f"host_factor_qlora derived: {derived:.3f} (geometric mean of {len(per_workload)} "
          f"workloads, log sd {spread:.3f}); shipped {DEFAULT_PARAMS.host_factor_qlora}")
    OUT.write_text(json.dumps({
        "gpu": GPU, "pairs": rows, "per_workload": {w: round(f, 4) for w, f in
                                                    per_workload.items()},
        "host_factor_qlora": round(derived, 3), "log_sd": round(spread, 4),
        "shipped": DEFAULT_PARAMS.host_factor_qlora}, indent=1) + "\n")


if __name__ == "__main__":
    main()
