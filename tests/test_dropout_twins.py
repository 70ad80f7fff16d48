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

from gacost.advisor import time_model
from gacost.base.gpu_names import canonical_gpu
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


def _pairs() -> list[dict[str, Any]]:
    saved = json.loads((ROOT / "bench" / "results" / "dropout_twins.json").read_text())
    return list(saved["pairs"])


@pytest.mark.parametrize("index", range(len(_pairs())))
def test_the_implied_value_gives_the_measured_ratio(bench: ModuleType, index: int) -> None:
    """Inside 1-3 and beyond it (pairs imply 0.04 to 5.17): the model's ratio at the implied
    value is the measured one, so the interpolation's linearity holds where it is used."""
    p = _pairs()[index]
    job = load_job(ROOT / p["dropout_job"])
    gpu = canonical_gpu(p["gpu"])
    assert gpu is not None
    # more host time per dropout kernel, a larger ratio; one launch each already costs some
    one, three = (bench.model_ratio(job, p["split"], gpu, x) for x in (1.0, 3.0))
    assert 1.0 < one < three
    found = bench.implied(job, p["split"], gpu, p["ratio_mean"])["implied_launches"]
    assert found == pytest.approx(p["implied_launches"])
    assert bench.model_ratio(job, p["split"], gpu, found) == pytest.approx(p["ratio_mean"],
                                                                           rel=1e-3)


def test_the_ratio_at_two_launches_implies_two(bench: ModuleType) -> None:
    """Interpolating between the model at 1 and 3 launches recovers a third value of it."""
    path, split = bench.EARLIER_PAIRS[1][:2]
    job = load_job(ROOT / path)
    at_two = bench.model_ratio(job, split, "H200-SXM", 2.0)
    assert bench.implied(job, split, "H200-SXM", at_two)["implied_launches"] == pytest.approx(
        2.0, abs=0.01)


def test_scatter_beyond_the_errors_widens_the_error(bench: ModuleType) -> None:
    mean, se = bench.weighted([1.0, 1.0, 1.0], [0.5, 0.5, 0.5])
    assert (mean, se) == (1.0, pytest.approx(0.5 / 3 ** 0.5))
    _, wide = bench.weighted([0.0, 2.0, 4.0], [0.5, 0.5, 0.5])
    assert wide == pytest.approx(2.0 / 3 ** 0.5)  # chi2 32 on 2 dof: x4


def test_the_shipped_value_is_what_both_orders_imply(result: dict[str, Any]) -> None:
    """time_model's dropout_host_launches is the twins' value (both orders, each pair's two
    processes back to back), to the precision its error supports; neither order alone
    decides it."""
    summary = result["summary"]
    assert summary["calls"] == 2
    assert {o["first"] for o in summary["by_call"].values()} == {"dropout", "dropout 0"}
    shipped = time_model.DEFAULT_PARAMS.dropout_host_launches
    assert abs(shipped - summary["implied_launches"]) < summary["implied_launches_se"] / 4
    assert shipped == round(summary["implied_launches"] * 2) / 2  # to the half launch
