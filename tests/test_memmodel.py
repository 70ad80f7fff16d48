"""The memory model's terms, on the shipped Qwen3 configs."""

from __future__ import annotations

import dataclasses

import pytest

from gacost.advisor import memory_model
from gacost.advisor.memory_model import MemParams
from gacost.advisor.time_model import TrainSetup
from gacost.base import models
from gacost.base.job import LINEAR_MODULES
from gacost.base.records import GIB, ModelArch


def _arch(name: str) -> ModelArch:
    model, cfg = models.load_model_config(name)
    return models.model_arch(model, cfg)


def _setup(seq: int = 512, gc: bool = True, method: str = "lora", precision: str = "bf16",
           chunked: bool = True) -> TrainSetup:
    return TrainSetup(method, 16, LINEAR_MODULES, seq, precision, gc, chunked)


def test_static_part_is_weights_plus_adapter_state() -> None:
    arch = _arch("Qwen/Qwen3-8B")
    costs = memory_model.memory_costs(arch, _setup())
    lora = arch.lora_params(16, LINEAR_MODULES)
    assert costs.static_bytes == arch.total_params * 2 + 16 * lora
    assert costs.static_bytes / GIB == pytest.approx(15.91, abs=0.01)
    fp32 = memory_model.memory_costs(arch, _setup(precision="fp32"))
    assert fp32.static_bytes == pytest.approx(arch.total_params * 4 + 16 * lora)
    qlora = memory_model.memory_costs(arch, _setup(method="qlora"))
    assert qlora.static_bytes < 0.6 * costs.static_bytes  # NF4 decoder, fp32 embeddings + head


def test_activations_with_and_without_checkpointing() -> None:
    arch = _arch("Qwen/Qwen3-1.7B")
    gc = memory_model.memory_costs(arch, _setup())
    layer = memory_model.layer_working_set_per_token(arch, _setup())
    # the adapters' own input copies: q, k, v, gate, up (2048 each), o (2048), down (6144),
    # and their rank-16 outputs
    widths = 6 * 2048 + 6144 + 7 * 16
    # RMSNorm's saved fp32 inputs: the layer's two norms and Qwen3's q (16 x 128) and k
    # (8 x 128) head norms
    norms = 4 * (2 * 2048 + 2048 + 1024)
    # the MLP's gate, up and activation outputs; attention's q, k (8 x 128), v, output
    assert layer == 2 * (3 * 6144 + 2 * 2048 + 2 * 1024 + widths) + norms
    llama = _arch("meta-llama/Llama-3.2-1B")  # no head norms
    # what saved-tensor hooks count on the CPU for one such layer, less its per-row
    # scalars (117,096 B; bench/MODEL.md "Saved tensors, counted")
    assert memory_model.layer_working_set_per_token(llama, _setup()) == (
        2 * (3 * 8192 + 2 * 2048 + 2 * 512 + 6 * 2048 + 8192 + 7 * 16) + 4 * 2 * 2048) == 116960
    # checkpointing: every layer's input held; the recomputed layer 1.86 times (its saved
    # tensors, its backward's gradients and the allocator's reserve) at the moment it runs
    assert gc.activation_bytes_per_token == 28 * 2048 * 2
    assert gc.recompute_bytes_per_token == pytest.approx(1.86 * layer)
    no_gc = memory_model.memory_costs(arch, _setup(gc=False))
    assert no_gc.activation_bytes_per_token == 28 * layer
    assert no_gc.recompute_bytes_per_token == 0
    assert no_gc.activation_bytes_per_token > 3 * (gc.activation_bytes_per_token
                                                   + gc.recompute_bytes_per_token)


def test_full_logits_cost_what_the_chunked_loss_saves() -> None:
    arch = _arch("Qwen/Qwen3-8B")
    chunked = memory_model.memory_costs(arch, _setup(2048))
    full = memory_model.memory_costs(arch, _setup(2048, chunked=False))
    params = MemParams(1.0, 0.0)
    extra = (memory_model.peak_reserved_gib(full, params, 4)
             - memory_model.peak_reserved_gib(chunked, params, 4))
    # bf16 logits + fp32 copy + fp32 gradient over 151936 entries for 8192 tokens
    assert extra == pytest.approx(8192 * (10 * 151936 - 6 * 4096) / GIB, rel=1e-9)
    assert extra > 11


def test_peak_is_linear_in_tokens() -> None:
    arch = _arch("Qwen/Qwen3-8B")
    costs = memory_model.memory_costs(arch, _setup(1024))
    params = MemParams(activation_scale=1.1, slack_gib=0.3)
    p1, p2, p4 = (memory_model.peak_reserved_gib(costs, params, m) for m in (1, 2, 4))
    assert p4 - p2 == pytest.approx(2 * (p2 - p1))
    base = costs.static_bytes * (1 + memory_model.FRAGMENTATION) / GIB + 0.3
    per_token = (costs.activation_bytes_per_token + costs.recompute_bytes_per_token)
    assert p1 - base == pytest.approx(1024 * (1.1 * per_token + costs.loss_bytes_per_token) / GIB)


