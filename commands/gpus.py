"""``gacost gpus``: the embedded GPU specs."""

from __future__ import annotations

import argparse

from tabulate import tabulate

from gacost.base import gpu_table
from gacost.commands.formats import add_format_flag, listing


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of ``gacost gpus`` (its parser made by :mod:`gacost.commands.cli`)."""
    add_format_flag(p)
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
    families = gpu_table.families()

    def text() -> str:
        return (
            tabulate(rows, headers="keys") + "\n\nDense tensor rates (no sparsity); sources per "
            "row in the GPU table (data/gpus.csv). Families accepted in jobs: "
            + ", ".join(families)
        )

    return listing(args.format, rows, "gpus", text,
                   tail={"families": {name: list(gpus) for name, gpus in families.items()}})
