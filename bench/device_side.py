"""Every op table against the time model's GPU side: is a split's error on the device or the host?

An op table (``bench/user_script.py --op-table 1``) holds one profiled update's self device
time per ATen op. Summed in three classes (GEMMs, the attention core, the memory-bound rest:
``crossgpu_traces.op_table_ms``) it is the GPU's work of that update, measured; the model's is
its micro-step parts summed over the update (GEMM and attention compute, weight and
activation traffic, the per-launch floor) plus the optimizer's state traffic, at the
reference fit's central parameters for that GPU. What the update took beyond its device time
(the timed median less the device sum) is time the GPU waited on the host; the model's is
its update less its device time (the smooth maximum's excess and the optimizer's host part).

An op table keeps only the rows that take the most time (40 by device time, 120 where it
records shapes), so its sums are lower bounds. The classes come from its ATen rows (each
op's self device time: the kernels it launched itself) and a fourth, ``other``: the self
device time of the rows of autograd functions written in Python, whose kernels no ATen op
launched (the Triton kernels of TRL's chunked loss, ``ChunkedLogProbFunction``: the
``lm_head`` GEMMs and the log-softmax over the vocabulary). Not counted: the kernel rows
(each kernel again, by name, and cut harder by the 120-row limit), annotations that span
kernels counted already (``Optimizer.step#...``), runtime calls and the profiler's own rows
(``Command Buffer Full``, ``Activity Buffer Request``).

So each split's error splits in two: ``device`` (the model's device time less the measured,
over the measured update) and ``exposed host`` (the same for the waiting), which add up to
the update's error. Prints the table and writes ``bench/results/device_side.json``.

    python bench/device_side.py
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

from crossgpu_traces import job_arch, measured_runs, op_table_ms
from heldout_sets import RESULTS
from tabulate import tabulate

from gacost.advisor import predictor, time_model
from gacost.base import gpu_table

OUT = RESULTS / "device_side.json"
CLASSES = ("gemm", "attention", "memory")


def model_ms(job: str, build: str, split: str, gpu: str) -> dict[str, float]:
    """The model's device ms of one update by the same classes, and its update in ms."""
    arch, setup = job_arch(job, build)
    model = predictor.reference_model()
    costs = time_model.work_costs(arch, setup, model.terms)
    rates = time_model.gpu_rates(gpu_table.gpu_specs()[gpu], costs.compute_precision,
                                 model.terms)
    assert rates is not None, gpu
    params = model.params(gpu)
    m, k = (int(x) for x in split.split("x"))
    step = time_model.micro_step(costs, rates, params, m)
    optimizer_traffic = time_model.optimizer_traffic_seconds(costs, rates)
    return {"gemm": k * (step.compute - step.attention) * 1e3,
            "attention": k * step.attention * 1e3,
            "memory": (k * (step.traffic + step.fixed) + optimizer_traffic) * 1e3,
            "host": k * step.host * 1e3,
            "update": time_model.update_seconds(costs, rates, params, m, k) * 1e3}


def rows() -> list[dict[str, Any]]:
    """One row per op table: measured and modelled ms, and the update's error split in two."""
    out = []
    for gpu, run in measured_runs():
        measured = op_table_ms(run) if run.get("op_table") else {}
        if not any(measured.values()):  # no table, or one without device times (run 6)
            continue
        build = run.get("model_type") or ""
        model = model_ms(run["job"], build, run["split"], gpu)
        update = run["median_s"] * 1e3
        device = sum(measured.values())
        device_model = sum(model[c] for c in CLASSES)
        out.append({
            "job": Path(run["job"]).stem, "build": build, "split": run["split"], "gpu": gpu,
            "measured_ms": {c: round(v, 1) for c, v in measured.items()},
            "shapes": any("shapes" in r for r in run["op_table"]),
            "model_ms": {c: round(model[c], 1) for c in CLASSES},
            "device_ms": round(device, 1), "device_model_ms": round(device_model, 1),
            "device_error": round(device_model / device - 1, 4),
            "update_ms": round(update, 1), "update_model_ms": round(model["update"], 1),
            "update_error": round(model["update"] / update - 1, 4),
            "exposed_host_ms": round(update - device, 1),
            "exposed_host_model_ms": round(model["update"] - device_model, 1),
            "model_host_ms": round(model["host"], 1),
            # the update's error as the sum of a device part and a host part
            "from_device": round((device_model - device) / update, 4),
            "from_host": round((model["update"] - device_model - (update - device)) / update, 4),
        })
    return out


def main(argv: list[str]) -> int:
    table = rows()
    print(tabulate(
        [[r["job"][:40], r["build"], r["split"], r["gpu"], 120 if r["shapes"] else 40,
          "/".join(f"{r['measured_ms'][c]:.0f}" for c in (*CLASSES, "other")),
          "/".join(f"{r['model_ms'][c]:.0f}" for c in CLASSES),
          f"{100 * r['device_error']:+.1f}%", f"{r['update_ms']:.0f}",
          f"{100 * r['update_error']:+.1f}%", f"{r['exposed_host_ms']:.0f}",
          f"{r['exposed_host_model_ms']:.0f}", f"{100 * r['from_device']:+.1f}%",
          f"{100 * r['from_host']:+.1f}%"] for r in table],
        headers=["job", "build", "m x k", "GPU", "rows", "device ms gemm/attn/mem/other",
                 "model", "device err", "update ms", "update err", "host wait ms", "model",
                 "err from device", "from host"]))
    summary = {"all": summarise(table),
               "shaped": summarise([r for r in table if r["shapes"]])}
    for name, s in summary.items():
        print(f"\n{name}: {s['op_tables']} op tables: the device sum within "
              f"{100 * s['device_error_median_abs']:.1f}% at the median (signed "
              f"{100 * s['device_error_median']:+.1f}%, worst "
              f"{100 * s['device_error_worst_abs']:.1f}%); of the update's error (median "
              f"{100 * s['update_error_median_abs']:.1f}%), the device part is "
              f"{100 * s['from_device_median_abs']:.1f}% and the host's "
              f"{100 * s['from_host_median_abs']:.1f}% at the median (signed "
              f"{100 * s['from_host_median']:+.1f}%); the host part is the larger in "
              f"{s['host_larger']} of {s['op_tables']}")
    OUT.write_text(json.dumps({"summary": summary, "rows": table}, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(RESULTS.parent.parent)}")
    return 0


def summarise(table: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians and counts over some of the rows."""
    device = [abs(r["device_error"]) for r in table]
    from_device = [abs(r["from_device"]) for r in table]
    from_host = [abs(r["from_host"]) for r in table]
    return {
        "op_tables": len(table),
        "device_error_median": round(statistics.median(r["device_error"] for r in table), 4),
        "from_host_median": round(statistics.median(r["from_host"] for r in table), 4),
        "device_error_median_abs": round(statistics.median(device), 4),
        "device_error_worst_abs": round(max(device), 4),
        "update_error_median_abs": round(statistics.median(abs(r["update_error"])
                                                           for r in table), 4),
        "from_device_median_abs": round(statistics.median(from_device), 4),
        "from_host_median_abs": round(statistics.median(from_host), 4),
        "host_larger": sum(h > d for h, d in zip(from_host, from_device, strict=True)),
    }


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
