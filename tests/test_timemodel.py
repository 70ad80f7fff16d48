"""The time model's formulas, on the shipped Qwen3 configs and hand-made parameters."""

from __future__ import annotations

import pytest

from gacost.advisor import time_model
from gacost.advisor.time_model import GpuRates, TimeParams, TrainSetup
from gacost.base import gpu_table, models
from gacost.base.job import LINEAR_MODULES
from gacost.base.records import ModelArch


def _arch(name: str) -> ModelArch:
    model, cfg = models.load_model_config(name)
    return models.model_arch(model, cfg)


def _setup(seq: int = 512, gc: bool = True, method: str = "lora") -> TrainSetup:
    return TrainSetup(method, 16, LINEAR_MODULES, seq, "bf16", gc)


RATES = GpuRates(flops=100e12, bandwidth=1e12)


def test_flops_match_the_research_worked_numbers() -> None:
    arch = _arch("Qwen/Qwen3-1.7B")
    # perfmodel research, Qwen3-1.7B r16 all-linear s512: ~10.1 GFLOP/token with GC, ~7.2 without
    assert time_model.flops_per_token(arch, _setup()) == pytest.approx(10.1e9, rel=0.02)
    assert time_model.flops_per_token(arch, _setup(gc=False)) == pytest.approx(7.2e9, rel=0.02)
    full = time_model.flops_per_token(arch, _setup(method="full", gc=False))
    assert full > time_model.flops_per_token(arch, _setup(gc=False))


def test_weight_traffic_is_forward_recompute_backward() -> None:
    arch = _arch("Qwen/Qwen3-1.7B")
    # research: B_w = 2 B x (2N + N_dec) = 9.70 GB per micro-step with GC
    assert time_model.weight_traffic_bytes(arch, _setup()) == pytest.approx(9.70e9, rel=0.01)
    no_gc = time_model.weight_traffic_bytes(arch, _setup(gc=False))
    assert no_gc < time_model.weight_traffic_bytes(arch, _setup())
    assert time_model.weight_traffic_bytes(arch, _setup(method="qlora")) > no_gc


def test_smooth_max_runs_from_sum_to_max() -> None:
    assert time_model.smooth_max(3.0, 4.0, 1.0) == pytest.approx(7.0)
    assert time_model.smooth_max(3.0, 4.0, 2.0) == pytest.approx(5.0)
    assert time_model.smooth_max(3.0, 4.0, 200.0) == pytest.approx(4.0, rel=1e-3)
    assert time_model.smooth_max(0.0, 0.0, 4.0) == 0.0


def test_gpu_bound_micro_step_is_linear_in_m() -> None:
    costs = time_model.work_costs(_arch("Qwen/Qwen3-8B"), _setup(2048))
    params = TimeParams(host_s_per_layer=1e-9, efficiency=0.3, kernel_s_per_layer=1e-3)
    t = [time_model.micro_step_seconds(costs, RATES, params, m) for m in (1, 2, 4)]
    assert t[2] - t[1] == pytest.approx(2 * (t[1] - t[0]), rel=1e-6)
    part = time_model.micro_step(costs, RATES, params, 1)
    # efficiency eta(w) = eta_max w / (w + P tau): the fixed term is L tau / eta_max
    assert part.fixed == pytest.approx(36 * 1e-3 / 0.3)
    assert t[0] == pytest.approx(part.traffic + part.compute + part.fixed, rel=1e-6)


def test_host_bound_micro_step_is_flat_and_update_adds_the_optimizer() -> None:
    arch = _arch("Qwen/Qwen3-1.7B")
    costs = time_model.work_costs(arch, _setup())
    params = TimeParams(host_s_per_layer=0.013, efficiency=0.3, kernel_s_per_layer=1e-4)
    fast = GpuRates(flops=1000e12, bandwidth=5e12)
    t1, t4 = (time_model.micro_step_seconds(costs, fast, params, m) for m in (1, 4))
    assert t1 == pytest.approx(0.013 * 28, rel=0.01)
    assert t4 == pytest.approx(t1, rel=0.05)
    assert time_model.host_share(costs, fast, params, 1) > 0.95
    upd = time_model.update_seconds(costs, fast, params, 1, 4)
    assert upd == pytest.approx(4 * t1 + time_model.optimizer_seconds(costs, fast))
    no_gc = time_model.work_costs(arch, _setup(gc=False))
    assert time_model.micro_step(no_gc, fast, params, 1).host == pytest.approx(0.75 * 0.013 * 28)


def test_gpu_rates_need_a_tensor_rate() -> None:
    t4 = gpu_table.gpu_specs()["T4"]
    assert time_model.gpu_rates(t4, "bf16") is None
    rates = time_model.gpu_rates(t4, "fp16")
    assert rates == GpuRates(flops=65e12, bandwidth=320e9)
