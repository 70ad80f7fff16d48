"""The attention core's rate on the traced GPUs: its FLOPs against its measured device time.

The time model charged the causal attention core's FLOPs (``QK^T`` and ``AV``, forward,
recompute, backward) at the frozen GEMMs' efficiency. The kernels (cuDNN's and
FlashAttention's fused SDPA) run far below it, and further below at short sequences, small
heads and few sequences: each query block does work in proportion to ``s x head_dim`` (one
row of keys per head dimension, the causal mask idling part of each block), and the blocks
to spread over the SMs grow with the query rows times heads, ``m x s x heads``. Every traced
split in the repository gives one measurement of the attention class's
device time per micro-step:

* the H200 sweep's profiled splits (``bench/results/h200-sweep/``, calibrate's trace),
* the traced user runs (``user_script.py --trace``, H200 and H100),
* the op tables (``user_script.py --op-table``, one update of ``k`` micro-steps; the ATen
  attention ops' self device time),

and the model's attention FLOPs per micro-step of that split (``time_model``'s count). This
script fits ``rate / sustained matmul rate = e_max * x / (x + x0) * y / (y + y0)`` with
``x = s x head_dim`` and ``y = m x s x heads`` (least squares in log, each GPU, workload and
split weighted once; ``y0`` is for the traced GPUs' 132 SMs and scales with a GPU's SM count,
as the GEMMs' shape constant does), prints the rows and the fit, and writes
``bench/results/attention_rate.json``. The three constants are ``TimeModelParams``'
``attention_best_efficiency``, ``attention_shape_x0`` and ``attention_rows_y0``.

    python bench/attention_rate.py
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from tabulate import tabulate

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
OUT = ROOT / "bench" / "results" / "attention_rate.json"


def attention_flops_per_microstep(arch: Any, setup: Any, m: int) -> float:
    """The model's attention-core FLOPs of one micro-step of ``m`` sequences."""
    from gacost.advisor import time_model

    return float(time_model.attention_flops_per_token(arch, setup) * m * setup.sequence_length)


def rows() -> list[dict[str, Any]]:
    """One row per traced split: GPU, workload, split, s, head_dim, attention ms per
    micro-step, the model's FLOPs, and the achieved fraction of the GPU's matmul rate."""
    from crossgpu_traces import job_arch, measured_runs, op_table_ms

    from gacost.advisor import build_sweep_profiles, predictor
    from gacost.base import gpu_table, models

    specs = gpu_table.gpu_specs()
    out: list[dict[str, Any]] = []

    def add(gpu: str, name: str, arch: Any, setup: Any, m: int, ms: float, source: str) -> None:
        spec = specs[gpu]
        if ms <= 0 or not spec.sustained_tflops:
            return
        flops = attention_flops_per_microstep(arch, setup, m)
        rate = flops / (ms * 1e-3) / (spec.sustained_tflops * 1e12)
        out.append({"gpu": gpu, "workload": name, "m": m, "source": source,
                    "sequence_length": setup.sequence_length, "head_dim": arch.head_dim,
                    "x": setup.sequence_length * arch.head_dim,
                    "y": m * setup.sequence_length * arch.num_attention_heads,
                    "attention_ms": round(ms, 3),
                    "tflops": round(flops / (ms * 1e-3) / 1e12, 1),
                    "fraction": round(rate, 4)})

    for p, d in build_sweep_profiles.sweep_profiles(ROOT / "bench" / "results" / "h200-sweep"):
        name, cfg = models.load_model_config(p.workload.model)
        arch = models.model_arch(name, cfg)
        setup = predictor.setup_for(p.workload, p.software)
        for s in d["splits"]:
            prof = s.get("profile")
            if prof:
                add("H200-SXM", d["workload"]["name"], arch, setup, s["micro_batch"],
                    prof["gpu_ms_per_microstep"].get("attention", 0.0), "sweep trace")
    for gpu, run in measured_runs():
        arch, setup = job_arch(run["job"], run.get("model_type") or "")
        name = f"{Path(run['job']).stem} {arch.model_type}"
        trace = run.get("trace")
        if trace:
            add(gpu, name, arch, setup, run["micro_batch"],
                trace["gpu_ms_per_microstep_by_class"].get("attention", 0.0), "user trace")
        if run.get("op_table"):
            add(gpu, name, arch, setup, run["micro_batch"],
                op_table_ms(run)["attention"] / run["grad_accum"], "op table")
    return out


def fit(data: list[dict[str, Any]]) -> dict[str, float]:
    """``e_max``, ``x0`` and ``y0`` of ``fraction = e_max x / (x + x0) y / (y + y0)``: least
    squares of the log fraction over a grid of ``x0`` and ``y0`` (``e_max`` in closed form at
    each), every (GPU, workload, x, y) the geometric mean of its rows, so a split traced many
    times weighs as one."""
    groups: dict[tuple[str, str, int, int], list[float]] = defaultdict(list)
    for r in data:
        groups[r["gpu"], r["workload"].split()[0], r["x"], r["y"]].append(
            math.log(r["fraction"]))
    xs = np.array([k[2] for k in groups], dtype=float)[:, None, None]
    ys = np.array([k[3] for k in groups], dtype=float)[:, None, None]
    logs = np.array([statistics.fmean(v) for v in groups.values()])[:, None, None]
    grid = np.exp(np.linspace(math.log(1e3), math.log(1e7), 241))
    shape = np.log(xs / (xs + grid[None, :, None])) + np.log(ys / (ys + grid[None, None, :]))
    log_e = np.mean(logs - shape, axis=0)
    sse = np.sum((logs - shape - log_e) ** 2, axis=0)
    i, j = np.unravel_index(int(np.argmin(sse)), sse.shape)
    return {"attention_best_efficiency": math.exp(float(log_e[i, j])),
            "attention_shape_x0": float(grid[i]), "attention_rows_y0": float(grid[j]),
            "log_rms": math.sqrt(float(sse[i, j]) / len(groups)), "points": len(groups)}


def fitted(terms: dict[str, float], x: float, y: float) -> float:
    """The fitted fraction at ``x`` and ``y``."""
    x0, y0 = terms["attention_shape_x0"], terms["attention_rows_y0"]
    return terms["attention_best_efficiency"] * x / (x + x0) * y / (y + y0)


def main() -> int:
    data = rows()
    terms = fit(data)
    table = sorted(data, key=lambda r: (r["gpu"], r["x"], r["workload"], r["m"]))
    print(tabulate([[r["gpu"], r["workload"][:44], r["m"], r["source"], r["sequence_length"],
                     r["head_dim"], r["attention_ms"], r["tflops"], f"{r['fraction']:.3f}",
                     f"{fitted(terms, r['x'], r['y']):.3f}"] for r in table],
                   headers=["GPU", "workload", "m", "source", "s", "head dim", "attention ms",
                            "TFLOP/s", "of matmul", "fitted"]))
    print(f"\nfit over {terms['points']} (GPU, workload, split) points: e_max "
          f"{terms['attention_best_efficiency']:.3f}, x0 {terms['attention_shape_x0']:.0f} "
          f"(s x head_dim), y0 {terms['attention_rows_y0']:.0f} (m x s x heads), log rms "
          f"{terms['log_rms']:.3f}")
    from gacost.advisor.time_model import DEFAULT_PARAMS as D

    print(f"shipped: attention_best_efficiency {D.attention_best_efficiency:g}, "
          f"attention_shape_x0 {D.attention_shape_x0:g}, attention_rows_y0 "
          f"{D.attention_rows_y0:g}")
    OUT.write_text(json.dumps({"fit": terms, "rows": table}, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
