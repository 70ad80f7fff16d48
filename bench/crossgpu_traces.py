"""The same traced split on two GPUs: how each kernel class's time moves between them.

Pairs every traced user run (bench/user_script.py --trace, bench/results/calibrate-vs-user/
run*/*.jsonl) on a GPU other than the H200 with the H200 trace of the same job, split and
model build (runs 5-7; ``bash bench/calibrate_rounds_h200.sh crossgpu1`` and ``crossgpu2``
ran them again), and sets the measured ratio of each class's GPU time per micro-step beside
the time model's: the memory-bound class ("other" + copies) against the model's activation
bytes plus its per-kernel floor, the GEMM class against its FLOPs at the GPU's rate. Then
the op tables (``--op-table 1 [--op-shapes]``; runs 18 and 21 on H100s, 6, 7 and 19 on
H200s) of the same split on two GPUs, op by op: each ATen op at each input shape, its self
device time on both, in three classes (GEMMs, attention, the rest: memory-bound), and at
k = 1 the memory-bound ms beside the model's. Prints the tables and writes
``crossgpu_traces.json`` in bench/results/.

    python bench/crossgpu_traces.py
"""

from __future__ import annotations

import functools
import json
import math
import statistics
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from gacost.advisor import predictor, time_model
from gacost.base import gpu_table
from gacost.base.gpu_names import canonical_gpu
from gacost.base.job import load_job
from gacost.base.records import ModelArch
from gacost.base.split import Split

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "bench" / "results" / "calibrate-vs-user"
OUT = ROOT / "bench" / "results" / "crossgpu_traces.json"
H200 = "H200-SXM"
T = TypeVar("T")


