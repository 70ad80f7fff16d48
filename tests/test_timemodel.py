"""The time model's formulas, on the shipped Qwen3 configs and hand-made parameters."""

from __future__ import annotations

from dataclasses import replace

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
TERMS = time_model.DEFAULT_PARAMS


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


def test_gpu_bound_micro_step_grows_with_m_and_gemms_get_more_efficient() -> None:
    arch = _arch("Qwen/Qwen3-8B")
    costs = time_model.work_costs(arch, _setup(2048))
    params = TimeParams(host_s_per_launch=1e-12, efficiency=0.9, gpu_s_per_launch=1e-6)
    parts = [time_model.micro_step(costs, RATES, params, m) for m in (1, 2, 4)]
    # GEMM time per token falls as T x hidden grows: eta = eta_max T h / (T h + W0)
    per_token = [p.compute / (m * 2048) for p, m in zip(parts, (1, 2, 4), strict=True)]
    assert per_token[0] > per_token[1] > per_token[2]
    t = 2048 * arch.hidden_size
    eta = 0.9 * t / (t + TERMS.gemm_shape_w0)
    # the attention core at its own rate (tests/test_attention_rate.py), the rest at eta
    attention = costs.attention_flops_per_token * 2048 / (
        100e12 * time_model.attention_efficiency(costs, RATES, 1))
    assert parts[0].compute == pytest.approx(
        (costs.flops_per_token - costs.attention_flops_per_token) * 2048 / (100e12 * eta)
        + attention)
    # memory-bound bytes grow with the tokens; frozen weights are read once per micro-step
    weights = costs.weight_bytes / RATES.bandwidth
    stream = RATES.bandwidth * TERMS.stream_fraction  # RATES has no stream rate
    assert parts[1].traffic - weights == pytest.approx(2 * (parts[0].traffic - weights))
    assert parts[0].traffic == pytest.approx(weights + costs.act_bytes_per_token * 2048 / stream)
    # the GPU floor is one per launched kernel
    assert parts[0].fixed == pytest.approx(costs.launches_at(1) * 1e-6)
    t1 = time_model.micro_step_seconds(costs, RATES, params, 1)
    assert t1 == pytest.approx(parts[0].gpu, rel=1e-6)


def test_host_bound_micro_step_is_launches_times_cost_per_launch() -> None:
    arch = _arch("Qwen/Qwen3-1.7B")
    costs = time_model.work_costs(arch, _setup())
    params = TimeParams(host_s_per_launch=30e-6, efficiency=0.9, gpu_s_per_launch=1e-7)
    fast = GpuRates(flops=1000e12, bandwidth=5e12, stream_bandwidth=4e12)
    t1, t4 = (time_model.micro_step_seconds(costs, fast, params, m) for m in (1, 4))
    # Qwen3-1.7B all-linear LoRA with checkpointing: about 11,000 launches per micro-step
    assert 10_500 < costs.launches_at(1) < 12_500
    assert t1 == pytest.approx(30e-6 * costs.launches_at(1), rel=0.01)
    assert t4 == pytest.approx(30e-6 * costs.launches_at(4), rel=0.05)  # GPU still hidden
    assert time_model.host_share(costs, fast, params, 1) > 0.95
    upd = time_model.update_seconds(costs, fast, params, 1, 4)
    assert upd == pytest.approx(4 * t1 + time_model.optimizer_seconds(costs, fast))
    # fewer launches without checkpointing, each cheaper; QLoRA and Liger launches cost more
    no_gc = time_model.work_costs(arch, _setup(gc=False))
    assert no_gc.launches_at(1) < 0.8 * costs.launches_at(1)
    assert time_model.micro_step(no_gc, fast, params, 1).host == pytest.approx(
        30e-6 * no_gc.launches_at(1) * TERMS.host_factor_no_gc)
    liger = time_model.work_costs(arch, TrainSetup("lora", 16, LINEAR_MODULES, 512, "bf16",
                                                   True, liger=True))
    assert liger.launches_at(1) < costs.launches_at(1)
    assert liger.host_launch_factor == TERMS.host_factor_liger
    assert liger.act_bytes_per_token < costs.act_bytes_per_token