def test_the_loss_backward_holds_its_tile_and_a_full_fine_tunes_head_gradient() -> None:
    """TRL's chunked loss: a [min(N, 4096), 32768] bf16 tile in its backward, and in a full
    fine-tune the LM head's gradient in fp32 plus the bf16 copy it returns (the census of
    2026-12-04: 1.16 GiB at each line for Qwen3-1.7B), beside every layer's saved tensors
    without checkpointing."""
    arch = _arch("Qwen/Qwen3-1.7B")
    params = MemParams(1.0, 0.0)
    full = memory_model.memory_costs(arch, _setup(1024, gc=False, method="full"))
    assert full.loss_transient_bytes == 6 * 151936 * 2048
    lora = memory_model.memory_costs(arch, _setup(1024, gc=False))
    assert lora.loss_transient_bytes == 0  # a frozen head has no weight gradient
    unchunked = memory_model.memory_costs(arch, _setup(1024, gc=False, method="full",
                                                       chunked=False))
    assert unchunked.loss_transient_bytes == unchunked.loss_tile_bytes_per_token == 0

    def moment(costs: memory_model.MemoryCosts, m: int) -> float:
        static = costs.static_bytes * (1 + memory_model.FRAGMENTATION) / GIB
        held = m * 1024 * (costs.activation_bytes_per_token + costs.loss_bytes_per_token) / GIB
        return memory_model.peak_reserved_gib(costs, params, m, k=4) - static - held

    # the tile grows with the tokens up to 4,096 of them
    assert moment(lora, 2) == pytest.approx(2048 * 32768 * 2 / GIB)
    assert moment(lora, 8) == pytest.approx(4096 * 32768 * 2 / GIB)
    assert moment(full, 2) == pytest.approx((6 * 151936 * 2048 + 2048 * 32768 * 2) / GIB)


def test_one_micro_step_makes_its_gradients_as_the_backward_frees_activations() -> None:
    """With k = 1 the gradients (in the static part) and the held activations compete; with
    more micro-steps the gradients of the first are held through the next ones."""
    arch = _arch("Qwen/Qwen2.5-0.5B")
    costs = memory_model.memory_costs(arch, _setup(512, method="full"))
    assert costs.gradient_bytes == 2 * arch.total_params
    params = MemParams(1.0, 0.0)
    for m in (16, 64):
        held = m * 512 * (costs.activation_bytes_per_token + costs.loss_bytes_per_token) / GIB
        many, one = (memory_model.peak_reserved_gib(costs, params, m, k) for k in (4, 1))
        assert many - one == pytest.approx(min(held, costs.gradient_bytes / GIB))
    assert memory_model.peak_reserved_gib(costs, params, 16, 0) == (
        memory_model.peak_reserved_gib(costs, params, 16, 2))  # 0: not known, as k > 1


def test_with_the_foreach_adamw_a_full_fine_tune_peaks_at_the_optimizer_step() -> None:
    # foreach AdamW takes sqrt(v) out of place: one bf16 buffer per trained parameter
    arch = _arch("Qwen/Qwen2.5-0.5B")
    full = dataclasses.replace(_setup(method="full"), fused_adamw=False)
    costs = memory_model.memory_costs(arch, full)
    assert costs.optimizer_bytes == 2 * arch.total_params
    params = MemParams(activation_scale=1.0, slack_gib=0.0)
    step = (costs.static_bytes * (1 + memory_model.FRAGMENTATION) + costs.optimizer_bytes) / GIB
    small, large = (memory_model.peak_reserved_gib(costs, params, m) for m in (1, 64))
    assert small == pytest.approx(step)  # one 512-token sequence holds less than the buffer
    assert large > step  # 64 sequences' activations hold more
    # a LoRA run's step buffer (fp32 adapters) is far below one sequence's activations
    lora = memory_model.memory_costs(arch, dataclasses.replace(_setup(), fused_adamw=False))
    assert lora.optimizer_bytes == 4 * arch.lora_params(16, LINEAR_MODULES)
    assert memory_model.peak_reserved_gib(lora, params, 1) > (
        lora.static_bytes * (1 + memory_model.FRAGMENTATION) + lora.optimizer_bytes) / GIB


