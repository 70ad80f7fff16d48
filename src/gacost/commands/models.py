"""``gacost models``: the shipped model architecture configs."""

from __future__ import annotations

import argparse

from tabulate import tabulate

from gacost.base import models


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the subcommand."""
    p = sub.add_parser("models", help="list the shipped model configs")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> str:
    """Render the model table."""
    rows = []
    for name in models.shipped_models():
        display, cfg = models.load_model_config(name)
        a = models.model_arch(display, cfg)
        rows.append(
            [
                display,
                a.model_type,
                f"{a.total_params / 1e9:.2f}B",
                a.num_hidden_layers,
                a.hidden_size,
                a.vocab_size,
            ]
        )
    return tabulate(rows, headers=["model", "type", "params", "layers", "hidden", "vocab"])
