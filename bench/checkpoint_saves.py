"""What a checkpoint costs: TRL's own saves timed, against the bytes gacost counts.

Two sources, both the user's plain TRL script (``bench/user_script.py``):

1. **Timed saves** (run 12, ``bash bench/calibrate_rounds_h200.sh saves``,
   ``bench/results/checkpoints/saves.jsonl``): six workloads, a checkpoint every 2 updates of
   6, each save timed from the update's ``on_step_end`` to the Trainer's ``on_save``
   (``save_seconds``). These give :data:`gacost.advisor.checkpoints.SAVE_SECONDS_PER_GB`:
   the median seconds per 1e9 bytes over every save. Then two held out, predicted before
   they ran (``saves2``, ``saves2.jsonl``, another host), and three more on one machine
   (``saves3``, ``saves3.jsonl``, an H100 host again, the shipped rate committed before it
   ran): 10.3 GB three times, 24.1 GB once, QLoRA's 0.26 GB three times, to tell the host's
   part of the rate from the size's.
2. **Every other user run** (``bench/results/**/*.jsonl``, untraced): a run's
   ``train_seconds`` less the sum of its update times is the Trainer's set-up and the one
   checkpoint it writes at the end. Each workload's median, less the median of the LoRA runs
   (whose checkpoints are a few hundred MB), over its bytes: the same rate, read on other
   hosts and days.

    python bench/checkpoint_saves.py

Prints both tables and writes ``bench/results/checkpoints/checkpoint_saves.json``.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from gacost.advisor import checkpoints
from gacost.advisor.predictor import setup_for
from gacost.base import models
from gacost.base.job import load_job

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"
JOBS = {p.name: p for p in (BENCH / "jobs").rglob("*.yaml")}


def job_bytes(name: str) -> tuple[str, float]:
    """The method and the checkpoint bytes of the bench job file ``name``."""
    job = load_job(JOBS[name])
    arch = models.model_arch(*models.load_model_config(job.model))
    setup = setup_for(job.workload())
    return setup.method, checkpoints.checkpoint_bytes(arch, setup)


def runs(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of a user-run file that are untraced user runs."""
    out = []
    for line in path.read_text().splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if (isinstance(row, dict) and row.get("update_times") and "train_seconds" in row
                and not (row.get("trace") or row.get("op_table") or row.get("memory_peak"))):
            out.append(row)
    return out


def timed_saves(file: str) -> dict[str, Any]:
    """Timed saves of one results file: per workload, bytes and seconds; the median rate."""
    rows, rates = [], []
    for run in runs(RESULTS / "checkpoints" / file):
        name = Path(run["job"]).name
        method, nbytes = job_bytes(name)
        saves = run["save_seconds"]
        rates += [s / (nbytes / 1e9) for s in saves]
        rows.append({"job": name, "method": method, "gb": nbytes / 1e9, "saves_s": saves,
                     "s_per_gb": statistics.median(saves) / (nbytes / 1e9), "gpu": run["gpu"],
                     "predicted_s": checkpoints.save_seconds(nbytes)})
    return {"rows": rows, "median_s_per_gb": statistics.median(rates),
            "range_s_per_gb": [min(rates), max(rates)], "saves": len(rates)}


def end_of_run_gaps() -> dict[str, Any]:
    """Set-up and final save per user run, by workload; the full fine-tunes' rate over LoRA."""
    gaps: dict[str, list[float]] = {}
    for path in sorted(RESULTS.rglob("*.jsonl")):
        if path.parent.name == "checkpoints":
            continue
        for run in runs(path):
            name = Path(run["job"]).name
            if name in JOBS:
                gaps.setdefault(name, []).append(run["train_seconds"] - sum(run["update_times"]))
    rows: list[dict[str, Any]] = []
    for name, values in sorted(gaps.items()):
        method, nbytes = job_bytes(name)
        rows.append({"job": name, "method": method, "gb": nbytes / 1e9, "runs": len(values),
                     "gap_s": statistics.median(values)})
    base = statistics.median(r["gap_s"] for r in rows if r["method"] != "full")
    for r in rows:
        r["s_per_gb"] = (r["gap_s"] - base) / r["gb"] if r["method"] == "full" else None
    full = [r["s_per_gb"] for r in rows if r["s_per_gb"] is not None]
    return {"rows": rows, "lora_base_s": base, "median_s_per_gb_full": statistics.median(full),
            "range_s_per_gb_full": [min(full), max(full)]}


def print_timed(title: str, timed: dict[str, Any]) -> None:
    """One file's timed saves as a table, measured against the shipped rate."""
    print(title)
    print(f"{'job':48s} {'method':6s} {'GB':>6s}  saves (s)              s/GB  predicted  error")
    for r in timed["rows"]:
        saves = ", ".join(f"{s:.2f}" for s in r["saves_s"])
        error = r["predicted_s"] / statistics.median(r["saves_s"]) - 1
        print(f"{r['job']:48s} {r['method']:6s} {r['gb']:6.2f}  {saves:22s} "
              f"{r['s_per_gb']:4.2f}  {r['predicted_s']:7.2f} s  {error:+6.1%}")
    lo, hi = timed["range_s_per_gb"]
    print(f"median over {timed['saves']} saves: {timed['median_s_per_gb']:.2f} s/GB "
          f"({lo:.2f}-{hi:.2f}); shipped SAVE_SECONDS_PER_GB = {checkpoints.SAVE_SECONDS_PER_GB}")
    print()


def main() -> None:
    timed, held_out = timed_saves("saves.jsonl"), timed_saves("saves2.jsonl")
    one_machine = timed_saves("saves3.jsonl")
    gaps = end_of_run_gaps()
    print_timed("Timed saves (run 12, H100 host): seconds per save against the bytes counted",
                timed)
    print_timed("Held out (saves2, H200 host, predicted before they ran)", held_out)
    print_timed("Held out on one machine (saves3, H100 host, the same three sizes)", one_machine)
    print("End of every other user run: train_seconds - sum(update times), median per workload")
    print(f"{'job':48s} {'method':6s} {'GB':>6s} {'runs':>4s} {'gap s':>6s}  s/GB over LoRA")
    for r in gaps["rows"]:
        rate = "" if r["s_per_gb"] is None else f"{r['s_per_gb']:.2f}"
        print(f"{r['job']:48s} {r['method']:6s} {r['gb']:6.2f} {r['runs']:4d} "
              f"{r['gap_s']:6.2f}  {rate}")
    lo, hi = gaps["range_s_per_gb_full"]
    print(f"LoRA runs' median gap {gaps['lora_base_s']:.2f} s; full fine-tunes "
          f"{gaps['median_s_per_gb_full']:.2f} s/GB over it ({lo:.2f}-{hi:.2f})")
    out = RESULTS / "checkpoints" / "checkpoint_saves.json"
    out.write_text(json.dumps({"timed": timed, "held_out": held_out,
                                "one_machine": one_machine, "gaps": gaps}, indent=1)
                   + "\n")
    print(f"wrote {out.relative_to(BENCH.parent)}")


if __name__ == "__main__":
    main()
