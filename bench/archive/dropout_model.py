# ARCHIVED 2026-12-03 (issue 21), not maintained: a one-off of 2026-12-03 (issue 19 item 2).
# It produced bench/results/dropout_model.json; the numbers are in bench/MODEL.md, "Kernel
# counts" (the LoRA dropout table). It predicts with the current model, so a run today prints
# other absolute times (1x4: 1.336 -> 1.549 s against the recorded 1.215 -> 1.408 s) and the
# same ratios (1.159, 1.147).
"""What the model predicts LoRA dropout costs, against the two H200 measurements (issue 19).

The dropout terms are structural (nothing here is fitted to these rows): the operators it adds
per LoRA-wrapped linear and pass, counted on the CPU (``bench/kernel_counts_cpu.py``) and
mapped to CUDA's fused ``native_dropout`` / ``native_dropout_backward`` kernels
(``advisor/kernel_counts.py``), and the bytes those kernels move
(``advisor/time_model.py``, ``DROPOUT_BYTES_PER_INPUT``). The time parameters are the shipped
reference fit (``data/reference_fit.json``), which was fitted on dropout-0 profiles only.

Measured (``shared/research/measurements-2026-12-03.md`` section 2: own-process plain TRL on
the lent H200, median s/update, dropout 0 -> 0.05).

    python bench/archive/dropout_model.py   # a table; writes bench/results/dropout_model.json
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

from gacost.advisor import kernel_counts, predictor, time_model
from gacost.advisor.time_model import TrainSetup
from gacost.base import gpu_table
from gacost.base.atomic import write_atomic
from gacost.base.models import load_model_config, model_arch

OUT = Path(__file__).resolve().parents[1] / "results" / "dropout_model.json"
ALL_LINEAR = kernel_counts.LINEAR_NAMES
GPU = "H200-SXM"
DROPOUT = 0.05

# model, seq, m, k, gradient checkpointing, measured s/update at dropout 0 and 0.05
MEASURED = (
    ("Qwen/Qwen3-1.7B", 512, 1, 4, True, 1.459, 1.694),
    ("Qwen/Qwen3-0.6B", 512, 1, 8, False, 1.729, 2.041),
)


def predict(model: str, seq: int, m: int, k: int, gc: bool, dropout: float) -> dict[str, float]:
    """The reference fit's prediction of one split, with its parts."""
    name, cfg = load_model_config(model)
    arch = model_arch(name, cfg)
    setup = TrainSetup("lora", 16, ALL_LINEAR, seq, "bf16", gc, lora_dropout=dropout)
    gpu = gpu_table.gpu_specs()[GPU]
    fit = predictor.reference_model()
    band = fit.seconds(arch, setup, gpu, m, k)
    assert band is not None
    costs = time_model.work_costs(arch, setup)
    rates = time_model.gpu_rates(gpu, costs.compute_precision)
    assert rates is not None
    params = fit.time.params(GPU)
    part = time_model.micro_step(costs, rates, params, m)
    return {
        "s_per_update": band.value,
        "launches_per_microstep": costs.launches_at(m),
        "dropout_kernels_per_microstep": kernel_counts.dropout_kernels_per_microstep(
            arch, setup),
        "host_s": part.host,
        "gpu_s": part.gpu,
        "traffic_s": part.traffic,
        "host_share": time_model.host_share(costs, rates, params, m),
        "peak_gib": fit.peak_gib(arch, setup, GPU, m).value,
    }


def main() -> int:
    rows = []
    for model, seq, m, k, gc, t0, t1 in MEASURED:
        base = predict(model, seq, m, k, gc, 0.0)
        drop = predict(model, seq, m, k, gc, DROPOUT)
        rows.append({
            "model": model, "sequence_length": seq, "split": f"{m}x{k}",
            "gradient_checkpointing": gc, "gpu": GPU, "lora_dropout": DROPOUT,
            "measured_s": [t0, t1], "measured_ratio": round(t1 / t0, 4),
            "predicted_s": [round(base["s_per_update"], 4), round(drop["s_per_update"], 4)],
            "predicted_ratio": round(drop["s_per_update"] / base["s_per_update"], 4),
            "dropout_0": {key: round(v, 6) for key, v in base.items()},
            "dropout": {key: round(v, 6) for key, v in drop.items()},
        })
    print(f"{'workload':44s} {'measured':>22s} {'predicted':>22s}  ratio meas / pred")
    for r in rows:
        label = (f"{r['model'].split('/')[-1]} s{r['sequence_length']} {r['split']} "
                 f"{'GC' if r['gradient_checkpointing'] else 'no GC'}")
        meas = f"{r['measured_s'][0]:.3f} -> {r['measured_s'][1]:.3f}"
        pred = f"{r['predicted_s'][0]:.3f} -> {r['predicted_s'][1]:.3f}"
        print(f"{label:44s} {meas:>22s} {pred:>22s}  "
              f"{r['measured_ratio']:.3f} / {r['predicted_ratio']:.3f}")
        d0, d1 = r["dropout_0"], r["dropout"]
        print(f"  launches/micro-step {d0['launches_per_microstep']:.0f} -> "
              f"{d1['launches_per_microstep']:.0f} (+{d1['dropout_kernels_per_microstep']:.0f}"
              f" dropout kernels), host {1e3 * d0['host_s']:.1f} -> {1e3 * d1['host_s']:.1f}"
              f" ms, GPU {1e3 * d0['gpu_s']:.1f} -> {1e3 * d1['gpu_s']:.1f} ms, "
              f"peak {d0['peak_gib']:.2f} -> {d1['peak_gib']:.2f} GiB")
    doc = {
        "schema": "gacost-dropout-model", "created_at": time.strftime("%Y-%m-%d"),
        "method": __doc__.split("\n\n")[1].replace("\n", " "),
        "dropout_bytes_per_input_element_and_pass": time_model.DROPOUT_BYTES_PER_INPUT,
        "kernels": dataclasses.asdict(kernel_counts.STRUCTURE["qwen3"].half),
        "rows": rows,
    }
    write_atomic(OUT, json.dumps(doc, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(OUT.parents[2])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
