"""``gacost gpus``: the embedded GPU specs."""

from __future__ import annotations

import argparse

from tabulate import tabulate

from gacost.base import gpu_table
from gacost.reports.formats import rows_csv


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the subcommand."""
    p = sub.add_parser("gpus", help="list the GPU specs gacost knows")
    p.add_argument("--format", choices=("table", "csv"), default="table")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> str:
    """Render the spec table."""
    rows = [
        {
            "gpu": s.name,
            "memory_gib": s.memory_gib,
            "bandwidth_gbs": s.bandwidth_gbs,
            "fp16_tflops": s.fp16_tflops,
            "bf16_tflops": s.bf16_tflops,
            "fp32_tflops": s.fp32_tflops,
            "bf16": s.bf16_supported,
        }
        for s in gpu_table.gpu_specs().values()
    ]
    if args.format == "csv":
        return rows_csv(rows).rstrip("\n")
    return (
        tabulate(rows, headers="keys") + "\n\nDense tensor rates (no sparsity); sources per "
        "row in the GPU table (data/gpus.csv). Families accepted in jobs: "
        + ", ".join(gpu_table.families())
    )
