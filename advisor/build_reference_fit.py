"""Rebuild the saved reference fit that ``gacost recommend`` loads instead of fitting.

    python -m gacost.advisor.build_reference_fit [--out data/reference_fit.json] [--check]

The time and memory models fitted to the embedded reference profiles (``data/profiles/``;
the H200 sweep's are written by :mod:`gacost.advisor.build_sweep_profiles`) are saved with a
key over the profiles, the model's version and fixed terms and the GPU table
(:func:`gacost.advisor.predictor.reference_fit_key`; a docstring or comment edit keeps it).
When anything of that changes the saved fit no longer matches: ``recommend`` fits again
(slower, the same answer) and ``tests/test_model_v2.py`` fails until this is run again.
``--check`` fits nothing: it exits 1 when the saved fit's key is not the current one. The
default ``--out`` is the ``data/`` folder of the checkout this module lives in.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from gacost.advisor import predictor
from gacost.base.atomic import write_atomic

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "data" / predictor.REFERENCE_FIT


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m gacost.advisor.build_reference_fit",
        description=(__doc__ or "").splitlines()[0],
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="the saved fit (default: the checkout's data/reference_fit.json)")
    parser.add_argument("--check", action="store_true",
                        help="only say whether the saved fit is current (exit 1 if not)")
    return parser.parse_args(argv)


def saved_key(path: Path) -> str | None:
    """The key of the saved fit at ``path``; None when it is missing or unreadable."""
    try:
        key = json.loads(path.read_text(encoding="utf-8")).get("key")
    except (OSError, ValueError, AttributeError):
        return None
    return key if isinstance(key, str) else None


def main(argv: Sequence[str] | None = None) -> int:
    """Fit and write the reference fit (or, with ``--check``, compare keys only)."""
    args = _parse_args(argv)
    profiles = predictor.reference_profiles()
    key = predictor.reference_fit_key(profiles)
    if args.check:
        saved = saved_key(args.out)
        if saved != key:
            print(f"{args.out} is stale (key {saved}, the profiles and model give {key}): run "
                  "python -m gacost.advisor.build_reference_fit", file=sys.stderr)
            return 1
        print(f"{args.out} is current (key {key})")
        return 0
    start = time.perf_counter()
    model = predictor.fitted_model(profiles)
    took = time.perf_counter() - start
    data = predictor.reference_fit_to_dict(model, key)
    write_atomic(args.out, json.dumps(data, indent=1) + "\n")
    print(f"fitted {len(model.used)} profiles in {took:.2f} s; wrote {args.out} (key {key})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
