"""The model against every committed measurement (bench/model_validation.py): bounds that
record today's errors, so a change that makes the model worse fails here.

Targets from the issue: time leave-one-out within 5 %, memory within 10 %, OOM boundary
right. Time is not within 5 % everywhere: host-bound splits on the H200 host vary 5-19 %
between repeated runs of the same split (bench/MODEL.md), so their bounds are wider.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bench_loader import load_bench

ROOT = Path(__file__).resolve().parent.parent


# The benchmark's fits (seconds): run in CI, skipped in the inner loop.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def result() -> dict[str, Any]:
    out: dict[str, Any] = load_bench("model_validation").validate()
    return out


def _errors(rows: list[dict[str, Any]], dataset: str) -> list[float]:
    return [abs(r["error"]) for r in rows if r["dataset"] == dataset]


def test_reference_profiles_leave_one_out(result: dict[str, Any]) -> None:
    alone = result["time_loo"]["profile_alone"]
    t4 = _errors(alone, "T4 1.7B s512 published")
    h200 = _errors(alone, "H200-SXM 1.7B s512 calibrate")
    assert len(t4) == 3 and len(h200) == 3
    # today 6.6 / 4.4 / 5.6 % (4.9 / 3.6 / 4.2 before the memory-bound bytes were counted by
    # tensor width, which fixed the held-out full fine-tunes and Phi-3; 1.5 / 2.9 / 1.1 before
    # the L2 term of 2026-12-03, which made the L4 transfer: bench/MODEL.md "L2")
    assert max(t4) <= 0.07
    # host-bound: one profile alone cannot separate host and GPU (today 34 / 33 / 14 %)
    assert max(h200) <= 0.36


def test_leave_one_out_on_every_measurement(result: dict[str, Any]) -> None:
    pooled = result["time_loo"]["all_other_data"]
    errs = [abs(r["error"]) for r in pooled]
    assert len(errs) == 63
    # today worst 39 % (the earlier-session 1.7B runs: that host ran 25-45 % slower), mean 8.3 %
    assert max(errs) <= 0.40 and sum(errs) / len(errs) <= 0.09
    # today 8.9 / 4.4 / 1.6 / 4.3 % (9.5 / 5.4 / 1.9 / 4.2 before the bytes by tensor width;
    # 8.8 / 7.2 / 2 before the L2 term)
    assert max(_errors(pooled, "H200-SXM 8B s2048 uncapped")) <= 0.10
    # today 7.0 / 3.5 / 5.6 % (6.5 / 3.1 / 5.0 before the LoRA path by input and output width;
    # 5.1 / 2.9 / 3.6 before the bytes by tensor width; 1.1 / 2.9 / 1.1 before the L2 term)
    assert max(_errors(pooled, "T4 1.7B s512 published")) <= 0.08
    assert sum(r["covered"] for r in pooled) >= 57  # 90 % bands: today 61 of 63


def test_published_t4_table_from_specs(result: dict[str, Any]) -> None:
    transfer = [abs(r["error"]) for r in result["t4_from_specs"]["h200_transfer"]]
    priors = [abs(r["error"]) for r in result["t4_from_specs"]["priors"]]
    # today +6.7 / -11.9 / -10.5 % (-0.9 / -7.7 / -3.4 at the H200's BabelStream rate, before
    # 2026-12-06: bench/MODEL.md, "Memory-bound work on two Hopper GPUs")
    assert max(transfer) <= 0.13
    assert max(priors) <= 0.14  # today 2.6 / 10.6 / 8.0 %
    ranked = sorted(result["t4_from_specs"]["h200_transfer"], key=lambda r: r["predicted"])
    assert ranked[0]["split"] == "4x1"  # the published ranking: 4x1 fastest


def test_memory_on_every_profile(result: dict[str, Any]) -> None:
    rows = result["memory_from_reference_fit"]
    assert len(rows) == 63
    # target 10 %; today 11.2 % worst, low (QLoRA with prepare_model_for_kbit_training at
    # 1x8). Moved on purpose from 10 % (9.1 % then) with the saved-tensor count of
    # 2026-12-04: its activation scale went 0.78 -> 1.00 and the held-out peaks' most low
    # -14.5 -> -10.8 % (bench/MODEL.md "Saved tensors, counted"); LoRA within 8.3 %
    assert max(abs(r["error"]) for r in rows) <= 0.12
    lora = [r for r in rows if "w06" not in r["dataset"] and "w07" not in r["dataset"]
            and "qcalibrate" not in r["dataset"]]
    assert max(abs(r["error"]) for r in lora) <= 0.09
    out_of_sample = [r for r in rows if not r["in_sample"] and "8B" in r["dataset"]]
    # today 6.2 % (high: the s2048 8x1 peak; 5.0 % before the bf16 adapters' smaller
    # recompute of 2026-12-04 moved the shared activation scale 0.995 -> 1.023)
    assert out_of_sample and max(abs(r["error"]) for r in out_of_sample) <= 0.065
    # target 10 %; today 11.1 % (QLoRA prepared, w07 1x8; 10.9 % before the loss's transients
    # of 2026-12-04, which took the held-out peaks' most low from -10.8 to -9.2 %: bench/
    # MODEL.md "What is live at the peak"; 10.04 % before the saved-tensor count, 9.7 %
    # before the RMSNorm term)
    assert max(abs(r["error"]) for r in result["memory_loo"]) <= 0.112


def test_oom_boundary_under_vram_limit(result: dict[str, Any]) -> None:
    rows = result["oom_boundary"]
    assert len(rows) == 16 and all(r["correct"] for r in rows)
    by = {(r["dataset"], r["split"]): r for r in rows}
    assert by[("H200-SXM 8B s2048 cap24", "8x1")]["predicted"] == "oom"
    assert by[("H200-SXM 8B s2048 cap24", "4x2")]["predicted"] == "fits"
    assert by[("H200-SXM 8B s1024 cap24", "8x1")]["predicted"] == "fits"
    assert all(r["predicted"] == "oom" for r in rows if r["cap_gib"] == 16)


def test_committed_results_are_current(result: dict[str, Any]) -> None:
    committed = json.loads((ROOT / "bench" / "results" / "model_validation.json").read_text())
    for key, stats in result["summary"].items():
        for name, value in stats.items():
            assert committed["summary"][key][name] == pytest.approx(value, abs=1e-3), (key, name)