def user_run_lines(nested: bool = False) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Each user run of the result files (``run*/*.jsonl``; ``nested``: their subfolders'
    too, as ``run21/fp16/``) with the file it is in, in path order."""
    patterns = ("run*/*.jsonl", "run*/*/*.jsonl") if nested else ("run*/*.jsonl",)
    for path in sorted(p for pattern in patterns for p in TRACES.glob(pattern)):
        for line in path.read_text().splitlines():
            if line.strip():
                yield path, json.loads(line)


@functools.cache
def measured_runs() -> tuple[tuple[str, dict[str, Any]], ...]:
    """Every user run of the result files with a known GPU: (canonical GPU, its JSON)."""
    out = []
    for _, run in user_run_lines():
        gpu = canonical_gpu(run.get("gpu") or "")
        if gpu is not None:
            out.append((gpu, run))
    return tuple(out)


@functools.cache
def job_arch(job: str, build: str = "") -> tuple[ModelArch, time_model.TrainSetup]:
    """The architecture (as model build ``build`` where given) and setup of a job file."""
    spec = load_job(ROOT / job)
    arch = predictor.arch_for(spec.model)
    assert arch is not None
    if build and build != arch.model_type:
        arch = replace(arch, model_type=build)
    return arch, predictor.setup_for(spec.workload(arch.name))


def traced_runs() -> dict[tuple[str, str, str, str], dict[str, Any]]:
    """(GPU, job, split, model build) -> the last traced run of it."""
    runs: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for gpu, run in measured_runs():
        if run.get("trace"):
            build = run.get("model_type") or job_arch(run["job"])[0].model_type
            runs[gpu, run["job"], run["split"], build] = run
    return runs


def model_classes(run: dict[str, Any], build: str, gpu: str,
                  model: predictor.FittedModel | None = None) -> dict[str, float]:
    """The time model's (``model``, else the reference fit) memory-bound and GEMM ms per
    micro-step of ``run`` on ``gpu``."""
    arch, setup = job_arch(run["job"], build)
    costs = time_model.work_costs(arch, setup)
    rates = time_model.gpu_rates(gpu_table.gpu_specs()[gpu], costs.compute_precision)
    assert rates is not None
    params = (model or predictor.reference_model()).params(gpu)
    m = run["micro_batch"]
    part = time_model.micro_step(costs, rates, params, m)
    tokens = m * costs.sequence_length
    other = time_model.activation_seconds(costs, rates, tokens) + part.fixed
    return {"other_ms": other * 1e3, "gemm_ms": part.compute * 1e3}


GEMM_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::_scaled_mm")


def op_class(op: str) -> str:
    """GEMM, attention or memory-bound, by ATen op name."""
    if op in GEMM_OPS:
        return "gemm"
    if "attention" in op or "flash" in op:
        return "attention"
    return "memory"


PROFILER_ROWS = ("Activity Buffer", "Command Buffer")


def op_table_ms(run: dict[str, Any]) -> dict[str, float]:
    """A run's op table (``user_script.py --op-table``, one update) as device ms by class:
    its ATen rows' self device time in three (:func:`op_class`), and ``other``, the self
    device time of the Python autograd functions' rows (kernels no ATen op launched: TRL's
    chunked loss). Kernel-name rows (the same kernels again), annotations such as
    ``Optimizer.step#...``, runtime calls and the profiler's own rows are not counted."""
    out = dict.fromkeys(("gemm", "attention", "memory", "other"), 0.0)
    for r in run.get("op_table") or []:
        op = r["op"]
        if r.get("device_us", 0) <= 0:
            continue
        if op.startswith("aten::"):
            out[op_class(op)] += r["device_us"] / 1e3
        elif (r.get("self_cpu_us", 0) > 0 and "#" not in op and not op.startswith("cu")
              and not op.startswith(PROFILER_ROWS)):
            out["other"] += r["device_us"] / 1e3
    return out


def op_tables() -> dict[tuple[str, str, str, bool], dict[tuple[str, str], float]]:
    """(GPU, job, split and model build, shapes recorded) -> {(ATen op, input shapes or ""):
    self device ms per update} (the op tables are per update already)."""
    tables: dict[tuple[str, str, str, bool], dict[tuple[str, str], float]] = {}
    for gpu, run in measured_runs():
        rows = run.get("op_table") or []
        if not rows:
            continue
        shaped = any("shapes" in r for r in rows)
        build = run.get("model_type") or job_arch(run["job"])[0].model_type
        tables[gpu, run["job"], f"{run['split']} {build}", shaped] = {
            (r["op"], r.get("shapes", "")): r["device_us"] / 1e3 for r in rows
            if r["op"].startswith("aten::") and r.get("device_us", 0) > 0}
    return tables


def h200_twins(table: dict[tuple[str, str, str, Any], T]
               ) -> Iterator[tuple[tuple[str, str, str, Any], T, T]]:
    """(key, entry, the H200's entry under the same key) for each entry of ``table`` (keyed
    by GPU first) on a GPU other than the H200 that the H200 has a twin of, in key order."""
    for key, mine in sorted(table.items()):
        twin = table.get((H200, *key[1:]))
        if key[0] != H200 and twin is not None:
            yield key, mine, twin


def op_pairs() -> list[dict[str, Any]]:
    """Each split with op tables on the H200 and another GPU: class sums and the top ops."""
    out = []
    for (gpu, job, split, _), ops, twin in h200_twins(op_tables()):
        keys = sorted(set(ops) | set(twin), key=lambda k: -(ops.get(k, 0) + twin.get(k, 0)))
        classes: dict[str, list[float]] = {}
        for k in keys:
            c = classes.setdefault(op_class(k[0]), [0.0, 0.0])
            c[0] += ops.get(k, 0.0)
            c[1] += twin.get(k, 0.0)
        top = [{"op": k[0], "shapes": k[1], "ms": ops.get(k, 0.0), "h200_ms": twin.get(k, 0.0)}
               for k in keys[:25]]
        entry = {"gpu": gpu, "job": Path(job).stem, "split": split,
                 "classes": {c: {"ms": v[0], "h200_ms": v[1]} for c, v in classes.items()},
                 "top": top}
        m, accum = Split.parse(split.split()[0])
        if accum == 1:  # one micro-step per update: the model's memory-bound ms beside the
            # table's, the optimizer's ops (in optimizer_seconds) taken out of the table's
            run, build = {"job": job, "micro_batch": m}, split.split()[1]
            entry["memory_without_optimizer"] = {
                name: {"ms": sum(v for (op, _), v in t.items() if op_class(op) == "memory"
                                 and "adam" not in op),
                       "model_ms": model_classes(run, build, name)["other_ms"]}
                for name, t in ((gpu, ops), (H200, twin))}
        out.append(entry)
    return out


def print_op_pairs(pairs: list[dict[str, Any]]) -> None:
    for p in pairs:
        cls = "  ".join(f"{c} {v['ms']:.0f}/{v['h200_ms']:.0f} ms"
                        for c, v in sorted(p["classes"].items()))
        print(f"\n{p['gpu']} vs H200, {p['job']} {p['split']}: {cls}")
        if "memory_without_optimizer" in p:
            print("  memory-bound without the optimizer, measured / model: " + "  ".join(
                f"{name} {v['ms']:.0f} / {v['model_ms']:.0f} ms "
                f"({v['model_ms'] / v['ms'] - 1:+.0%})"
                for name, v in p["memory_without_optimizer"].items()))
        for t in p["top"]:
            ratio = t["ms"] / t["h200_ms"] if t["h200_ms"] else math.nan
            print(f"  {t['op'][:28]:28s} {t['shapes'][:60]:60s} {t['ms']:7.1f} "
                  f"{t['h200_ms']:7.1f} {ratio:5.2f}")


def trace_pairs(model: predictor.FittedModel | None = None) -> list[dict[str, Any]]:
    """Each traced split on a GPU other than the H200 beside the H200's: class ms measured on
    both and the time model's (``model``, else the reference fit), and their ratios."""
    rows = []
    for (gpu, job, split, build), run, twin in h200_twins(traced_runs()):
        meas = {}
        for name, r in ((gpu, run), (H200, twin)):
            ms = r["trace"]["gpu_ms_per_microstep_by_class"]
            meas[name] = {"other_ms": ms["other"] + ms["memcpy"], "gemm_ms": ms["gemm"],
                          "gemm_tflops": r["trace"]["gemm_tflops"], "median_s": r["median_s"]}
        modelled = {name: model_classes(run, build, name, model) for name in (gpu, H200)}
        rows.append({
            "gpu": gpu, "job": Path(job).stem, "split": split, "build": build,
            "measured": meas, "model": modelled,
            "other_ratio": meas[gpu]["other_ms"] / meas[H200]["other_ms"],
            "other_ratio_model": modelled[gpu]["other_ms"] / modelled[H200]["other_ms"],
            "gemm_ratio": meas[gpu]["gemm_ms"] / meas[H200]["gemm_ms"],
            "update_ratio": meas[gpu]["median_s"] / meas[H200]["median_s"],
        })
    return rows


def marginal_ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each job traced at two micro-batch sizes on both GPUs: the memory-bound ms that one
    more sequence per micro-step adds (the slope between the two splits, what scales with
    the bytes) and the ms at no sequence (the intercept: per-kernel floors), per GPU."""
    out = []
    by_job: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        by_job.setdefault((r["gpu"], r["job"], r["build"]), []).append(r)
    for (gpu, job, build), pair in sorted(by_job.items()):
        if len(pair) < 2:
            continue
        ordered = sorted(pair, key=lambda r: Split.parse(r["split"]).micro_batch)
        lo, hi = ordered[0], ordered[-1]
        m_lo, m_hi = (Split.parse(r["split"]).micro_batch for r in (lo, hi))
        fit = {}
        for name in (gpu, H200):
            a, b = lo["measured"][name]["other_ms"], hi["measured"][name]["other_ms"]
            slope = (b - a) / (m_hi - m_lo)
            fit[name] = {"ms_per_sequence": slope, "intercept_ms": a - slope * m_lo}
        model = {name: (hi["model"][name]["other_ms"] - lo["model"][name]["other_ms"])
                 / (m_hi - m_lo) for name in (gpu, H200)}
        out.append({"gpu": gpu, "job": job, "build": build, "splits": [lo["split"], hi["split"]],
                    "measured": fit,
                    "slope_ratio": fit[gpu]["ms_per_sequence"] / fit[H200]["ms_per_sequence"],
                    "slope_ratio_model": model[gpu] / model[H200]})
    return out


def main() -> None:
    rows = trace_pairs()
    print(f"{'GPU':9s} {'job':38s} {'split':5s} {'build':6s} {'other ms':>15s} "
          f"{'ratio':>6s} {'model':>6s} {'GEMM TFLOP/s':>13s} {'update':>7s}")
    for r in rows:
        m, g = r["measured"], r["gpu"]
        print(f"{g:9s} {r['job'][:38]:38s} {r['split']:5s} {r['build']:6s} "
              f"{m[g]['other_ms']:7.1f}/{m[H200]['other_ms']:7.1f} {r['other_ratio']:6.2f} "
              f"{r['other_ratio_model']:6.2f} {m[g]['gemm_tflops']:6.0f}/"
              f"{m[H200]['gemm_tflops']:<6.0f} {r['update_ratio']:7.2f}")
    summary = {}
    for gpu in sorted({r["gpu"] for r in rows}):
        mine = [r for r in rows if r["gpu"] == gpu]
        summary[gpu] = {
            "pairs": len(mine),
            "other_ratio_geomean": math.exp(statistics.fmean(
                math.log(r["other_ratio"]) for r in mine)),
            "other_ratio_model_geomean": math.exp(statistics.fmean(
                math.log(r["other_ratio_model"]) for r in mine)),
        }
        print(f"{gpu}: {len(mine)} pairs, memory-bound time x"
              f"{summary[gpu]['other_ratio_geomean']:.2f} of the H200's measured, "
              f"x{summary[gpu]['other_ratio_model_geomean']:.2f} modelled (geometric means)")
    margins = marginal_ratios(rows)
    print("\nOne more sequence per micro-step: memory-bound ms on each GPU, the ratio measured "
          "and modelled; ms at no sequence")
    for r in margins:
        g, h = r["measured"][r["gpu"]], r["measured"][H200]
        print(f"{r['gpu']:9s} {r['job'][:38]:38s} {'-'.join(r['splits']):9s} {r['build']:6s} "
              f"{g['ms_per_sequence']:6.2f}/{h['ms_per_sequence']:6.2f} "
              f"{r['slope_ratio']:5.2f} {r['slope_ratio_model']:5.2f}   "
              f"{g['intercept_ms']:5.1f}/{h['intercept_ms']:5.1f}")
    pairs = op_pairs()
    print_op_pairs(pairs)
    OUT.write_text(json.dumps({"rows": rows, "summary": summary, "marginal": margins,
                               "op_pairs": pairs}, indent=1) + "\n")


if __name__ == "__main__":
    main()
