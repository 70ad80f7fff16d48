"""Placeholder performance and memory model (an analytic first cut, labelled "predicted").

Time per micro-step = host overhead + compute / (peak x efficiency(tokens)) + frozen-weight
traffic / bandwidth; per update = k micro-steps + an optimizer step. Memory = frozen weights
+ trainable state + checkpointed activations + one layer's activations + logits + workspace.
The constants are round numbers, not fits; a fitted model replaces them.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.records import GIB, GpuSpec, ModelArch

HOST_OVERHEAD_S = 0.15
PEAK_EFFICIENCY = 0.35
HALF_EFFICIENCY_TOKENS = 1024
OPTIMIZER_STEP_S = 0.01
CUDA_CONTEXT_GIB = 0.5
WORKSPACE_GIB = 1.0


@dataclass(frozen=True)
class TrainSetup:
    """The job facts the model needs, free of the job schema."""

    method: str
    lora_r: int
    lora_targets: tuple[str, ...]
    sequence_length: int
    precision: str
    gradient_checkpointing: bool


def weight_bytes_per_param(setup: TrainSetup) -> float:
    """Bytes of one frozen (or trained) weight as stored on the GPU."""
    if setup.method == "qlora":
        return 0.5 + 0.5 / 64 * 4  # NF4 plus fp32 absmax per 64-block (before double quant)
    return 4.0 if setup.precision == "fp32" else 2.0


def flops_per_token(arch: ModelArch, setup: TrainSetup) -> float:
    """Training FLOPs per token for one micro-step (frozen base + adapters, or full)."""
    n_dec = arch.num_hidden_layers * arch.layer_linear_params
    n_head = arch.vocab_size * arch.hidden_size
    n = n_dec + n_head
    attn_fwd = arch.num_hidden_layers * 2 * setup.sequence_length * (
        arch.num_attention_heads * arch.head_dim
    )
    ckpt = setup.gradient_checkpointing
    if setup.method == "full":
        return 6 * n + (2 * n_dec if ckpt else 0) + attn_fwd * (4 if ckpt else 3)
    p_lora = arch.lora_params(setup.lora_r, setup.lora_targets)
    base = 4 * n + (2 * n_dec if ckpt else 0)
    return base + attn_fwd * (4 if ckpt else 3) + (8 if ckpt else 6) * p_lora


def micro_step_seconds(arch: ModelArch, setup: TrainSetup, gpu: GpuSpec, m: int) -> float | None:
    """Predicted seconds of one micro-step of ``m`` sequences, None without a tensor rate."""
    peak = gpu.tensor_tflops("fp16" if setup.method == "qlora" else setup.precision)
    if not peak:
        return None
    tokens = m * setup.sequence_length
    efficiency = PEAK_EFFICIENCY * tokens / (tokens + HALF_EFFICIENCY_TOKENS)
    compute = flops_per_token(arch, setup) * tokens / (peak * 1e12 * efficiency)
    n_dec = arch.num_hidden_layers * arch.layer_linear_params
    passes = 2 * arch.total_params + (n_dec if setup.gradient_checkpointing else 0)
    traffic = passes * weight_bytes_per_param(setup) / (gpu.bandwidth_gbs * 1e9)
    return HOST_OVERHEAD_S + compute + traffic


def update_seconds(
    arch: ModelArch, setup: TrainSetup, gpu: GpuSpec, m: int, k: int
) -> float | None:
    """Predicted seconds per optimizer update for split m x k."""
    micro = micro_step_seconds(arch, setup, gpu, m)
    return None if micro is None else k * micro + OPTIMIZER_STEP_S


def peak_memory_gib(arch: ModelArch, setup: TrainSetup, m: int) -> float:
    """Predicted peak GPU memory (GiB) of a micro-step of ``m`` sequences, context included."""
    s, h = setup.sequence_length, arch.hidden_size
    act_bytes = 2 if setup.precision != "fp32" else 4
    weights = arch.total_params * weight_bytes_per_param(setup)
    if setup.method == "full":
        trainable = arch.total_params * 16.0
    else:
        trainable = arch.lora_params(setup.lora_r, setup.lora_targets) * 16.0
    layer_acts = 34 * s * m * h * act_bytes / 2
    if setup.gradient_checkpointing:
        activations = arch.num_hidden_layers * s * m * h * act_bytes + layer_acts
    else:
        activations = arch.num_hidden_layers * layer_acts
    logits = m * s * arch.vocab_size * 4.0
    total = weights + trainable + activations + logits
    return total / GIB + CUDA_CONTEXT_GIB + WORKSPACE_GIB