def test_attention_only_lora_moves_fewer_bytes_and_launches_less() -> None:
    arch = _arch("meta-llama/Llama-3.2-3B")
    attn = TrainSetup("lora", 8, ("q_proj", "k_proj", "v_proj", "o_proj"), 1024, "bf16", True)
    every = TrainSetup("lora", 8, LINEAR_MODULES, 1024, "bf16", True)
    a, e = time_model.work_costs(arch, attn), time_model.work_costs(arch, every)
    assert a.launches_at(8) < e.launches_at(8) and a.act_bytes_per_token < e.act_bytes_per_token
    assert time_model.lora_input_widths(arch, attn) == 4 * 3072
    assert time_model.lora_input_widths(arch, every) == 6 * 3072 + 8192


def test_gpu_rates_need_a_tensor_rate() -> None:
    t4 = gpu_table.gpu_specs()["T4"]
    assert time_model.gpu_rates(t4, "bf16") is None
    rates = time_model.gpu_rates(t4, "fp16")
    # the sourced sustained rate (24 of 65 TFLOP/s under the 70 W cap) and stream bandwidth
    # ... and GEMMs that fill its 40 SMs at 40/132 of the H200's shape
    w0 = TERMS.gemm_shape_w0 * 40 / 132
    # ... and an L2 of 4 MiB read at 5120 B/clk per 108 SMs x 40 SMs x 1590 MHz
    l2 = time_model.L2_BYTES_PER_CLOCK_PER_SM * 40 * 1590 * 1e6
    # ... and the attention core's rows that fill them the same way
    y0 = TERMS.attention_rows_y0 * (40 / 132)
    assert rates == GpuRates(flops=24e12, bandwidth=320e9, stream_bandwidth=239e9,
                             gemm_shape_w0=w0, attention_rows_y0=y0, l2_bytes=4 * 2**20,
                             l2_bandwidth=l2)
    unknown = replace(t4, sustained_tflops=None, stream_bandwidth_gbs=None, matmul_fraction=None,
                      sm_count=None)
    assert time_model.gpu_rates(unknown, "fp16") == GpuRates(
        flops=65e12 * 0.75, bandwidth=320e9, stream_bandwidth=320e9 * TERMS.stream_fraction,
        gemm_shape_w0=TERMS.gemm_shape_w0, attention_rows_y0=TERMS.attention_rows_y0)


def test_memory_bound_reads_that_fit_in_l2_cost_less_on_a_card_with_a_large_l2() -> None:
    """The published L4 and T4 stream at about the same rate (235 and 239 GB/s), but the
    L4's 48 MiB L2 holds a 512-token micro-step's tensors where the T4's 4 MiB does not."""
    arch = _arch("Qwen/Qwen3-1.7B")
    costs = time_model.work_costs(arch, _setup())
    specs = gpu_table.gpu_specs()
    l4, t4 = (time_model.gpu_rates(specs[g], "fp16") for g in ("L4", "T4"))
    assert l4 is not None and t4 is not None
    # the parts are the total, by shape: a layer's counted kernels by tensor width (Qwen3:
    # hidden, rotary, layout, gating, per-head norms) and two per wrapped linear (its input
    # and its output side)
    assert len(costs.act_parts) == (len(time_model.layer_kernel_bytes(arch))
                                    + 2 * len(LINEAR_MODULES))
    assert sum(b for b, _ in costs.act_parts) == pytest.approx(costs.act_bytes_per_token)
    small = time_model.dram_share(l4, 4 * arch.hidden_size * 512)
    # half the bytes are reads; from L2 they cost stream/L2 of a DRAM read
    assert small == pytest.approx(1 - 0.5 * (1 - l4.stream_bandwidth / l4.l2_bandwidth))
    # 2048 tokens: a hidden-width kernel touches 16 MiB, a quarter of it fits the T4's L2
    assert time_model.dram_share(t4, 4 * arch.hidden_size * 2048) == pytest.approx(
        1 - 0.5 * 0.25 * (1 - t4.stream_bandwidth / t4.l2_bandwidth))
    assert time_model.dram_share(t4, 1e12) == pytest.approx(1.0, abs=1e-4)  # nothing fits
    per_byte = [time_model.activation_seconds(costs, r, 2048) * r.stream_bandwidth
                / (costs.act_bytes_per_token * 2048) for r in (l4, t4)]
    assert per_byte[0] < 0.7 and per_byte[1] > 0.9
    # a GPU without L2 facts streams every byte
    bare = GpuRates(flops=1e14, bandwidth=3e11, stream_bandwidth=2.4e11)
    assert time_model.activation_seconds(costs, bare, 2048) == pytest.approx(
        costs.act_bytes_per_token * 2048 / 2.4e11)


