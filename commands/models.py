"""``gacost models``: the shipped model architecture configs."""

from __future__ import annotations

import argparse
from typing import Any

from tabulate import tabulate

from gacost.base import models
from gacost.commands.formats import add_format_flag, listing

HEADERS = ["model", "type", "params", "layers", "hidden", "vocab"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of ``gacost models`` (its parser made by :mod:`gacost.commands.cli`)."""
    add_format_flag(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> str:
    """Render the model table (json and csv: the parameter count in full)."""
    rows: list[dict[str, Any]] = []
    for name in models.shipped_models():
        display, cfg = models.load_model_config(name)
        a = models.model_arch(display, cfg)
        rows.append({
            "model": display, "type": a.model_type, "params": a.total_params,
            "layers": a.num_hidden_layers, "hidden": a.hidden_size, "vocab": a.vocab_size,
        })  # fmt: skip

    def text() -> str:
        cells = [{**r, "params": f"{r['params'] / 1e9:.2f}B"} for r in rows]
        return tabulate([list(c.values()) for c in cells], headers=HEADERS)

    return listing(args.format, rows, "models", text)
