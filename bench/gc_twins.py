"""The recompute pass at GPU-bound splits: each workload with gradient checkpointing against
its no-checkpointing twin, measured and modelled (issue 19, twenty-fifth session).

The held-out GPU-bound splits lean by checkpointing (``bench/heldout_user_runs.py``: with it,
attention-only LoRA and full fine-tunes run faster than the model says; without it, LoRA runs
slower). ``bash bench/calibrate_rounds_h200.sh gctwins`` runs each workload with checkpointing
and then its twin without (``bench/jobs/gctwins/``), each in its own process on one machine.
The difference of the two is the recompute pass's time; this script sets it beside the
model's, part by part (host, weight traffic, memory-bound activations, GEMM compute, per-launch
floor; the host overlaps the GPU's parts, so only these add up to the update's difference),
at the central parameters for a machine nobody measured.

    python bench/gc_twins.py [RUNS.jsonl ...]   # default: every run*-gctwins.jsonl

Prints a table and writes ``bench/results/gc_twins.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from heldout_sets import RESULTS, RUNS
from tabulate import tabulate

from gacost.advisor import predictor, time_model
from gacost.base import gpu_table
from gacost.base.gpu_names import canonical_gpu
from gacost.base.job import load_job

ROOT = Path(__file__).resolve().parent.parent
OUT = RESULTS / "gc_twins.json"
PARTS = ("host", "weights", "activations", "compute", "fixed")


def model_parts(job_path: str, split: str, gpu: str) -> dict[str, float]:
    """The model's seconds per update of ``job_path`` at ``split`` on ``gpu``, and each part of
    its micro-steps summed over the update (central parameters, a machine nobody measured)."""
    job = load_job(ROOT / job_path)
    arch = predictor.arch_for(job.model)
    assert arch is not None, job.model
    setup = predictor.setup_for(job.workload(arch.name))
    model = predictor.reference_model()
    spec = gpu_table.gpu_specs()[gpu]
    costs = time_model.work_costs(arch, setup, model.terms)
    rates = time_model.gpu_rates(spec, costs.compute_precision, model.terms)
    assert rates is not None, gpu
    params = model.params(gpu)
    m, k = (int(x) for x in split.split("x"))
    step = time_model.micro_step(costs, rates, params, m)
    weights = costs.weight_bytes / rates.bandwidth
    parts = {"host": step.host, "weights": weights, "activations": step.traffic - weights,
             "compute": step.compute, "fixed": step.fixed}
    total = time_model.update_seconds(costs, rates, params, m, k)
    return {"update": total, "optimizer": time_model.optimizer_seconds(costs, rates),
            **{p: k * v for p, v in parts.items()}}


def twin_path(job: str) -> str:
    """The no-checkpointing twin's job file of a held-out job (``bench/jobs/gctwins/``)."""
    name = Path(job).stem
    head, _, rest = name.partition("-")
    return f"bench/jobs/gctwins/twin-{head}-nogc-{rest}.yaml"


def pairs(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each checkpointed run beside its twin's run of the same split on the same GPU."""
    by_job = {(r["job"], r["split"], r["gpu"]): r for r in lines}
    rows = []
    for (job, split, gpu_name), with_gc in by_job.items():
        twin = by_job.get((twin_path(job), split, gpu_name))
        if "gctwins" in job or twin is None:
            continue
        gpu = canonical_gpu(gpu_name) or gpu_name
        model_gc, model_no = model_parts(job, split, gpu), model_parts(twin["job"], split, gpu)
        measured = with_gc["median_s"] - twin["median_s"]
        modelled = model_gc["update"] - model_no["update"]
        rows.append({
            "job": Path(job).stem, "split": split, "gpu": gpu,
            "measured_gc_s": round(with_gc["median_s"], 4),
            "measured_nogc_s": round(twin["median_s"], 4),
            "model_gc_s": round(model_gc["update"], 4),
            "model_nogc_s": round(model_no["update"], 4),
            "error_gc": round(model_gc["update"] / with_gc["median_s"] - 1, 4),
            "error_nogc": round(model_no["update"] / twin["median_s"] - 1, 4),
            "recompute_measured_s": round(measured, 4),
            "recompute_model_s": round(modelled, 4),
            "recompute_error": round(modelled / measured - 1, 4) if measured > 0 else None,
            "recompute_parts_s": {p: round(model_gc[p] - model_no[p], 4) for p in PARTS},
            "peak_gc_gib": with_gc.get("peak_reserved_gib"),
            "peak_nogc_gib": twin.get("peak_reserved_gib"),
        })
    return rows


def main(argv: list[str]) -> int:
    files = [Path(a) for a in argv] or sorted(RUNS.glob("run*/run*-gctwins.jsonl"))
    lines = [json.loads(x) for f in files for x in f.read_text().splitlines() if x.strip()]
    rows = pairs(lines)
    if not rows:
        print("no pairs of a checkpointed run and its twin in", *map(str, files))
        return 1
    print(tabulate(
        [[r["job"], r["split"], r["gpu"], r["measured_gc_s"], r["measured_nogc_s"],
          f"{r['error_gc']:+.1%}", f"{r['error_nogc']:+.1%}", r["recompute_measured_s"],
          r["recompute_model_s"],
          "" if r["recompute_error"] is None else f"{r['recompute_error']:+.1%}",
          " ".join(f"{p} {v:.3f}" for p, v in r["recompute_parts_s"].items())]
         for r in rows],
        headers=["workload", "split", "GPU", "GC s", "no GC s", "model GC", "model no GC",
                 "recompute s", "model's", "error",
                 "model's recompute by part (s; the host overlaps the GPU's parts)"]))
    shown = [str(f.resolve().relative_to(ROOT)) if f.resolve().is_relative_to(ROOT) else f.name
             for f in files]
    OUT.write_text(json.dumps({"files": shown,
                               "pairs": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
