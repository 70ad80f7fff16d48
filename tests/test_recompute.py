"""The checkpointed recompute's GEMMs: the time model's count against a real backward.

A tiny model of each layer layout (bench/recompute_gemms.py builds it from the shipped config,
wraps it with PEFT and checkpoints it as TRL does, non-reentrant) runs one backward with and
one without checkpointing on the CPU; the weight matrices multiplied in the first and not in the
second are the recompute's, and the model's ``recompute_linear_params`` must name the same.
"""

from __future__ import annotations

import pytest
from bench_loader import load_bench

from gacost.advisor import kernel_counts, predictor, time_model

recompute_gemms = load_bench("recompute_gemms")
ATTENTION = recompute_gemms.ATTENTION
ALL_LINEAR = recompute_gemms.ALL_LINEAR


@pytest.mark.parametrize(("family", "method", "targets"), [
    ("llama", "lora", ATTENTION),  # down_proj frozen and last: not re-run
    ("llama", "lora", ALL_LINEAR),  # lora_B on down_proj saves its input: re-run
    ("qwen3", "full", ALL_LINEAR),  # down_proj's input is saved before it runs: not re-run
    ("gemma2", "lora", ATTENTION),  # post_feedforward_layernorm saves down_proj's output
    ("phi3", "full", ALL_LINEAR),  # fused qkv and gate_up, down_proj last
])
def test_the_modelled_recompute_matches_the_counted_backward(
        family: str, method: str, targets: tuple[str, ...]) -> None:
    counted = recompute_gemms.counted_recompute_params(family, method, targets)
    assert counted == recompute_gemms.modelled_recompute_params(family, method, targets)


def test_an_unwrapped_down_proj_leaves_the_recompute_and_its_flops() -> None:
    arch = predictor.arch_for("mistralai/Mistral-7B-v0.3")
    assert arch is not None
    attention = time_model.TrainSetup("lora", 32, ATTENTION, 2048, "bf16", True)
    every = time_model.TrainSetup("lora", 32, ALL_LINEAR, 2048, "bf16", True)
    down = arch.hidden_size * arch.intermediate_size
    assert kernel_counts.recompute_skipped_params(arch, attention) == down
    assert kernel_counts.recompute_skipped_params(arch, every) == 0
    layers = arch.num_hidden_layers
    assert time_model.recompute_linear_params(arch, attention) == layers * (
        arch.layer_linear_params - down)
    # the recompute's two FLOPs per parameter and token, and its weight reads, go with it
    no_gc = time_model.TrainSetup("lora", 32, ATTENTION, 2048, "bf16", False)
    extra = (time_model.flops_per_token(arch, attention)
             - time_model.flops_per_token(arch, no_gc))
    lora = 2 * time_model.trainable_params(arch, attention)
    attn_core = layers * 2 * 2048 * arch.query_width
    assert extra == pytest.approx(2 * layers * (arch.layer_linear_params - down)
                                  + lora + attn_core)
    weights = (time_model.weight_traffic_bytes(arch, attention)
               - time_model.weight_traffic_bytes(arch, no_gc))
    assert weights == pytest.approx(2 * layers * (arch.layer_linear_params - down))
    # without checkpointing nothing is recomputed
    assert time_model.recompute_linear_params(arch, no_gc) == 0
