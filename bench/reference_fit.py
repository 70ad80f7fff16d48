"""Write the reference fit that ``gacost recommend`` loads instead of fitting on every call.

The time and memory models fitted to the shipped reference profiles (data/profiles/) are
saved to data/reference_fit.json with a key over the profiles, the model's version and
constants and the GPU table (``gacost.advisor.predictor.reference_fit_key``; a docstring or
comment edit keeps it). When anything of that
changes the saved fit no longer matches: ``recommend`` fits again (slower, same answer) and
``tests/test_model_v2.py`` fails until this script is run again.

    python bench/reference_fit.py
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from gacost.advisor import predictor
from gacost.base.atomic import write_atomic

OUT = Path(__file__).resolve().parent.parent / "data" / predictor.REFERENCE_FIT


def main() -> None:
    profiles = predictor.reference_profiles()
    start = time.perf_counter()
    model = predictor.fitted_model(profiles)
    took = time.perf_counter() - start
    data = predictor.reference_fit_to_dict(model, predictor.reference_fit_key(profiles))
    write_atomic(OUT, json.dumps(data, indent=1) + "\n")
    print(f"fitted {len(model.used)} profiles in {took:.2f} s; wrote {OUT.name} "
          f"(key {data['key']})")


if __name__ == "__main__":
    main()
