"""The one loader of bench scripts for the tests: ``bench/`` is scripts, not a package.

The tests that check a maintained benchmark's derivations or results (bench/README.md lists
which) import it with :func:`load_bench`.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parent.parent / "bench"


def load_bench(name: str) -> ModuleType:
    """``bench/<name>.py`` run as the module ``bench_<name>``; the scripts it imports by name
    (``from crossgpu_traces import ...``, as when run from ``bench/``) resolve there."""
    if str(BENCH) not in sys.path:
        sys.path.append(str(BENCH))
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while the file runs
    spec.loader.exec_module(mod)
    return mod
