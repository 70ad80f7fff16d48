"""The model against the user's own runs of 2026-12-03 (bench/results/calibrate-vs-user/).

Each user-script run (one split in its own process, TRL defaults; bench/user_script.py) is a
held-out measurement: none of these workloads is among the reference profiles, and three of
the four have LoRA dropout 0.05. Prints the predicted seconds per update with its 90% band
against every run's median, and the band coverage; writes
``bench/results/heldout_user_runs.json``.

    python bench/heldout_user_runs.py
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from gacost.advisor.recommend import estimate_job
from gacost.base.job import load_job

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "bench" / "results" / "calibrate-vs-user"
OUT = ROOT / "bench" / "results" / "heldout_user_runs.json"


def main() -> None:
    rows = []
    for path in sorted(RUNS.glob("*.json")):
        for w in json.loads(path.read_text())["workloads"]:
            job = load_job(ROOT / w["job"]).model_copy(update={"gpus": ["H200-SXM"]})
            est = {(e.micro_batch, e.grad_accum): e for e in estimate_job(job, []).estimates}
            for u in w["user"]:
                if not u.get("median_s"):
                    continue
                e = est[(u["micro_batch"], u["grad_accum"])]
                lo, hi = e.seconds_low or 0.0, e.seconds_high or 0.0
                rows.append({
                    "run": path.stem, "job": Path(w["job"]).stem, "split": u["split"],
                    "measured_s": round(u["median_s"], 4),
                    "predicted_s": round(e.seconds_per_update or 0.0, 4),
                    "band": [round(lo, 4), round(hi, 4)], "time": e.time_source,
                    "error": round((e.seconds_per_update or 0.0) / u["median_s"] - 1, 4),
                    "covered": lo <= u["median_s"] <= hi,
                })
    for r in rows:
        print(f"{r['job']:32s} {r['split']:>4s} measured {r['measured_s']:.3f} predicted "
              f"{r['predicted_s']:.3f} ({r['band'][0]:.3f}-{r['band'][1]:.3f}, {r['time']}) "
              f"{r['error']:+.1%} {'in band' if r['covered'] else 'OUTSIDE'}")
    held = [r for r in rows if r["time"] == "predicted"]
    errs = [abs(r["error"]) for r in held]
    summary = {"predicted_runs": len(held), "median_abs_error": statistics.median(errs),
               "max_abs_error": max(errs), "covered_90": sum(r["covered"] for r in held)}
    print(f"\n{len(held)} predicted runs: median |error| {summary['median_abs_error']:.1%}, "
          f"worst {summary['max_abs_error']:.1%}, inside the 90% band "
          f"{summary['covered_90']}/{len(held)}")
    OUT.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
