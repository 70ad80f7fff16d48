"""What-if scan of the time model's L2 residency term, without changing the shipped model.

The time model takes the reads a memory-bound kernel makes of what the kernel before wrote
(``l2_read_share`` S of its bytes) from L2 where its tensors fit (``time_model.dram_share``:
hit = L2 / footprint, footprint = the kernel's own tensors). This scan multiplies that
footprint by C (a working set of C such tensors) and sets S, re-derives the H200 trace terms
for each (C, S) exactly as ``bench/model_v2.py`` does (the last rows also cap every GPU's
stream rate at a ceiling in bytes per clock per SM times its SMs and boost clock: a what-if
of a slower H200 still, 3.1-3.4 TB/s), and reports:

* the fit of the memory-bound time of the fitted H200 traced splits, and of the held-out
  traced splits (not fitted);
* leave one GPU out for the published L4 and T4 rows (``bench/leave_one_gpu_out.py``);
* run 18's H100 op tables (``bench/results/calibrate-vs-user/run18/``): the memory-bound
  kernels' measured ms per update against the model's for the H100 and for the H200, and the
  error of the whole update predicted for the H100;
* run 19's traced H100 splits (``crossgpu_traces.trace_pairs``): the model's memory-bound ms
  per micro-step against the measured on the H100 and on the H200, and the H100/H200 ratio.

The model's terms are swapped in for each row (the module-level ``dram_share`` and
``gpu_rates`` and the trace terms of ``DEFAULT_PARAMS``) and restored at the end. Prints a
table and writes ``bench/results/l2_scan.json``.

    python bench/l2_scan.py
"""

from __future__ import annotations

import contextlib
import json
import math
import statistics
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent))

import crossgpu_traces  # noqa: E402
import leave_one_gpu_out  # noqa: E402
import model_v2  # noqa: E402

from gacost.advisor import predictor, time_model  # noqa: E402
from gacost.base import gpu_table  # noqa: E402
from gacost.calibration.trace import classify  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RUN18 = ROOT / "bench" / "results" / "calibrate-vs-user" / "run18" / "gpuside-ops.jsonl"
OUT = ROOT / "bench" / "results" / "l2_scan.json"
GRID = ((1, 0.5), (1, 0.0), (2, 0.5), (4, 0.5), (8, 0.5), (2, 0.3), (4, 0.3), (4, 0.8),
        (1, 0.5, 13.0), (1, 0.5, 12.0))
TRACE_TERMS = ("act_bytes_scale", "act_bytes_lora_scale", "gemm_shape_w0")
HOST_SIDE = ("aten::", "cuda", "cuLaunch", "autograd", "Optimizer", "Command", "ProfilerStep",
             "enumerate", "torch")


@contextlib.contextmanager
def l2_variant(factor: float, share: float, ceiling: float = 0.0) -> Iterator[None]:
    """The model with footprint x ``factor`` and read share ``share`` in ``dram_share``, and
    the memory-bound kernels' stream rate capped at ``ceiling`` bytes per clock per SM (0: no
    cap) times the GPU's SMs and boost clock."""
    shipped = time_model.dram_share
    shipped_rates = time_model.gpu_rates
    params = time_model.DEFAULT_PARAMS
    saved = {k: getattr(params, k) for k in TRACE_TERMS}

    def dram_share(rates: time_model.GpuRates, footprint: float,
                   terms: time_model.TimeModelParams = params) -> float:
        stream = time_model.stream_rate(rates, terms)
        if rates.l2_bytes <= 0 or rates.l2_bandwidth <= stream or footprint <= 0:
            return 1.0
        hit = min(1.0, rates.l2_bytes / (factor * footprint))
        return 1.0 - share * hit * (1.0 - stream / rates.l2_bandwidth)

    def gpu_rates(gpu: Any, precision: str,
                  terms: time_model.TimeModelParams = params) -> time_model.GpuRates | None:
        rates = shipped_rates(gpu, precision, terms)
        if rates is None or not ceiling or not gpu.sm_count or not gpu.boost_clock_mhz:
            return rates
        cap = ceiling * gpu.sm_count * gpu.boost_clock_mhz * 1e6
        return replace(rates, stream_bandwidth=min(rates.stream_bandwidth, cap))

    time_model.dram_share = dram_share
    time_model.gpu_rates = gpu_rates
    model_v2._h200_rates.cache_clear()
    try:
        yield
    finally:
        time_model.dram_share = shipped
        time_model.gpu_rates = shipped_rates
        model_v2._h200_rates.cache_clear()
        for k, v in saved.items():
            object.__setattr__(params, k, v)
        time_model.work_costs.cache_clear()


def trace_errors(rows: list[Any], terms: dict[str, float]) -> list[float]:
    """Relative errors of the memory-bound time of traced ``rows`` under ``terms``."""
    return [(r.x[0] * terms["gpu_s_per_launch"] * 1e6 + r.x[1] * terms["act_bytes_scale"]
             + r.x[2] * terms["act_bytes_lora_scale"]) / r.other_ms - 1 for r in rows]