def test_a_layers_memory_bound_bytes_follow_its_tensor_widths() -> None:
    """Counted by width: Qwen3-0.6B's attention is twice its hidden size and normalises each
    head's query and key; Phi-3 splits its fused projections; a full fine-tune has no LoRA
    inputs, so its memory-bound bytes are the layer's alone."""
    import dataclasses

    qwen = _arch("Qwen/Qwen3-0.6B")
    q = qwen.num_attention_heads * qwen.head_dim
    kv = qwen.num_key_value_heads * qwen.head_dim
    h, inter = qwen.hidden_size, qwen.intermediate_size
    assert q == 2 * h
    assert sum(b for b, _ in time_model.layer_kernel_bytes(qwen)) == pytest.approx(
        (2 * time_model.RMSNORM_BYTES + 2 * time_model.RESIDUAL_ADD_BYTES) * h
        + (time_model.ROTARY_BYTES + time_model.RMSNORM_BYTES) * (q + kv)
        + time_model.LAYOUT_COPY_BYTES * (2 * q + 2 * kv) + time_model.GATING_BYTES * inter)
    phi = _arch("microsoft/Phi-3-mini-4k-instruct")
    unfused = dataclasses.replace(phi, model_type="llama")
    extra = (sum(b for b, _ in time_model.layer_kernel_bytes(phi))
             - sum(b for b, _ in time_model.layer_kernel_bytes(unfused)))
    fused_width = phi.hidden_size * 3 + 2 * phi.intermediate_size  # 32 KV heads: q = kv = h
    assert extra == pytest.approx(time_model.FUSED_SPLIT_BYTES * fused_width)
    full = time_model.TrainSetup("full", 0, (), 512, "bf16", True)
    costs = time_model.work_costs(qwen, full)
    layer = sum(b for b, _ in time_model.layer_kernel_bytes(qwen))
    terms = time_model.DEFAULT_PARAMS  # forward, recompute (one more forward), backward
    assert costs.act_bytes_per_token == pytest.approx(
        (2 + terms.backward_bytes_per_forward) * qwen.num_hidden_layers
        * terms.act_bytes_scale * layer)


def test_adamw_moves_seven_accesses_of_the_trained_dtype_at_the_stream_rate() -> None:
    """Reads of param, grad, m and v and writes of param, m and v: 28 B per fp32 LoRA
    adapter weight, 14 B per bf16 parameter of a full fine-tune, 28 B with fp16's fp32
    master weights; at the stream rate, as every memory-bound kernel."""
    arch = _arch("Qwen/Qwen3-1.7B")
    rates = GpuRates(flops=100e12, bandwidth=2e12, stream_bandwidth=1e12)

    def traffic(setup: TrainSetup) -> float:
        costs = time_model.work_costs(arch, setup)
        return (time_model.optimizer_seconds(costs, rates)
                - TERMS.opt_host_s_per_layer * arch.num_hidden_layers)

    lora, full = _setup(), _setup(method="full")
    assert traffic(lora) == pytest.approx(
        28 * time_model.trainable_params(arch, lora) / 1e12)
    assert traffic(full) == pytest.approx(14 * arch.total_params / 1e12)
    assert traffic(replace(full, precision="fp16")) == pytest.approx(2 * traffic(full))
    qlora = replace(lora, method="qlora")
    assert traffic(qlora) == pytest.approx(traffic(lora) / 2)  # TRL's bf16 adapters
