# ARCHIVED 2026-12-03 (issue 21), not maintained: the in-sample baseline of 2026-12-02 (before
# issue 12; superseded by the held-out bench/model_v2.py). The baseline numbers are in
# bench/MODEL.md, "Baseline on the H200 sweep"; bench/results/sweep_vs_model.json is the last
# committed run (the model of c51f1e4). It checks whatever model is current, so a run today
# prints other numbers than either.
"""The current time model against the H200 sweep (bench/results/h200-sweep/).

Prints one row per measured split (measured median s/update, predicted value and 90 % band,
error) and the summary (median and worst absolute error, band coverage); writes
bench/results/sweep_vs_model.json. The sweep is plain TRL + PEFT (bench/h200_sweep.py). Since
model v2 its workloads are reference profiles the model is fitted to, so this is an in-sample
check (the held-out checks are bench/model_v2.py and bench/model_validation.py). Each
workload reaches the model as its reference profile's Workload, through
``predictor.setup_for``: the one conversion (liger, compile, QLoRA preparation, dropout).

    python bench/archive/sweep_vs_model.py
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from tabulate import tabulate

from gacost.advisor import predictor
from gacost.advisor.predictor import TrainSetup
from gacost.base import gpu_table, models
from gacost.base.profile import read_profile

ROOT = Path(__file__).resolve().parents[2]
SWEEP = ROOT / "bench" / "results" / "h200-sweep"
PROFILES = ROOT / "data" / "profiles"
OUT = ROOT / "bench" / "results" / "sweep_vs_model.json"


def _setup(sweep_file: Path) -> TrainSetup:
    """The setup of a sweep workload, from its reference profile's Workload."""
    profile = read_profile(PROFILES / f"H200-SXM--{sweep_file.stem}--h200-sweep.json")
    return predictor.setup_for(profile.workload, profile.software)


def main() -> None:
    spec = gpu_table.gpu_specs()["H200-SXM"]
    model = predictor.reference_model()
    rows: list[dict[str, Any]] = []
    for path in sorted(SWEEP.glob("*.json")):
        d = json.loads(path.read_text(encoding="utf-8"))
        w = d["workload"]
        name, cfg = models.load_model_config(Path(w["config"]).stem.replace("--", "/"))
        arch, setup = models.model_arch(name, cfg), _setup(path)
        for s in d["splits"]:
            if s.get("status") != "ok":
                continue
            band = model.seconds(arch, setup, spec, s["micro_batch"], s["grad_accum"])
            if band is None:
                continue
            measured = s["median_s"]
            rows.append({
                "workload": w["name"], "split": f"{s['micro_batch']}x{s['grad_accum']}",
                "options": ",".join(k for k in ("torch_compile", "liger",
                                                "prepare_model_for_kbit_training") if w.get(k)),
                "measured_s": measured, "predicted_s": band.value, "low_s": band.low,
                "high_s": band.high, "error_pct": 100 * (band.value / measured - 1),
                "inside_band": band.low <= measured <= band.high,
            })
    errors = [abs(r["error_pct"]) for r in rows]
    summary = {"splits": len(rows), "median_abs_error_pct": statistics.median(errors),
               "max_abs_error_pct": max(errors),
               "inside_90pct_band": sum(r["inside_band"] for r in rows)}
    print(tabulate([[r["workload"], r["split"], r["options"], f"{r['measured_s']:.3f}",
                     f"{r['predicted_s']:.3f}", f"{r['low_s']:.3f}-{r['high_s']:.3f}",
                     f"{r['error_pct']:+.1f}%", "yes" if r["inside_band"] else "NO"]
                    for r in rows],
                   headers=["workload", "split", "options", "measured", "predicted",
                            "90% band", "error", "in band"], disable_numparse=True))
    print(f"\n{summary['splits']} splits: median |error| {summary['median_abs_error_pct']:.1f}%,"
          f" worst {summary['max_abs_error_pct']:.1f}%, inside the 90% band "
          f"{summary['inside_90pct_band']}/{summary['splits']}")
    OUT.write_text(json.dumps({"summary": summary, "rows": rows}, indent=2) + "\n",
                   encoding="utf-8")


if __name__ == "__main__":
    main()