def h100_rows(model: predictor.FittedModel) -> list[dict[str, Any]]:
    """Run 18's splits: measured memory-bound ms per update, the model's on both GPUs."""
    specs = gpu_table.gpu_specs()
    out = []
    for line in RUN18.read_text().splitlines():
        run = json.loads(line)
        measured = sum(o["device_us"] / 1e3 for o in run["op_table"]
                       if o["device_us"] and not o["op"].startswith(HOST_SIDE)
                       and classify(o["op"]) in ("other", "memcpy"))
        build = run["model_type"]
        arch, setup = crossgpu_traces.job_arch(run["job"], build)
        m, k = run["micro_batch"], run["grad_accum"]
        modelled = {gpu: k * crossgpu_traces.model_classes(run, build, gpu, model)["other_ms"]
                    for gpu in ("H100-SXM", "H200-SXM")}
        band = model.seconds(arch, setup, specs["H100-SXM"], m, k)
        assert band is not None
        out.append({"split": f"{Path(run['job']).stem[:3]} {run['split']}",
                    "measured_ms": measured, "h100_ms": modelled["H100-SXM"],
                    "h200_ms": modelled["H200-SXM"],
                    "update_error": band.value / run["median_s"] - 1})
    return out


def run19_errors(model: predictor.FittedModel) -> dict[str, Any]:
    """Run 19's traced H100 splits: the model's memory-bound ms per micro-step against the
    measured, on the H100 and on the H200 twin, and the H100/H200 ratio (geometric means)."""
    pairs = crossgpu_traces.trace_pairs(model)
    def err(r: dict[str, Any], gpu: str) -> float:
        return float(r["model"][gpu]["other_ms"] / r["measured"][gpu]["other_ms"] - 1)
    return {"h100": [err(r, "H100-SXM") for r in pairs],
            "h200": [err(r, crossgpu_traces.H200) for r in pairs],
            "ratio_model": math.exp(statistics.fmean(
                math.log(r["other_ratio_model"]) for r in pairs)),
            "ratio_measured": math.exp(statistics.fmean(
                math.log(r["other_ratio"]) for r in pairs))}


def scan_row(factor: float, share: float, ceiling: float = 0.0) -> dict[str, Any]:
    with l2_variant(factor, share, ceiling):
        rows = model_v2.trace_rows()
        terms = model_v2.fit_gpu_terms(rows)
        fitted = trace_errors([r for r in rows if r.plain], terms)
        held = trace_errors(model_v2.user_trace_rows(held_out=True), terms)
        for k in TRACE_TERMS:
            object.__setattr__(time_model.DEFAULT_PARAMS, k, terms[k])
        time_model.work_costs.cache_clear()
        profiles = predictor.reference_profiles()
        logo = {}
        for gpu in leave_one_gpu_out.HELD:
            row = next(p for p in profiles if p.gpu == gpu)
            model = predictor.fitted_model([p for p in profiles if p.gpu != gpu])
            pred = leave_one_gpu_out.predict(model, row)
            for s in row.splits:
                split = f"{s.micro_batch}x{s.grad_accum}"
                logo[f"{gpu} {split}"] = pred[split] / float(s.seconds_per_update or 1) - 1
        fitted_model = predictor.fitted_model(profiles)
        h100 = h100_rows(fitted_model)
        run19 = run19_errors(fitted_model)
    return {"footprint_factor": factor, "l2_read_share": share, "ceiling": ceiling,
            "act_bytes_scale": terms["act_bytes_scale"],
            "act_bytes_lora_scale": terms["act_bytes_lora_scale"],
            "fitted_median": statistics.median(map(abs, fitted)),
            "fitted_worst": max(map(abs, fitted)),
            "held_median": statistics.median(map(abs, held)), "held_worst": max(map(abs, held)),
            "leave_one_gpu_out": logo, "h100": h100, "run19": run19}


def main() -> None:
    results = [scan_row(*row) for row in GRID]
    table = []
    for r in results:
        h, t = r["h100"], r["run19"]
        table.append([
            r["footprint_factor"], r["l2_read_share"], r["ceiling"] or "-",
            f"{r['act_bytes_scale']:.2f}",
            f"{r['fitted_median']:.1%} / {r['fitted_worst']:.1%}",
            f"{r['held_median']:.1%} / {r['held_worst']:.1%}",
            " ".join(f"{v:+.0%}" for v in r["leave_one_gpu_out"].values()),
            " ".join(f"{x['h100_ms'] / x['measured_ms'] - 1:+.0%}" for x in h),
            " ".join(f"{x['update_error']:+.0%}" for x in h),
            f"{statistics.median(t['h100']):+.0%} ({min(t['h100']):+.0%}..{max(t['h100']):+.0%})"
            f" / {statistics.median(t['h200']):+.0%}",
            f"{t['ratio_model']:.2f} / {t['ratio_measured']:.2f}"])
    print(tabulate(table, headers=[
        "C", "S", "ceiling", "layer scale", "H200 traces fitted: median / worst", "held-out traces",
        "L4 1x4 2x2 4x1, T4 1x4 2x2 4x1", "H100 memory-bound (run 18)", "H100 update",
        "run 19 H100 / H200 memory-bound", "H100/H200 model / measured"]))
    print("run 18 splits, measured memory-bound ms per update (H100): " + ", ".join(
        f"{x['split']} {x['measured_ms']:.0f}" for x in results[0]["h100"]))
    OUT.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
