"""QLoRA's and a full fine-tune's host cost per launch against their LoRA twins
(bench/method_host.py): the shipped factors are the ones the twin pairs give."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from bench_loader import load_bench

from gacost.advisor.time_model import DEFAULT_PARAMS

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def saved() -> dict[str, Any]:
    return dict(json.loads((ROOT / "bench" / "results" / "method_host.json").read_text()))


def test_the_shipped_qlora_factor_is_the_derived_one(saved: dict[str, Any]) -> None:
    assert saved["qlora"]["factor"] == pytest.approx(DEFAULT_PARAMS.host_factor_qlora,
                                                     abs=0.005)
    # five workloads on both sides of the run order, some pairs more than once
    assert len(saved["qlora"]["per_workload"]) >= 5
    assert {r["order"] for r in saved["pairs"] if r["method"] == "qlora"} == {"first", "second"}


def test_the_shipped_full_fine_tune_factor_is_the_derived_one(saved: dict[str, Any]) -> None:
    full = saved["full"]
    assert full["factor"] == pytest.approx(DEFAULT_PARAMS.host_factor_full, abs=0.005)
    # modelled because it is more than two standard errors from 1, over seven workloads
    assert abs(math.log(full["factor"])) > 2 * full["log_se"]
    assert len(full["per_workload"]) >= 7


def test_the_derivation_reruns_from_the_raw_runs(saved: dict[str, Any]) -> None:
    bench = load_bench("method_host")
    rows = bench.pairs()
    assert rows == saved["pairs"]
    for method in ("qlora", "full"):
        assert bench.derived([r for r in rows if r["method"] == method]) == saved[method]


def test_a_pair_needs_both_members_host_bound_and_adjacent() -> None:
    bench = load_bench("method_host")
    rows = bench.pairs()
    assert rows and all(min(r["host_share"]) >= bench.HOST_BOUND for r in rows)
    # the traced QLoRA pair: the profiler's host per kernel agrees with the inversion's
    traced = [r for r in rows if r["traced_us_per_kernel"]]
    assert traced
    for r in traced:
        assert r["factor"] == pytest.approx(
            r["traced_us_per_kernel"][0] / r["traced_us_per_kernel"][1], rel=0.02)
