"""LoRA dropout's twins against the model (bench/dropout_twins.py): the committed result is
what run 28's raw runs and today's model give, each pair differs in dropout alone, and the
value a pair implies is the one at which the model gives its measured ratio."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from bench_loader import load_bench

from gacost.base.job import load_job

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_bench("dropout_twins")


@pytest.fixture(scope="module")
def result(bench: ModuleType) -> dict[str, Any]:
    return dict(bench.analyse())


def test_the_committed_result_reruns_from_the_raw_runs(result: dict[str, Any]) -> None:
    saved = json.loads((ROOT / "bench" / "results" / "dropout_twins.json").read_text())
    assert json.loads(json.dumps(result)) == saved


def test_each_pair_differs_in_dropout_alone(result: dict[str, Any]) -> None:
    assert result["summary"]["pairs"] >= 5
    for p in result["pairs"]:
        off, on = load_job(ROOT / p["job"]), load_job(ROOT / p["dropout_job"])
        assert (off.lora.dropout, on.lora.dropout) == (0.0, p["dropout"]) and p["dropout"] > 0
        assert on.model_copy(update={"lora": off.lora}) == off


def test_the_implied_value_gives_the_measured_ratio(bench: ModuleType,
                                                    result: dict[str, Any]) -> None:
    p = result["pairs"][0]
    job = load_job(ROOT / p["dropout_job"])
    gpu = "H100-SXM"
    # more host time per dropout kernel, a larger ratio; one launch each already costs some
    one, three = (bench.model_ratio(job, p["split"], gpu, x) for x in (1.0, 3.0))
    assert 1.0 < one < three
    found = bench.implied(job, p["split"], gpu, p["ratio_mean"])["implied_launches"]
    assert bench.model_ratio(job, p["split"], gpu, found) == pytest.approx(p["ratio_mean"],
                                                                           rel=2e-3)


def test_a_ratio_the_shipped_model_predicts_implies_the_shipped_value(
        bench: ModuleType) -> None:
    path, split = bench.EARLIER_PAIRS[0][:2]
    job = load_job(ROOT / path)
    shipped = bench.model_ratio(job, split, "H200-SXM", bench.SHIPPED)
    assert bench.implied(job, split, "H200-SXM", shipped)["implied_launches"] == pytest.approx(
        bench.SHIPPED)
