"""The attention core's rate: the shipped terms are the traces' fit, and the model charges the
core's FLOPs at that rate, not at the GEMMs' efficiency."""

from __future__ import annotations

from dataclasses import replace

import pytest
from bench_loader import load_bench

from gacost.advisor import predictor, time_model
from gacost.advisor.time_model import DEFAULT_PARAMS, GpuRates, TimeParams, TrainSetup
from gacost.base import gpu_table

attention_rate = load_bench("attention_rate")
ATTENTION = ("q_proj", "k_proj", "v_proj", "o_proj")


def test_the_shipped_terms_are_the_fit_over_the_committed_traces() -> None:
    fit = attention_rate.fit(attention_rate.rows())
    assert fit["points"] >= 70
    assert DEFAULT_PARAMS.attention_best_efficiency == pytest.approx(
        fit["attention_best_efficiency"], rel=0.005)
    assert DEFAULT_PARAMS.attention_shape_x0 == pytest.approx(fit["attention_shape_x0"],
                                                              rel=0.005)
    assert DEFAULT_PARAMS.attention_rows_y0 == pytest.approx(fit["attention_rows_y0"], rel=0.005)
    assert fit["log_rms"] < 0.15


def _costs(seq: int) -> time_model.WorkCosts:
    arch = predictor.arch_for("Qwen/Qwen2.5-0.5B")
    assert arch is not None
    return time_model.work_costs(arch, TrainSetup("lora", 16, ATTENTION, seq, "bf16", True))


def test_the_rate_rises_with_sequence_head_width_and_rows() -> None:
    rates = GpuRates(flops=800e12, bandwidth=3e12,
                     attention_rows_y0=DEFAULT_PARAMS.attention_rows_y0)
    short, long = _costs(512), _costs(4096)
    assert (time_model.attention_efficiency(short, rates, 1)
            < time_model.attention_efficiency(short, rates, 16)
            < time_model.attention_efficiency(long, rates, 16)
            < DEFAULT_PARAMS.attention_best_efficiency)
    # the terms of the model before 2026-12-07: the core at the GEMMs' efficiency
    old = replace(short, terms=replace(DEFAULT_PARAMS, attention_shape_x0=0.0))
    assert time_model.attention_efficiency(old, rates, 16) == 0.0


def test_the_core_is_charged_at_its_rate_and_the_rest_at_the_gemms() -> None:
    costs = _costs(2048)
    rates = GpuRates(flops=800e12, bandwidth=3e12, attention_rows_y0=1.5e4)
    params = TimeParams(host_s_per_launch=1e-9, efficiency=0.9, gpu_s_per_launch=1e-6)
    m = 4
    tokens = m * 2048
    shape = tokens * costs.hidden
    eta = 0.9 * shape / (shape + costs.terms.gemm_shape_w0)
    attention = costs.attention_flops_per_token
    expected = ((costs.flops_per_token - attention) * tokens / (800e12 * eta)
                + attention * tokens / (800e12 * time_model.attention_efficiency(costs, rates, m)))
    assert time_model.micro_step(costs, rates, params, m).compute == pytest.approx(expected)
    assert 0 < attention < costs.flops_per_token


def test_a_gpu_with_fewer_sms_fills_at_fewer_rows() -> None:
    specs = gpu_table.gpu_specs()
    h100, l4 = (time_model.gpu_rates(specs[g], "bf16") for g in ("H100-SXM", "L4"))
    assert h100 is not None and l4 is not None
    assert l4.attention_rows_y0 < h100.attention_rows_y0
    assert h100.attention_rows_y0 == pytest.approx(
        DEFAULT_PARAMS.attention_rows_y0 * specs["H100-SXM"].sm_count / 132)
