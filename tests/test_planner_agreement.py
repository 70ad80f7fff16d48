"""recommend, budget and compare plan through one planner: same job, same answer.

Before the planner was one, ``recommend`` ran all runs on one instance and ignored the spot
allowance, while ``budget`` packed runs onto up to 8 instances with the allowance: the same
job got "infeasible" from one and a plan from the other, or two different GPUs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gacost.advisor.objectives import (
    FLAGS,
    MinCost,
    MinCostUnderDeadline,
    MinTime,
    MinTimeUnderBudget,
    objective_of,
)
from gacost.advisor.recommend import recommend
from gacost.base.job import load_job
from gacost.base.records import Offer
from gacost.commands.cli import main

ROOT = Path(__file__).resolve().parent.parent
DEADLINE_EXAMPLE = ROOT / "examples" / "llama-8b-qlora-deadline.yaml"
T4_4X1 = 2.3792  # the published T4 profile's fastest split, s/update


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    assert main(list(argv)) == 0, capsys.readouterr().err
    out: dict[str, object] = json.loads(capsys.readouterr().out)
    return out


def test_recommend_and_budget_pick_the_same_plan_for_the_deadline_example(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rec = _json(capsys, "recommend", "--job", str(DEADLINE_EXAMPLE), "--format", "json")
    bud = _json(capsys, "budget", "--job", str(DEADLINE_EXAMPLE), "--format", "json")
    r, b = rec["recommended"], bud["best"]
    assert isinstance(r, dict) and isinstance(b, dict)
    for key in ("gpu", "provider", "region", "instance_type", "pricing"):
        assert r[key] == b[key], key
    assert r["instances"] == b["instances"]
    assert r["cost_all_runs"] == pytest.approx(b["cost"])
    assert r["hours_all_runs"] == pytest.approx(b["wall_hours"])
    assert r["hours_all_runs"] <= 24.0


def test_compare_defaults_to_the_recommended_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    rec = _json(capsys, "recommend", "--job", str(DEADLINE_EXAMPLE), "--format", "json")
    cmp_ = _json(capsys, "compare", "--job", str(DEADLINE_EXAMPLE), "--format", "json")
    assert isinstance(rec["recommended"], dict)
    assert cmp_["gpu"] == rec["recommended"]["gpu"]


def _t4_job(tmp_path: Path, runs: int, updates: int, deadline: float) -> Path:
    job = tmp_path / "job.yaml"
    job.write_text(
        "model: Qwen/Qwen3-1.7B\nlora: {r: 16, alpha: 32}\nsequence_length: 512\n"
        f"effective_batch: 4\nwork: {{updates: {updates}}}\nprecision: fp16\n"
        f"runs: {runs}\ngpus: [T4]\nobjective: min_cost_under_deadline\n"
        f"deadline_hours: {deadline}\n", encoding="utf-8")
    return job


def test_many_runs_meet_a_deadline_on_parallel_instances_in_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 4 runs of 6200 updates x 2.3792 s = 4.10 h each on the measured T4; deadline 5 h:
    # no single instance does it (16.4 h), four instances in parallel do.
    job = _t4_job(tmp_path, 4, 6200, 5.0)
    prices = tmp_path / "prices.csv"
    prices.write_text(
        "provider,region,instance_type,gpu,gpu_count,gpu_memory_gib,vcpus,ram_gib,price_hour,"
        "spot_hour,source,fetched_at\n"
        "test,r1,t4-box,T4,1,16,4,16,0.526,,test,2026-01-01\n", encoding="utf-8")
    rec = _json(capsys, "recommend", "--job", str(job), "--prices", str(prices),
                "--format", "json")
    bud = _json(capsys, "budget", "--job", str(job), "--prices", str(prices),
                "--format", "json")
    r, b = rec["recommended"], bud["best"]
    assert isinstance(r, dict) and isinstance(b, dict)
    # and TRL's 13 checkpoints (12 at multiples of 500, one at the end) of 209,190,912
    # bytes at 1 s per GB (tests/test_budget.py)
    run_hours = (6200 * T4_4X1 + 13 * 0.209190912) / 3600
    assert r["instances"] == b["instances"] == 4
    assert r["hours_all_runs"] == pytest.approx(run_hours)
    assert r["cost_all_runs"] == pytest.approx(4 * run_hours * 0.526)
    assert b["cost"] == pytest.approx(r["cost_all_runs"])


def test_both_refuse_the_same_impossible_deadline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = _t4_job(tmp_path, 4, 6200, 3.0)  # a single run takes 4.10 h
    for command in ("recommend", "budget"):
        assert main([command, "--job", str(job)]) == 3
        err = capsys.readouterr().err
        assert "a single run takes at least 4.10 h" in err, err


def test_objectives_validate_their_parameters() -> None:
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="deadline_hours"):
            MinCostUnderDeadline(bad)
        with pytest.raises(ValueError, match="--budget"):
            MinTimeUnderBudget(bad, FLAGS)
    with pytest.raises(ValueError, match="budget_usd: required"):
        objective_of("min_time_under_budget")
    assert isinstance(objective_of("min_cost"), MinCost)
    assert isinstance(objective_of("min_time"), MinTime)
    assert objective_of("min_cost_under_deadline", deadline_hours=2.0).deadline_hours == 2.0


def test_plans_hold_their_offer_and_estimate() -> None:
    job = load_job(ROOT / "examples" / "qwen3-1.7b-lora.yaml").model_copy(
        update={"gpus": ["T4"]})
    offer = Offer("test", "r1", "t4-box", "T4", 1, 16, 4, 16, 0.526, None, "test", "2026-01-01")
    report = recommend(job, [offer])
    best = report.recommended
    assert best.offer is offer
    assert best.estimate in report.splits_on_recommended


@pytest.mark.parametrize("objective", ["min_time_under_budget: 200", "min_time"])
def test_budget_honours_the_jobs_time_objective(
    objective: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # One 8-GPU H200 instance runs a fine-tune about 8 times faster than one GPU for a little
    # more money: the quickest plan within the budget is the 8-GPU one, while the 1-GPU one
    # buys the most runs. `budget` used to answer the second question whatever the job said.
    name, _, budget = objective.partition(": ")
    job = tmp_path / "job.yaml"
    job.write_text(
        "model: Qwen/Qwen3-8B\nlora: {r: 16, alpha: 32}\nsequence_length: 2048\n"
        "effective_batch: 32\nwork: {updates: 2000}\nprecision: bf16\n"
        "gradient_checkpointing: true\nruns: 3\ngpus: [H200]\ngpus_per_run: choose\n"
        f"objective: {name}\n" + (f"budget_usd: {budget}\n" if budget else ""),
        encoding="utf-8")
    prices = tmp_path / "prices.csv"
    prices.write_text(
        "provider,region,instance_type,gpu,gpu_count,gpu_memory_gib,vcpus,ram_gib,price_hour,"
        "spot_hour,source,fetched_at\n"
        "test,r1,h200-1x,H200-SXM,1,141,16,200,3.5,,test,2026-01-01\n"
        "test,r1,h200-8x,H200-SXM,8,141,128,1600,28.0,,test,2026-01-01\n", encoding="utf-8")
    args = ("--job", str(job), "--prices", str(prices), "--format", "json")
    rec = _json(capsys, "recommend", *args)
    bud = _json(capsys, "budget", *args)
    r, b = rec["recommended"], bud["best"]
    assert isinstance(r, dict) and isinstance(b, dict)
    assert r["instance_type"] == b["instance_type"] == "h200-8x"
    assert r["instances"] == b["instances"] == 3  # the three runs side by side
    assert r["cost_all_runs"] == pytest.approx(b["cost"])
    assert r["hours_all_runs"] == pytest.approx(b["wall_hours"])
    assert b["gpu_hours"] == pytest.approx(8 * b["instance_hours"])
    assert b["cost"] == pytest.approx(28.0 * b["instance_hours"])
