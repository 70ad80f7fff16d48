"""The recompute pass at GPU-bound splits: each workload with gradient checkpointing against
its no-checkpointing twin, measured and modelled (issue 19, twenty-fifth session).

The held-out GPU-bound splits lean by checkpointing (``bench/heldout_user_runs.py``: with it,
attention-only LoRA and full fine-tunes run faster than the model says; without it, LoRA runs
slower). ``bash bench/calibrate_rounds_h200.sh gctwins`` runs each workload with checkpointing
and then its twin without (``bench/jobs/gctwins/``), each in its own process on one machine.
The difference of the two is the recompute pass's time; this script sets it beside the
model's, part by part (host, weight traffic, memory-bound activations, GEMM compute, per-launch
floor; the host overlaps the GPU's parts, so only these add up to the update's difference),
at the central parameters for a machine nobody measured. Where both runs of a pair carry an op
table (``bash bench/calibrate_rounds_h200.sh gctwinops``, run 26), a second table splits the
recompute's device time into GEMMs (with the attention core) and the memory-bound rest,
against the model's compute and memory-bound parts.

    python bench/gc_twins.py [RUNS.jsonl ...]   # default: every run*-gctwin*.jsonl

Prints a table and writes ``bench/results/gc_twins.json``.
"""

from __future__ import annotations

import functools
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


@functools.cache  # pairs() and op_pairs() ask for the same jobs
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


def device_ms_by_class(run: dict[str, Any]) -> dict[str, float]:
    """A run's op table (``user_script.py --op-table``, one update) as device ms by class:
    GEMMs with the attention core, and the memory-bound rest (its ATen rows)."""
    from crossgpu_traces import op_table_ms

    ms = op_table_ms(run)
    return {"gemm": ms["gemm"] + ms["attention"], "memory": ms["memory"]}


def op_pairs(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The recompute's device time by class (op tables of a checkpointed run and its twin's)
    against the model's: GEMMs and attention against its compute, the memory-bound rest
    against its weight traffic, memory-bound activations and per-launch floor (each summed
    over the update; the optimizer's is in both and cancels)."""
    rows = []
    traced = {(x["job"], x["split"]): x for x in lines if x.get("op_table")}
    for r in pairs(lines):
        gc_job = next(x["job"] for x in lines if Path(x["job"]).stem == r["job"])
        jobs = (gc_job, twin_path(gc_job))
        if any((job, r["split"]) not in traced for job in jobs):
            continue
        tables = [device_ms_by_class(traced[job, r["split"]]) for job in jobs]
        model = {k: model_parts(job, r["split"], r["gpu"]) for k, job in
                 (("gc", gc_job), ("nogc", twin_path(gc_job)))}
        gemm_model = (model["gc"]["compute"] - model["nogc"]["compute"]) * 1e3
        memory_model = sum(model["gc"][p] - model["nogc"][p]
                           for p in ("weights", "activations", "fixed")) * 1e3
        gemm = tables[0]["gemm"] - tables[1]["gemm"]
        memory = tables[0]["memory"] - tables[1]["memory"]
        rows.append({"job": r["job"], "split": r["split"], "gpu": r["gpu"],
                     "gemm_ms": {"gc": round(tables[0]["gemm"], 1),
                                 "nogc": round(tables[1]["gemm"], 1),
                                 "recompute": round(gemm, 1), "model": round(gemm_model, 1)},
                     "memory_ms": {"gc": round(tables[0]["memory"], 1),
                                   "nogc": round(tables[1]["memory"], 1),
                                   "recompute": round(memory, 1),
                                   "model": round(memory_model, 1)}})
    return rows


def main(argv: list[str]) -> int:
    files = [Path(a) for a in argv] or sorted(RUNS.glob("run*/run*-gctwin*.jsonl"))
    # each file one machine start: a checkpointed run paired with its twin's of the same file
    starts = [[json.loads(x) for x in f.read_text().splitlines() if x.strip()] for f in files]
    rows = [r for lines in starts for r in pairs(lines)]
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
    ops = [r for lines in starts for r in op_pairs(lines)]
    if ops:
        print()
        print("The recompute by class, device ms per update (op tables of the pair, one update "
              "each; GEMMs with attention, the memory-bound rest):")
        print(tabulate(
            [[r["job"], r["split"], r["gpu"],
              *(x for c in ("gemm_ms", "memory_ms") for x in (
                  r[c]["nogc"], r[c]["recompute"], r[c]["model"],
                  f"{r[c]['model'] / r[c]['recompute'] - 1:+.1%}"))]
             for r in ops],
            headers=["workload", "split", "GPU", "GEMM no GC", "recompute", "model's", "error",
                     "memory no GC", "recompute", "model's", "error"]))
    shown = [str(f.resolve().relative_to(ROOT)) if f.resolve().is_relative_to(ROOT) else f.name
             for f in files]
    OUT.write_text(json.dumps({"files": shown,
                               "pairs": rows, "op_pairs": ops}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
