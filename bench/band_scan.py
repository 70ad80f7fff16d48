"""How wide the 90 % bands must be: coverage of every held-out measurement against the
structural error term ``model_sd`` of the time model (``time_model.TimeModelParams``, printed
as MODEL_SD), overall and per group.

Held out: the H200 leave-one-workload-out predictions (``bench/model_v2.py``, each workload
predicted from the others on the machine it ran on) and the user's own runs of workloads no
profile holds (``bench/heldout_user_runs.py``, a machine nobody measured: the host's spread
in the band; the run-to-run spread across days is ``NOISE_HOST``, from repeats). For each
candidate ``model_sd`` (a variant of the shipped terms; every fit redone with it) the share of
measurements inside their band, per host group (host-bound / mixed / GPU-bound by the model's
host share) and per method. Prints a table and writes ``bench/results/band_scan.json``.

    python bench/band_scan.py

The rule ``model_sd`` follows: the smallest value whose bands hold 90 % of all held-out
measurements; the per-group rows say where that holds less.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import heldout_user_runs as held
import model_v2
from tabulate import tabulate

from gacost.advisor.time_model import DEFAULT_PARAMS, TimeModelParams

OUT = Path(__file__).resolve().parent / "results" / "band_scan.json"
CANDIDATES = (0.04, 0.06, 0.08, 0.10, 0.12, 0.14)


def measurements(terms: TimeModelParams = DEFAULT_PARAMS) -> list[dict[str, Any]]:
    """Every held-out measurement with its group labels and whether its band (time model:
    ``terms``) holds it."""
    rows = [{"set": "leave one workload out (H200)", "host": r["host"], "method": "-",
             "covered": bool(r["inside"])}
            for r in model_v2.leave_one_workload_out(model_v2.h200_profiles(), terms)
            if r["status"] == "ok"]
    for folder in held.SETS:
        if folder.exists():
            rows += [{"set": "user's runs (H200 and H100, unmeasured machine)", "host": r["host"],
                      "method": r["method"], "covered": bool(r["covered"])}
                     for r in held.rows_of(folder, terms) if r["time"] == "predicted"]
    return rows


def main() -> None:
    table: dict[str, dict[str, str]] = defaultdict(dict)
    for sd in CANDIDATES:
        rows = measurements(replace(DEFAULT_PARAMS, model_sd=sd))  # the one term scanned
        groups: dict[str, list[bool]] = defaultdict(list)
        for r in rows:
            groups["all"].append(r["covered"])
            groups[r["set"]].append(r["covered"])
            groups[f"host={r['host']}"].append(r["covered"])
            if r["method"] != "-":
                groups[f"method={r['method']}"].append(r["covered"])
        for name, hits in groups.items():
            table[name][f"{sd:.2f}"] = f"{sum(hits)}/{len(hits)} ({sum(hits) / len(hits):.0%})"
    header = ["group", *(f"MODEL_SD {sd:.2f}" for sd in CANDIDATES)]
    print(tabulate([[g, *(v.get(f"{sd:.2f}", "") for sd in CANDIDATES)]
                    for g, v in table.items()], headers=header))
    OUT.write_text(json.dumps(table, indent=1) + "\n")


if __name__ == "__main__":
    main()