def test_the_fused_adamw_steps_in_place() -> None:
    """transformers' default optimizer from torch 2.8 on allocates no sqrt(v): a full
    fine-tune's peak at a small micro-batch is its micro-step's, below the foreach step's."""
    arch = _arch("Qwen/Qwen2.5-0.5B")
    fused = memory_model.memory_costs(arch, _setup(method="full"))
    foreach = memory_model.memory_costs(
        arch, dataclasses.replace(_setup(method="full"), fused_adamw=False))
    assert fused.optimizer_bytes == 0.0
    assert dataclasses.replace(fused, optimizer_bytes=foreach.optimizer_bytes) == foreach
    params = MemParams(activation_scale=1.0, slack_gib=0.0)
    low, high = (memory_model.peak_reserved_gib(c, params, 1) for c in (fused, foreach))
    assert low < high
    assert low > fused.static_bytes * (1 + memory_model.FRAGMENTATION) / GIB


def test_a_full_fine_tune_keeps_every_linear_input_and_normalised_input() -> None:
    arch = _arch("Qwen/Qwen3-1.7B")
    lora = memory_model.layer_working_set_per_token(arch, _setup(method="lora"))
    full = memory_model.layer_working_set_per_token(arch, _setup(method="full"))
    widths = 6 * 2048 + 6144 + 7 * 16  # the adapters' input copies and outputs, none in full
    # the two norm outputs (q/k/v's and gate/up's input), down's input (6144), and each
    # norm's normalised input (two layer norms, Qwen3's q and k head norms): 2 B each;
    # 112,640 B in all, what saved-tensor hooks count on the CPU (112,808 B with per-row
    # scalars)
    assert full - (lora - 2 * widths) == 2 * (2 * 2048 + 6144 + 2 * 2048 + 2048 + 1024)
    assert full == 112640


def test_a_fused_qkv_keeps_its_whole_output_for_the_value() -> None:
    phi3 = _arch("microsoft/Phi-3-mini-4k-instruct")
    setup = TrainSetup("full", 0, (), 512, "bf16", False, True)
    as_llama = dataclasses.replace(phi3, model_type="llama")
    difference = (memory_model.layer_working_set_per_token(phi3, setup)
                  - memory_model.layer_working_set_per_token(as_llama, setup))
    assert difference == 2 * (3072 + 3072)  # the query's and one more key-width slice


def test_qlora_as_trl_builds_it_keeps_bf16_adapters_and_shares_their_input() -> None:
    arch = _arch("Qwen/Qwen3-8B")
    qlora, lora = _setup(method="qlora"), _setup()
    n = arch.lora_params(16, LINEAR_MODULES)
    assert memory_model.trainable_bytes(arch, qlora) == 8 * n  # bf16 weight, grad, m, v
    assert memory_model.trainable_bytes(arch, lora) == 16 * n
    # without dropout the bf16 adapters on one input save it once: q, k, v share the
    # attention's input and gate, up the MLP's (4096 wide), o and down read their own
    shared = (memory_model.layer_working_set_per_token(arch, lora)
              - memory_model.layer_working_set_per_token(arch, qlora))
    assert shared == 2 * (2 * 4096 + 4096)
    prepared = dataclasses.replace(qlora, prepare_for_kbit=True)  # fp32 stream: own copies
    assert (memory_model.layer_working_set_per_token(arch, prepared)
            - memory_model.layer_working_set_per_token(arch, lora)) == 2.0 * 2 * 4096


def test_the_recomputed_layer_is_smaller_with_trls_bf16_qlora_adapters() -> None:
    # the recomputed layer's multiple of its saved tensors: 1.86 where PEFT's cast of the
    # adapters' input copies (LoRA's fp32 adapters), 1.4 with the bf16 adapters TRL gives
    # QLoRA on its bf16 stream (bench/MODEL.md "The recomputed layer by adapter dtype");
    # prepare_model_for_kbit_training makes the stream fp32, so the cast copies again
    arch = _arch("Qwen/Qwen3-1.7B")
    qlora = dataclasses.replace(_setup(method="qlora"), lora_dropout=0.05)
    prepared = dataclasses.replace(qlora, prepare_for_kbit=True)
    for setup, multiple in ((_setup(), 1.86), (qlora, 1.4), (prepared, 1.86),
                            (_setup(method="full"), 1.86)):
        layer = memory_model.layer_working_set_per_token(arch, setup)
        costs = memory_model.memory_costs(arch, setup)
        assert costs.recompute_bytes_per_token == pytest.approx(multiple * layer)
    # so a checkpointed QLoRA peak grows by less per token than LoRA's beside it
    params = MemParams()
    per_token = {name: memory_model.peak_reserved_gib(memory_model.memory_costs(arch, s),
                                                      params, 8)
                 - memory_model.peak_reserved_gib(memory_model.memory_costs(arch, s),
                                                  params, 4)
                 for name, s in (("lora", dataclasses.replace(_setup(), lora_dropout=0.05)),
                                 ("qlora", qlora))}
    assert per_token["qlora"] < per_token["lora"]
