"""Achieved bandwidth of PyTorch's element-wise kernels by tensor size on the attached GPU.

The time model charges memory-bound kernels their bytes at the GPU's stream rate, less the
reads its L2 serves (advisor/time_model.py); this measures what the kernels a LoRA step
launches (a bf16 copy, the bf16 -> fp32 cast of PEFT's adapter input, a bf16 multiply, a
fp32 dropout; a fp32 fill and the fp32 -> bf16 cast beside them) achieve from 1 MiB to 1 GiB
of input, each kernel timed alone with CUDA events over back-to-back repeats (the tensor stays
in L2 where it fits), and again with a 256 MiB buffer written between repeats (cold L2). A
spin kernel queued before each hot repeat keeps the launch's host time out of the interval
(before 2026-12-06 the hot column at 1-16 MiB held it: run 19's first two tables).
Prints a table and writes JSON.

    python bench/elementwise_rates.py --out elementwise-rates.json
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import torch

SIZES_MIB = (1, 4, 16, 32, 64, 128, 256, 512, 1024)
FLUSH_MIB = 256
SPIN_CYCLES = 50_000  # ~25 us at 2 GHz: longer than one launch


def kernels() -> dict[str, tuple[torch.dtype, Callable[[torch.Tensor], torch.Tensor], float]]:
    """Name -> (input dtype, the op, bytes moved per input byte)."""
    drop = torch.nn.functional.dropout
    return {
        "copy_bf16": (torch.bfloat16, lambda x: x.clone(), 2.0),
        "cast_bf16_fp32": (torch.bfloat16, lambda x: x.float(), 3.0),
        "mul_bf16": (torch.bfloat16, lambda x: x * x, 2.0),
        "dropout_fp32": (torch.float32, lambda x: drop(x, 0.05, True), 2.25),
        # write-only and read-heavy: is the cast's rate the DRAM's writes or the SMs'?
        "fill_fp32": (torch.float32, torch.ones_like, 1.0),
        "cast_fp32_bf16": (torch.float32, lambda x: x.bfloat16(), 1.5),
    }


def seconds(op: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, repeats: int,
            flush: torch.Tensor | None) -> float:
    """Median seconds of ``op(x)`` over ``repeats`` CUDA-event-timed calls."""
    times = []
    for _ in range(repeats):
        if flush is not None:
            flush.fill_(1.0)
        else:
            torch.cuda._sleep(SPIN_CYCLES)  # type: ignore[no-untyped-call]  # GPU busy meanwhile
        start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        start.record()
        op(x)
        end.record()
        end.synchronize()
        times.append(float(start.elapsed_time(end)) / 1e3)
    times.sort()
    return times[len(times) // 2]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--repeats", type=int, default=20)
    a = p.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("elementwise_rates: no CUDA GPU attached")
    flush = torch.empty(FLUSH_MIB * 2**20 // 4, device="cuda")
    rows = []
    print(f"{'kernel':16s} {'MiB':>5s} {'hot GB/s':>9s} {'cold GB/s':>9s}")
    for name, (dtype, fn, per_byte) in kernels().items():
        for mib in SIZES_MIB:
            x = torch.ones(mib * 2**20 // dtype.itemsize, dtype=dtype, device="cuda")
            for _ in range(3):
                fn(x)
            moved = per_byte * mib * 2**20
            hot = moved / seconds(fn, x, a.repeats, None)
            cold = moved / seconds(fn, x, a.repeats, flush)
            rows.append({"kernel": name, "input_mib": mib, "hot_gbs": hot / 1e9,
                         "cold_gbs": cold / 1e9})
            print(f"{name:16s} {mib:5d} {hot / 1e9:9.0f} {cold / 1e9:9.0f}")
            del x
    props = torch.cuda.get_device_properties(0)
    a.out.write_text(json.dumps({"gpu": props.name, "sms": props.multi_processor_count,
                                 "torch": torch.__version__, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
