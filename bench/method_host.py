"""Host seconds per launch of QLoRA and of a full fine-tune against their LoRA twins.

A pair is a host-bound split of a QLoRA or full fine-tune job and the same split of its
LoRA twin (the same model, tokens and batch, ``method: lora``), each the user's plain TRL
script in its own process, one right after the other on one host, in both orders across a
file's pairs. QLoRA: ``bash bench/calibrate_rounds_h200.sh qloratrace``, ``qloratrace2``,
``qloratwins1``, ``qloratwins2`` (``bench/results/calibrate-vs-user/run9/qlora/``, twins in
``bench/jobs/twins/``). Full fine-tunes: ``fullft1``, ``fullft2`` (``run7/run7-fullft.jsonl``)
and ``fullft3`` (``run10/run10-fullft.jsonl``, the held-out full fine-tunes; twins in
``bench/jobs/fullft/``).

From each run's median seconds per update the host's part of a micro-step is taken out of
the model's smooth maximum, ``host = (t^p - gpu^p)^(1/p)`` with ``t`` the micro-step (the
optimizer's prior taken off) and ``gpu`` the model's GPU time at the reference fit, and
divided by the model's launch-equivalents (kernels, copies and dropout's Python cost) at
LoRA's host factor. A pair's factor is the member's host per launch over its twin's: the
machine's speed cancels. Only pairs whose members are both host-bound (model host share >=
0.95) count. A workload paired more than once counts once (the geometric mean of its
pairs); a method's factor is the geometric mean over its workloads, with its standard error.

Shipped: ``TimeModelParams.host_factor_qlora`` and ``host_factor_full`` are the derived
factors, rounded to two decimals (a method's factor is modelled once it is more than two
standard errors from 1: the full fine-tune's since run 10, seven workloads). Where a run was
traced (``--trace``), the profiler's host microseconds per kernel are shown beside it.

    python bench/method_host.py

Prints the table and writes ``bench/results/method_host.json``.
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
from gacost.base.job import Job, load_job

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "calibrate-vs-user"
FILES = (*sorted((RESULTS / "run9" / "qlora").glob("*.jsonl")),
         RESULTS / "run7" / "run7-fullft.jsonl", RESULTS / "run10" / "run10-fullft.jsonl")
OUT = ROOT / "bench" / "results" / "method_host.json"
GPU = "H200-SXM"
HOST_BOUND = 0.95


def host_per_launch(job: Job, run: dict[str, Any]) -> tuple[float, float]:
    """The host seconds per launch-equivalent of a user run (a bench/user_script.py line) of
    ``job`` under the reference model at LoRA's host factor, and the model's host share."""
    arch = predictor.arch_for(job.model)
    assert arch is not None, job.model
    setup = predictor.setup_for(job.workload(arch.name))
    # the method's own factor is what is measured: price every run at LoRA's (1)
    terms = replace(DEFAULT_PARAMS, host_factor_qlora=1.0, host_factor_full=1.0)
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


def _twin_of(job: Job, candidate: Job) -> bool:
    return (candidate.method == "lora" and candidate.model == job.model
            and candidate.sequence_length == job.sequence_length
            and candidate.gradient_checkpointing == job.gradient_checkpointing)


def pairs() -> list[dict[str, Any]]:
    """Every QLoRA or full fine-tune run with the LoRA twin run next to it (the line before
    or after, the same split), both host-bound."""
    out = []
    for path in FILES:
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        jobs = [load_job(ROOT / r["job"]) for r in lines]
        for i, (run, job) in enumerate(zip(lines, jobs, strict=True)):
            if job.method == "lora":
                continue
            twin = next((j for j in (i - 1, i + 1) if 0 <= j < len(lines)
                         and lines[j]["split"] == run["split"] and _twin_of(job, jobs[j])),
                        None)
            if twin is None:
                continue
            (host, share), (twin_host, twin_share) = (host_per_launch(job, run),
                                                      host_per_launch(jobs[twin], lines[twin]))
            if min(share, twin_share) < HOST_BOUND:
                continue
            traced = [(x.get("trace") or {}).get("host_us_per_kernel")
                      for x in (run, lines[twin])]
            out.append({
                "file": str(path.relative_to(RESULTS)), "method": job.method,
                "workload": Path(run["job"]).stem, "twin": Path(lines[twin]["job"]).stem,
                "split": run["split"], "order": "first" if i < twin else "second",
                "member_s": round(run["median_s"], 4), "twin_s": round(lines[twin]["median_s"], 4),
                "host_share": [round(share, 3), round(twin_share, 3)],
                "us_per_launch": [round(host * 1e6, 2), round(twin_host * 1e6, 2)],
                "factor": round(host / twin_host, 4),
                "traced_us_per_kernel": traced if all(traced) else None,
            })
    return out


def derived(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A method's factor: the geometric mean over workloads of each workload's geometric
    mean over its pairs, with the standard error of its log."""
    by_workload: dict[str, list[float]] = {}
    for r in rows:
        by_workload.setdefault(r["workload"], []).append(math.log(r["factor"]))
    logs = {w: statistics.fmean(v) for w, v in sorted(by_workload.items())}
    mean = statistics.fmean(logs.values())
    se = statistics.stdev(logs.values()) / math.sqrt(len(logs)) if len(logs) > 1 else math.inf
    return {"factor": round(math.exp(mean), 3), "log_se": round(se, 4), "pairs": len(rows),
            "per_workload": {w: round(math.exp(v), 4) for w, v in logs.items()}}


def main() -> None:
    rows = pairs()
    print(f"{'method':6s} {'workload':38s} {'split':>5s} {'order':6s} {'s/update':>15s} "
          f"{'us/launch':>13s} {'factor':>7s}  traced us/kernel")
    for r in rows:
        traced = r["traced_us_per_kernel"]
        print(f"{r['method']:6s} {r['workload'][:38]:38s} {r['split']:>5s} {r['order']:6s} "
              f"{r['member_s']:7.3f}/{r['twin_s']:7.3f} {r['us_per_launch'][0]:6.1f}/"
              f"{r['us_per_launch'][1]:6.1f} {r['factor']:7.3f}  "
              + ("" if not traced else f"{traced[0]:.1f}/{traced[1]:.1f} = "
                 f"{traced[0] / traced[1]:.2f}"))
    report: dict[str, Any] = {"gpu": GPU, "host_bound": HOST_BOUND, "pairs": rows}
    for method in ("qlora", "full"):
        d = report[method] = derived([r for r in rows if r["method"] == method])
        print(f"\n{method}: {d['factor']:.3f} per launch against LoRA (log se {d['log_se']:.3f}, "
              f"{d['pairs']} pairs); per workload "
              + ", ".join(f"{w.split('-')[0]} {f:.3f}" for w, f in d["per_workload"].items()))
    report["shipped_host_factor_qlora"] = DEFAULT_PARAMS.host_factor_qlora
    report["shipped_host_factor_full"] = DEFAULT_PARAMS.host_factor_full
    print(f"shipped host_factor_qlora {DEFAULT_PARAMS.host_factor_qlora}, host_factor_full "
          f"{DEFAULT_PARAMS.host_factor_full}")
    OUT.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
