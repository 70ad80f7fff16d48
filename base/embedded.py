"""Where the embedded data lives (the package ``gacost.data``) and its reference profiles.

Nothing is read at import time; every loader is a function.
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable


def data_root() -> Traversable:
    """The embedded data directory (installed as ``gacost.data``; ``data/`` in a checkout)."""
    return resources.files("gacost.data")


def reference_profile_texts() -> list[tuple[str, str]]:
    """(file name, JSON text) of every reference profile shipped in ``profiles/``."""
    folder = data_root() / "profiles"
    return sorted(
        (e.name, e.read_text(encoding="utf-8"))
        for e in folder.iterdir()
        if e.name.endswith(".json")
    )
