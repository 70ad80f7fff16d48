"""Time model of one LoRA training update: pure functions of costs, GPU rates and parameters.

Version 2 (issue 12), built on what the H200 traces show (bench/H200-SWEEP.md). One micro-step
of ``m`` sequences (``T = m * s`` tokens) launches ``L(m)`` kernels
(:mod:`gacost.advisor.kernel_counts`, a structural count) and costs

* host time ``t_host = c * L(m) * f_host``: ``c`` seconds per launch is a property of the
  host CPU, VM and Python stack (fitted per calibration host, a prior elsewhere); ``f_host``
  the measured per-launch cost of the configuration relative to LoRA with checkpointing
  (QLoRA's bitsandbytes launches, Liger's Triton launches, no recompute hooks),
* GPU time ``t_gpu = F T / (P eta(T h)) + F_a T / (P eta_a) + (W + A T) / BW_stream + L(m) g``:
  GEMM FLOPs ``F`` per token at the GPU's sustained matmul rate ``P`` and an efficiency that
  grows with the GEMM rows x width, ``eta = eta_max * T h / (T h + W0)`` (``W0`` in
  proportion to the GPU's SM count: a smaller GPU fills with fewer tiles); the causal
  attention core's FLOPs ``F_a`` at its own traced rate (:func:`attention_efficiency`, by
  ``s x head_dim`` and ``m x s x heads``); the recompute of checkpointing multiplies every
  decoder linear again but a trailing ``down_proj`` no adapter wraps
  (:func:`recompute_linear_params`); the memory-bound
  kernels (casts, element-wise, norms, the loss: 50-66 % of GPU time on the H200) as bytes
  per token ``A`` by tensor shape at the GPU's stream bandwidth (the table's: the rate a
  streaming kernel reaches, on the H200 at full occupancy, data/GPUS.md), less the reads its
  L2 serves where those tensors fit (:func:`dram_share`), plus the frozen-weight bytes ``W``;
  and a GPU floor ``g`` per launched kernel (tiny kernels cost their launch latency),

and the host and GPU overlap (the host queues kernels ahead of the GPU):
``t_micro = (t_host**p + t_gpu**p) ** (1/p)``, a smooth maximum. One update is
``k * t_micro + t_opt`` (optimizer step: host time per layer plus the bytes of the
trainable state over the bandwidth).

``W0`` and ``A``'s coefficients come from the H200 sweep's traces (``bench/model_v2.py``
derives them, and ``g``'s prior; bench/MODEL.md); ``P`` and ``BW_stream`` from the sourced
GPU table. Fixed terms, measured or assumed (one frozen :class:`TimeModelParams`, the shipped
:data:`DEFAULT_PARAMS`; a bench varies them with :func:`dataclasses.replace`); free
parameters (:class:`TimeParams`): ``c`` (host), ``eta_max`` (GPU), ``g`` (global).

Data parallel over ``N`` GPUs of one node (``m`` per GPU) adds, once per update, the ring
all-reduce of the trainable gradients: ``2(N-1)/N * bytes / link_bw + 2(N-1) * latency``
(:func:`comm_seconds`; a prior per interconnect, not fitted).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from gacost.advisor import kernel_counts
from gacost.base import gpu_table
from gacost.base.records import GpuSpec, ModelArch

# launches are counted at these micro-batches and interpolated in log2(m) between them
LAUNCH_GRID = tuple(2**i for i in range(10))
# --- counted facts of the data formats and the hardware: not terms a variant of the model
# changes (the memory model shares QLORA_BYTES_PER_PARAM); the terms: TimeModelParams -------
# AdamW per trained parameter: reads param, grad, m, v and writes param, m, v, each in the
# trained dtype (trainable_dtype_bytes): 28 B for LoRA's fp32 adapters, 14 B for a bf16 full
# fine-tune (run 20's op table: the fused AdamW of SmolLM2-1.7B's 1.71 B bf16 parameters took
# 10.5 ms on an H100, 2.3 TB/s at 14 B; 28 B would be 4.6 TB/s, above its peak)
ADAM_ACCESSES = 7.0
QLORA_BYTES_PER_PARAM = 0.5 + 4.0 / 64 / 4  # NF4 + double-quantised absmax per 64-block
DEQUANT_BYTES_PER_PARAM = 4.0  # bf16 tile written and read back per pass (QLoRA)
# LoRA's adapter path, per wrapped linear module (PEFT's LoRA Linear.forward with fp32 adapter
# weights under the Trainer's bf16 autocast): bytes read + written per element of the module's
# input (width ``in``) and of its output (width ``out``), as (each forward pass, the backward).
# Counted from the code and checked op by op against the traces (bench/MODEL.md, "LoRA by
# input and output width"); not fitted. A fused module (Phi-3's qkv_proj) reads its input
# once and writes the parts' outputs (kernel_counts.wrapped_modules).
# Element-wise, input side: the cast to the adapter's fp32 (2 + 4) and autocast's cast back
# to bf16 for lora_A (4 + 2); backward: the two casts' gradients (6 + 6) and the input's
# gradient added to the base layer's (2 + 2 + 2).
LORA_IN_BYTES = (12.0, 18.0)
# Element-wise, output side: lora_B's output times the scaling (2 + 2) and its sum with the
# base layer's output (2 + 2 + 2); backward: the gradient times the scaling (2 + 2).
LORA_OUT_BYTES = (10.0, 4.0)
# LoRA dropout > 0 on the fp32 input: the fused kernel reads it (4) and writes the output (4)
# and a bool mask (1); the backward reads the output's gradient (4) and the mask (1) and
# writes the input's gradient (4).
DROPOUT_BYTES_PER_INPUT = (4.0 + 4.0 + 1.0, 4.0 + 1.0 + 4.0)
# lora_A and lora_B are rank-r GEMMs: 2r FLOPs per bf16 element moved, far under any GPU's
# FLOPs per byte, so they take the time of their bytes at the stream rate (traces: the GEMM
# class's time less these bytes runs at the rate of the frozen GEMMs). Input side: A reads
# the input (2); backward: A's weight gradient reads it (2) and its input gradient writes one
# (2). Output side: B writes the output (2); backward: B's weight gradient and the gradient
# into A's output each read the output's gradient (2 + 2).
LORA_GEMM_BYTES = (2.0, 4.0)
# L2 bandwidth per SM and clock: NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020),
# "5120 Bytes/clk" of L2 read bandwidth on 108 SMs; a GPU's L2 rate is this x its SMs x its
# boost clock (the table's sm_count and boost_clock_mhz). 12.4 TB/s on the H200, 5.6 on the
# L4, 3.0 on the T4.
L2_BYTES_PER_CLOCK_PER_SM = 5120 / 108
BF16_KERNEL_BYTES = 4.0  # bytes per element a bf16 element-wise kernel touches (in + out)
LORA_KERNEL_BYTES = 8.0  # ... a kernel on a LoRA input's fp32 copy (fp32 in + out)
# The memory-bound kernels of one decoder layer's forward, counted from the Hugging Face
# implementations (Llama, Qwen2/3, Mistral, Gemma-2, Phi-3; eager element-wise ops, sdpa
# attention): bytes read + written per element of the tensor each op runs on (bf16 2 B, fp32
# 4 B). Counted, not fitted; one fitted scale (TimeModelParams.act_bytes_scale) turns them
# into the time of every pass. RMSNorm: upcast to fp32 (2 + 4), square (4 + 4), row mean (4),
# scale by the reciprocal root (4 + 4), downcast (4 + 2), weight (2 + 2).
RMSNORM_BYTES = 36.0
RESIDUAL_ADD_BYTES = 6.0  # two bf16 reads, one write; two per layer
# rotary embedding on each query and key element: the negated half (2), its concatenation
# (2 + 2), the cos and sin products (4 + 4) and their sum (6)
ROTARY_BYTES = 20.0
# attention's layout: query, key and value into the kernel's layout, its output back (a copy
# each: 2 + 2)
LAYOUT_COPY_BYTES = 4.0
GATING_BYTES = 4.0 + 6.0  # SiLU of the gate (2 + 2) and its product with the up projection
# fused projections (Phi-3's qkv_proj, gate_up_proj): the forward takes its parts as views
# (no bytes); the backward assembles their gradients (a cat for gate_up, zero-filled slices and
# their sums for qkv), which the layer scale charges per pass like the other counted bytes.
# Measured, not counted: Phi-3-mini built as Phi-3 and as a Llama of the same sizes, one
# more sequence per micro-step cost 4.80 ms more on the H200 and 5.08 on an H100 where 8 B
# here gave 8.93 and 10.65 (runs 7 and 19, bench/MODEL.md "Memory-bound work on two Hopper
# GPUs"): x0.54 and x0.48 of 8
FUSED_SPLIT_BYTES = 4.0


@dataclass(frozen=True)
class TimeModelParams:
    """The time model's fixed terms: derived from the H200 traces, measured, or assumed, and
    not fitted per profile (the fitted parameters are :class:`TimeParams`).

    One frozen, hashable value: the model functions take it as ``terms`` (default
    :data:`DEFAULT_PARAMS`, the shipped terms), :class:`WorkCosts` carry the terms they were
    priced with, a bench builds a variant with :func:`dataclasses.replace` (``bench/model_v2.py``
    re-derives the trace terms without a held-out workload), and the saved reference fit is
    keyed on the values (:func:`gacost.advisor.predictor.model_constants`).
    """

    overlap: float = 4.0
    """Smooth-max exponent between host and GPU time: the value with the smallest errors in a
    scan over p (bench/MODEL.md, "Time per update", combine; `bench/heldout_user_runs.py
    --overlap`)."""
    model_sd: float = 0.06
    """Log sd of the time model's structural error on a workload it was not fitted to, added
    to every predicted band (:meth:`gacost.advisor.model_fit.TimeFit.joint`): the smallest
    value whose 90 % bands hold 90 % of the held-out measurements in every host group
    (host-bound, mixed, GPU-bound) over the H200 leave-one-workload-out splits and the user's
    runs of new workloads: with the memory-bound bytes counted by tensor width, 0.04 holds
    GPU-bound splits 22 of 27, 0.06 holds 26 of 27 (it was 0.08 before them: bench/band_scan.py,
    bench/MODEL.md "Bands")."""
    # --- GPU terms derived from the H200 sweep's traces (bench/model_v2.py, bench/MODEL.md) --
    gemm_shape_w0: float = 1.52e6
    """T x hidden at which GEMMs reach half their best efficiency (H200)."""
    gemm_shape_sms: int = 132
    """... on the H200's 132 SMs; a GPU with fewer SMs fills at smaller shapes."""
    attention_best_efficiency: float = 0.591
    """The attention core's best rate (its fused SDPA kernels, forward, recompute and backward)
    as a share of the GPU's sustained matmul rate, reached as ``s x head_dim`` and the query
    rows grow (:func:`attention_efficiency`). This and the two shape constants below are the
    least-squares fit of bench/attention_rate.py over every traced split's attention time (76
    splits of the H200 sweep, traced user runs and op tables, H200 and H100; log rms 0.10; 73
    until the op tables of run 27 gave 0.598, 5.62e4 and 1.53e4).
    Until 2026-12-07 the core ran at the frozen GEMMs' efficiency, where it was measured at
    0.08-0.63 of the matmul rate."""
    attention_shape_x0: float = 5.62e4
    """``s x head_dim`` at which the attention core reaches half its best rate (0: the
    frozen GEMMs' efficiency)."""
    attention_rows_y0: float = 1.47e4
    """``m x s x heads`` (query rows times heads: the blocks to spread over the SMs) at which
    the attention core reaches half its best rate, on the traced GPUs' 132 SMs (a GPU's is
    in proportion to its SM count, as the GEMMs' shape constant)."""
    act_bytes_scale: float = 2.080
    """Bytes at the stream rate that one forward's memory-bound kernels cost, per counted byte
    of a layer's forward kernels (:func:`layer_kernel_bytes`): the kernels' efficiency below
    the stream rate and what the count leaves out, in one number (fitted on the traced H200
    splits with the backward's weight below, bench/model_v2.py)."""
    backward_bytes_per_forward: float = 1.5
    """A layer's backward memory-bound time per forward's (the recompute is one more forward,
    at 1): the least-squares value over the traced H200 splits, checkpointed and not (33
    rows; relative rms 0.0633 at 1.0, 0.0608 at 1.45-1.5, 0.0615 at 1.8). Until 2026-12-07
    every pass was charged alike, which gave the recompute a backward's share: the
    no-checkpointing twins of four GPU-bound splits on an H100 put the recompute at 65-75 %
    of that charge (bench/gc_twins.py, bench/MODEL.md "The recompute pass")."""
    act_bytes_lora_scale: float = 1.012
    """Time of the LoRA path's counted element-wise bytes (:data:`LORA_IN_BYTES`,
    :data:`LORA_OUT_BYTES`, :data:`DROPOUT_BYTES_PER_INPUT`) at the stream rate, per counted
    byte: its small kernels' efficiency below the stream rate (fitted with the scale
    above)."""
    # --- per-launch host cost relative to LoRA with checkpointing (H200 sweep, t/L per split)
    host_factor_qlora: float = 1.23
    """bitsandbytes' Python work per 4-bit linear: QLoRA's host seconds per launch over its
    LoRA twin's, run one after the other in their own processes on one host (six pairs of
    five workloads, 1.08-1.45; the geometric mean over workloads, ``bench/method_host.py``)."""
    host_factor_full: float = 1.04
    """A full fine-tune's host seconds per launch over its LoRA twin's, measured the same way
    (ten pairs of seven workloads, 0.99-1.10, log se 0.015; ``bench/method_host.py``)."""
    host_factor_liger: float = 1.6
    """Triton launches from Python: 47-53 us."""
    host_factor_compile: float = 1.21
    """Compiled graphs launch fewer, heavier kernels: 30.7 and 33.4 us per launch in the two
    compiled Qwen3-1.7B 4x1 runs against 26.4 us eager in the same session (mean ratio)."""
    host_factor_no_gc: float = 0.81
    """No checkpointing: the host-bound splits of the two no-GC workloads ran at 22.8 us
    (Qwen3-1.7B 1x4) and 31.5 us (Llama-3.2-1B 1x8) per launch against 33 us with GC
    (geometric mean)."""
    # --- memory-bound GPU time relative to bf16 LoRA of the same shapes (H200 traces, one
    # workload each) ---------------------------------------------------------------------------
    liger_other_factor: float = 0.55
    """Liger's fused kernels: 62 -> 34 ms per micro-step."""
    compile_other_factor: float = 0.21
    """torch.compile (Qwen3-1.7B 4x1, gacost calibrate --compile): other + copies 63.1 ->
    13.2 ms."""
    qlora_other_factor: float = 0.74
    """QLoRA as TRL builds it (w06): 456 ms against 617 predicted for LoRA."""
    prepare_kbit_other_factor: float = 1.21
    """QLoRA with prepare_model_for_kbit_training's fp32 upcasts (w07): 753 against 620."""
    # --- GPUs the table has no measured rate for ---------------------------------------------
    stream_fraction: float = 0.8
    """Stream/peak bandwidth where the table has no measured stream rate."""
    default_matmul_fraction: float = 0.75
    """Sustained/datasheet matmul rate where the table has neither."""
    # --- torch.compile, optimizer, LoRA dropout, L2 ------------------------------------------
    compile_seconds_per_layer: float = (148.9 + 164.0) / 2 / 28
    """torch.compile's compilation, once per run: 148.9 and 164.0 s for Qwen3-1.7B
    (28 layers) on the lent H200's host (bench/RESULTS.md, two runs), taken per layer; a
    profile's measured compile_seconds replaces it."""
    opt_host_s_per_layer: float = 6e-4
    """Optimizer step + Trainer bookkeeping per layer (prior, not fitted)."""
    dropout_host_launches: float = 2.0
    """LoRA dropout > 0 costs the host about two average launches per dropout kernel (PEFT's
    nn.Dropout module call, the autograd node, the output and mask allocations around one
    fused launch): ten back-to-back twins on lent H100 starts, dropout 0 and 0.05 in their own
    processes, five workloads in each order (run 28, bench/dropout_twins.py): 2.04 +- 0.49.
    It was 3.0 until the twenty-ninth session, from two single H200 pairs that were not back to
    back (shared/research/measurements-2026-12-03.md section 2; 3.0 and 3.7 on the twins'
    scale, their host moved 22 % within that hour)."""
    l2_read_share: float = 0.5
    """L2 residency of the memory-bound kernels (issue 19 item 4; bench/MODEL.md "L2"): a
    memory-bound kernel whose tensors fit in L2 reads what the kernel before it wrote from L2,
    not DRAM; its writes still reach DRAM. Counted structure, not fitted: an element-wise
    chain reads about as many bytes as it writes (unary ops read 1 and write 1 tensor, binary
    ops read 2, casts to fp32 read half what they write), so half the bytes are such reads."""


DEFAULT_PARAMS = TimeModelParams()  # the shipped terms (the saved reference fit's)


@dataclass(frozen=True)
class TrainSetup:
    """The job facts the models need, free of the job schema.

    ``chunked_loss``: the loss never materialises full fp32 logits (TRL >= 1.7 default).
    ``lora_dropout``: PEFT's dropout probability on the adapters' input (0: an identity).
    ``fused_adamw``: the optimizer is torch's fused AdamW (transformers' default ``optim``,
    ``adamw_torch_fused``, from torch 2.8 on), which updates in place; else the foreach one
    (``adamw_torch``), whose step allocates ``sqrt(v)`` out of place.
    """

    method: str
    lora_r: int
    lora_targets: tuple[str, ...]
    sequence_length: int
    precision: str
    gradient_checkpointing: bool
    chunked_loss: bool = True
    liger: bool = False
    torch_compile: bool = False
    prepare_for_kbit: bool = False
    lora_dropout: float = 0.0
    fused_adamw: bool = True


@dataclass(frozen=True)
class WorkCosts:
    """Per-token and per-micro-step work of one training setup on one model."""

    layers: int
    sequence_length: int
    flops_per_token: float
    weight_bytes: float
    trainable_params: float
    host_launch_factor: float  # host seconds per launch relative to LoRA with checkpointing
    compute_precision: str
    hidden: int = 0
    # the causal attention core's share of flops_per_token, and its sequence x head width
    attention_flops_per_token: float = 0.0
    attention_shape: float = 0.0
    attention_heads: int = 0
    act_bytes_per_token: float = 0.0
    # the same bytes by tensor shape: (bytes per token, bytes one kernel touches per token)
    act_parts: tuple[tuple[float, float], ...] = ()
    launches: tuple[float, ...] = ()  # per micro-step at LAUNCH_GRID micro-batches
    # host launch-equivalents per micro-step beyond the kernels (LoRA dropout's Python cost)
    extra_host_launches: float = 0.0
    trainable_dtype_bytes: float = 4.0  # of each trained parameter and its optimizer state
    terms: TimeModelParams = DEFAULT_PARAMS  # the fixed terms these costs were priced with

    def launches_at(self, m: int) -> float:
        """Kernels launched per micro-step of ``m`` sequences (log-linear between grid points)."""
        n = len(self.launches)
        if n <= 1:
            return self.launches[0] if n else 0.0
        x = min(math.log2(max(m, 1)), n - 1.0)
        i = min(int(x), n - 2)
        return self.launches[i] + (x - i) * (self.launches[i + 1] - self.launches[i])


@dataclass(frozen=True)
class GpuRates:
    """What the time model needs of a GPU: dense tensor FLOP/s and bytes/s."""

    flops: float
    bandwidth: float
    stream_bandwidth: float = 0.0
    gemm_shape_w0: float = 0.0  # T x hidden at half GEMM efficiency (0: the terms' H200 one)
    attention_rows_y0: float = 0.0  # m x s x heads at half attention rate (0: the terms')
    l2_bytes: float = 0.0  # L2 capacity (0: unknown, every byte from DRAM)
    l2_bandwidth: float = 0.0  # bytes/s of L2 reads (0: unknown)


@dataclass(frozen=True)
class TimeParams:
    """The fitted parameters of the time model (its fixed terms: :class:`TimeModelParams`)."""

    host_s_per_launch: float
    efficiency: float
    gpu_s_per_launch: float


@dataclass(frozen=True)
class MicroStep:
    """The parts of one micro-step, in seconds."""

    host: float
    traffic: float
    compute: float
    fixed: float
    attention: float = 0.0  # the attention core's part of ``compute``

    @property
    def gpu(self) -> float:
        """GPU-side time: memory traffic + GEMM compute + the per-launch floor."""
        return self.traffic + self.compute + self.fixed


def frozen_linear_params(arch: ModelArch) -> tuple[int, int]:
    """(decoder linear parameters, LM-head parameters): the weights multiplied per token."""
    return arch.num_hidden_layers * arch.layer_linear_params, arch.vocab_size * arch.hidden_size


def trainable_dtype_bytes(setup: TrainSetup) -> float:
    """Bytes of one trained parameter, and of its gradient and each Adam moment (kept in
    the parameter's dtype): LoRA's adapters are fp32; QLoRA's bf16, as TRL builds it
    (``SFTTrainer`` casts a quantized model's trainable adapter weights to bf16,
    trl/trainer/sft_trainer.py, after the QLoRA paper's section 3); a full fine-tune's are
    its weights', fp32 in fp16 and fp32 training (master weights), else bf16."""
    if setup.method == "full":
        return 4.0 if setup.precision in ("fp16", "fp32") else 2.0
    return 2.0 if setup.method == "qlora" else 4.0


def trainable_params(arch: ModelArch, setup: TrainSetup) -> int:
    """Parameters the optimizer updates (adapters, or all for a full fine-tune)."""
    if setup.method == "full":
        return arch.total_params
    return arch.lora_params(setup.lora_r, setup.lora_targets)


def flops_per_token(arch: ModelArch, setup: TrainSetup) -> float:
    """Training FLOPs per token of one micro-step (frozen base + adapters, or full), the
    attention core's (:func:`attention_flops_per_token`) included."""
    n_dec, n_head = frozen_linear_params(arch)
    n = n_dec + n_head
    ckpt = setup.gradient_checkpointing
    recompute = 2 * recompute_linear_params(arch, setup)
    attn = attention_flops_per_token(arch, setup)
    if setup.method == "full":
        return 6 * n + recompute + attn
    p_lora = trainable_params(arch, setup)
    base = 4 * n + recompute  # forward + input-gradient GEMMs (+ recompute)
    return base + attn + (8 if ckpt else 6) * p_lora


def attention_flops_per_token(arch: ModelArch, setup: TrainSetup) -> float:
    """FLOPs per token of the causal attention core (``QK^T`` and ``AV``, ``2 * 2 * s * d / 2``
    per token and layer in the forward) over the forward, the recompute with checkpointing,
    and the backward (two forwards)."""
    forward = arch.num_hidden_layers * 2 * setup.sequence_length * arch.query_width
    return float(forward * (4 if setup.gradient_checkpointing else 3))


def recompute_linear_params(arch: ModelArch, setup: TrainSetup) -> int:
    """Decoder linear parameters the checkpointed recompute multiplies again (0 without
    checkpointing): every layer's but a trailing ``down_proj`` the recompute stops before
    (:func:`gacost.advisor.kernel_counts.recompute_skipped_params`)."""
    if not setup.gradient_checkpointing:
        return 0
    skipped = kernel_counts.recompute_skipped_params(arch, setup)
    return arch.num_hidden_layers * (arch.layer_linear_params - skipped)


def weight_traffic_bytes(arch: ModelArch, setup: TrainSetup) -> float:
    """Bytes of frozen weights streamed from memory in one micro-step."""
    n_dec, n_head = frozen_linear_params(arch)
    # forward, backward, and the recompute's (checkpointing)
    dec = 2 * n_dec + recompute_linear_params(arch, setup)
    if setup.method == "qlora":
        per_dec = QLORA_BYTES_PER_PARAM + DEQUANT_BYTES_PER_PARAM
        return dec * per_dec + n_head * 2 * 4.0  # LM head upcast to fp32
    b = 4.0 if setup.precision == "fp32" else 2.0
    return (dec + n_head * 2) * b


def layer_kernel_bytes(arch: ModelArch) -> tuple[tuple[float, int], ...]:
    """The memory-bound kernels of one decoder layer's forward, counted by tensor width, as
    (bytes per token, width): the hidden state's norms and residual adds, the query and key
    rotary (and Qwen3's per-head norms), attention's layout copies, the MLP's gating on the
    intermediate width, and fused projections' split copies (Phi-3)."""
    fam = kernel_counts.structure(arch)
    h, inter = arch.hidden_size, arch.intermediate_size
    q, kv = arch.query_width, arch.kv_width
    parts = [(((fam.norms - fam.head_norms) * RMSNORM_BYTES + 2 * RESIDUAL_ADD_BYTES) * h, h),
             (ROTARY_BYTES * (q + kv), q + kv),
             (LAYOUT_COPY_BYTES * (2 * q + 2 * kv), q + 2 * kv),
             (GATING_BYTES * inter, inter)]
    if fam.head_norms:
        parts.append((fam.head_norms / 2 * RMSNORM_BYTES * (q + kv), q + kv))
    if fam.fused:
        fused_width = q + 2 * kv + 2 * inter
        parts.append((FUSED_SPLIT_BYTES * fused_width, fused_width))
    return tuple(parts)


def layer_passes(setup: TrainSetup, terms: TimeModelParams = DEFAULT_PARAMS) -> float:
    """A layer's memory-bound passes in one micro-step, in forwards: the forward, the recompute
    with checkpointing (one more forward) and the backward
    (``terms.backward_bytes_per_forward``)."""
    return (2 if setup.gradient_checkpointing else 1) + terms.backward_bytes_per_forward


def activation_parts(
    arch: ModelArch, setup: TrainSetup, terms: TimeModelParams = DEFAULT_PARAMS
) -> tuple[tuple[float, float], ...]:
    """Bytes the memory-bound kernels move per token of one micro-step, by tensor shape, as
    (bytes, bytes one kernel touches) per token: a layer's counted kernels
    (:func:`layer_kernel_bytes`) x ``terms.act_bytes_scale`` per layer and forward pass (a
    backward ``terms.backward_bytes_per_forward`` forwards), then each
    LoRA-wrapped module's input and output sides (its element-wise kernels' counted bytes x
    ``terms.act_bytes_lora_scale``, dropout's included, and its rank-r GEMMs' bytes);
    fused kernels move less. The two scales are the H200 traces' (bench/model_v2.py), L2
    residency taken out."""
    forwards = 2 if setup.gradient_checkpointing else 1  # the recompute is a forward
    passes = arch.num_hidden_layers * layer_passes(setup, terms)
    fused = 1.0
    if setup.method == "qlora":
        fused *= (terms.prepare_kbit_other_factor if setup.prepare_for_kbit
                  else terms.qlora_other_factor)
    if not setup.torch_compile:  # Liger fuses norms, SwiGLU and the loss, not the dropout
        fused *= terms.liger_other_factor if setup.liger else 1.0
    # compiled graphs fuse Liger's work and the dropout too
    compiled = terms.compile_other_factor if setup.torch_compile else 1.0
    def per_pass(counted: tuple[float, float]) -> float:
        return forwards * counted[0] + counted[1]

    dropout = per_pass(DROPOUT_BYTES_PER_INPUT) if setup.lora_dropout > 0 else 0.0
    parts = [(passes * terms.act_bytes_scale * b * fused * compiled, BF16_KERNEL_BYTES * w)
             for b, w in layer_kernel_bytes(arch)]
    layers, scale = arch.num_hidden_layers, terms.act_bytes_lora_scale
    for w_in, w_out in lora_module_widths(arch, setup):
        elementwise_in = scale * (per_pass(LORA_IN_BYTES) * fused + dropout) * compiled
        elementwise_out = scale * per_pass(LORA_OUT_BYTES) * fused * compiled
        parts.append((layers * w_in * (elementwise_in + per_pass(LORA_GEMM_BYTES)),
                      LORA_KERNEL_BYTES * w_in))
        parts.append((layers * w_out * (elementwise_out + per_pass(LORA_GEMM_BYTES)),
                      BF16_KERNEL_BYTES * w_out))
    return tuple(parts)


def activation_bytes_per_token(
    arch: ModelArch, setup: TrainSetup, terms: TimeModelParams = DEFAULT_PARAMS
) -> float:
    """Bytes the memory-bound kernels move per token of one micro-step (all shapes)."""
    return sum(b for b, _ in activation_parts(arch, setup, terms))


def lora_input_width_list(arch: ModelArch, setup: TrainSetup) -> tuple[int, ...]:
    """The input width of each LoRA-wrapped linear of one layer (none for a full fine-tune)."""
    if setup.method == "full":
        return ()
    width = {"q_proj": arch.hidden_size, "k_proj": arch.hidden_size, "v_proj": arch.hidden_size,
             "o_proj": arch.query_width, "gate_proj": arch.hidden_size, "up_proj": arch.hidden_size,
             "down_proj": arch.intermediate_size}
    return tuple(width.get(t, arch.hidden_size) for t in setup.lora_targets)


def lora_module_widths(arch: ModelArch, setup: TrainSetup) -> tuple[tuple[int, int], ...]:
    """(input width, output width) of each LoRA-wrapped module of one layer: a fused module
    (Phi-3's ``qkv_proj``) reads one input and writes its parts' outputs (none for a full
    fine-tune)."""
    h, inter, q, kv = (arch.hidden_size, arch.intermediate_size, arch.query_width,
                       arch.kv_width)
    shape = {"q_proj": (h, q), "k_proj": (h, kv), "v_proj": (h, kv), "o_proj": (q, h),
             "gate_proj": (h, inter), "up_proj": (h, inter), "down_proj": (inter, h)}
    return tuple((shape[parts[0]][0], sum(shape[p][1] for p in parts))
                 for _, parts in kernel_counts.wrapped_modules(arch, setup))


def lora_input_widths(arch: ModelArch, setup: TrainSetup) -> int:
    """Sum of the input widths of the LoRA-wrapped linears of one layer (0 for a full
    fine-tune)."""
    return sum(lora_input_width_list(arch, setup))


def stream_rate(rates: GpuRates, terms: TimeModelParams = DEFAULT_PARAMS) -> float:
    """Bytes per second a memory-bound kernel streams at on ``rates``' GPU: the measured stream
    rate, else ``terms.stream_fraction`` of the datasheet bandwidth."""
    return rates.stream_bandwidth or rates.bandwidth * terms.stream_fraction


def dram_share(
    rates: GpuRates, footprint: float, terms: TimeModelParams = DEFAULT_PARAMS
) -> float:
    """Share of a memory-bound kernel's stream time it still costs when it touches
    ``footprint`` bytes: the reads of what the kernel before wrote (``terms.l2_read_share``)
    come from L2 where the tensors fit (in proportion where they do not), at the L2 rate
    instead of DRAM's. 1 on a GPU without L2 facts."""
    stream = stream_rate(rates, terms)
    if rates.l2_bytes <= 0 or rates.l2_bandwidth <= stream or footprint <= 0:
        return 1.0
    hit = min(1.0, rates.l2_bytes / footprint)
    return 1.0 - terms.l2_read_share * hit * (1.0 - stream / rates.l2_bandwidth)


def host_factor(setup: TrainSetup, terms: TimeModelParams = DEFAULT_PARAMS) -> float:
    """Host seconds per launch relative to LoRA with gradient checkpointing (measured)."""
    f = {"qlora": terms.host_factor_qlora, "full": terms.host_factor_full}.get(setup.method, 1.0)
    if setup.liger:
        f *= terms.host_factor_liger
    if setup.torch_compile:
        f *= terms.host_factor_compile
    return f if setup.gradient_checkpointing else f * terms.host_factor_no_gc


@functools.lru_cache(maxsize=256)
def work_costs(
    arch: ModelArch, setup: TrainSetup, terms: TimeModelParams = DEFAULT_PARAMS
) -> WorkCosts:
    """The cost terms of ``setup`` on ``arch`` priced with ``terms`` (cached: pure in its
    frozen, hashable arguments)."""
    compiled = kernel_counts.COMPILE_RATIO if setup.torch_compile else 1.0
    launches = tuple(
        compiled * sum(kernel_counts.microstep_parts(
            arch, setup, m, liger=setup.liger, prepare_for_kbit=setup.prepare_for_kbit,
        ).values())
        for m in LAUNCH_GRID
    )
    return WorkCosts(
        layers=arch.num_hidden_layers,
        sequence_length=setup.sequence_length,
        flops_per_token=flops_per_token(arch, setup),
        weight_bytes=weight_traffic_bytes(arch, setup),
        trainable_params=float(trainable_params(arch, setup)),
        trainable_dtype_bytes=trainable_dtype_bytes(setup),
        host_launch_factor=host_factor(setup, terms),
        compute_precision="fp16" if setup.method == "qlora" else setup.precision,
        hidden=arch.hidden_size,
        attention_flops_per_token=attention_flops_per_token(arch, setup),
        attention_shape=float(setup.sequence_length * arch.head_dim),
        attention_heads=arch.num_attention_heads,
        act_bytes_per_token=activation_bytes_per_token(arch, setup, terms),
        act_parts=activation_parts(arch, setup, terms),
        launches=launches,
        extra_host_launches=0.0 if setup.torch_compile else (
            (terms.dropout_host_launches - 1.0)
            * kernel_counts.dropout_kernels_per_microstep(arch, setup)),
        terms=terms,
    )


def compile_seconds(arch: ModelArch, terms: TimeModelParams = DEFAULT_PARAMS) -> float:
    """Prior seconds of torch.compile's compilation of ``arch`` (once per run)."""
    return terms.compile_seconds_per_layer * arch.num_hidden_layers


def gpu_rates(
    gpu: GpuSpec, precision: str, terms: TimeModelParams = DEFAULT_PARAMS
) -> GpuRates | None:
    """Sustained matmul rate and bandwidths of ``gpu`` for ``precision``, None without a rate.

    The rate is the table's sustained (maximum achievable) matmul figure for fp16/bf16 where
    it has one, else the datasheet tensor rate times its matmul fraction
    (``terms.default_matmul_fraction`` unknown); the stream bandwidth is the measured one,
    else ``terms.stream_fraction`` of the datasheet's."""
    peak = gpu.tensor_tflops(precision)
    if not peak:
        return None
    if precision in ("fp16", "bf16") and gpu.sustained_tflops:
        flops = gpu.sustained_tflops
    else:
        flops = peak * (gpu.matmul_fraction or terms.default_matmul_fraction)
    stream = gpu.stream_bandwidth_gbs or gpu.bandwidth_gbs * terms.stream_fraction
    # tiles to fill the GPU scale with its SM count (one wave of output tiles per SM)
    sms = gpu.sm_count / terms.gemm_shape_sms if gpu.sm_count else 1.0
    w0 = terms.gemm_shape_w0 * sms
    l2_rate = (L2_BYTES_PER_CLOCK_PER_SM * gpu.sm_count * gpu.boost_clock_mhz * 1e6
               if gpu.sm_count and gpu.boost_clock_mhz and gpu.l2_mb else 0.0)
    return GpuRates(flops=flops * 1e12, bandwidth=gpu.bandwidth_gbs * 1e9,
                    stream_bandwidth=stream * 1e9, gemm_shape_w0=w0,
                    attention_rows_y0=terms.attention_rows_y0 * sms,
                    l2_bytes=(gpu.l2_mb or 0.0) * 2**20 if l2_rate else 0.0,
                    l2_bandwidth=l2_rate)


def activation_seconds(costs: WorkCosts, rates: GpuRates, tokens: int) -> float:
    """Seconds of the memory-bound kernels' bytes for ``tokens`` tokens (L2 residency by
    tensor shape where the costs carry shapes and the GPU its L2)."""
    terms = costs.terms
    stream = stream_rate(rates, terms)
    if not costs.act_parts:
        return costs.act_bytes_per_token * tokens / stream
    return sum(b * tokens * dram_share(rates, f * tokens, terms)
               for b, f in costs.act_parts) / stream


def attention_efficiency(costs: WorkCosts, rates: GpuRates, m: int) -> float:
    """The attention core's rate at ``m`` sequences as a share of the sustained matmul rate:
    ``e_max * x / (x + x0) * y / (y + y0)`` with ``x = s x head_dim`` and
    ``y = m x s x heads`` (``terms.attention_*``; ``y0`` the GPU's); 0 where the terms or
    the costs have no attention shape (then it runs at the GEMMs' efficiency)."""
    terms = costs.terms
    x = costs.attention_shape
    y = m * costs.sequence_length * costs.attention_heads
    y0 = rates.attention_rows_y0 or terms.attention_rows_y0
    if terms.attention_shape_x0 <= 0 or x <= 0 or y <= 0:
        return 0.0
    return (terms.attention_best_efficiency * x / (x + terms.attention_shape_x0)
            * y / (y + y0))


def micro_step(costs: WorkCosts, rates: GpuRates, params: TimeParams, m: int) -> MicroStep:
    """The parts of one micro-step of ``m`` sequences."""
    tokens = m * costs.sequence_length
    launches = costs.launches_at(m)
    shape = tokens * costs.hidden
    w0 = rates.gemm_shape_w0 or costs.terms.gemm_shape_w0
    eta = params.efficiency * (shape / (shape + w0) if costs.hidden else 1.0)
    attention_eta = attention_efficiency(costs, rates, m)
    attention_flops = costs.attention_flops_per_token if attention_eta else 0.0
    attention = (attention_flops * tokens / (rates.flops * attention_eta)
                 if attention_flops else 0.0)
    return MicroStep(
        host=(params.host_s_per_launch * (launches + costs.extra_host_launches)
              * costs.host_launch_factor),
        traffic=costs.weight_bytes / rates.bandwidth + activation_seconds(costs, rates, tokens),
        compute=(costs.flops_per_token - attention_flops) * tokens / (rates.flops * eta)
        + attention,
        fixed=launches * params.gpu_s_per_launch,
        attention=attention,
    )


def smooth_max(a: float, b: float, p: float) -> float:
    """``(a**p + b**p) ** (1/p)``: the sum at p = 1, the maximum as p grows."""
    hi = max(a, b)
    if hi <= 0:
        return 0.0
    return float(hi * ((a / hi) ** p + (b / hi) ** p) ** (1.0 / p))


def micro_step_seconds(costs: WorkCosts, rates: GpuRates, params: TimeParams, m: int) -> float:
    """Seconds of one micro-step of ``m`` sequences."""
    part = micro_step(costs, rates, params, m)
    return smooth_max(part.host, part.gpu, costs.terms.overlap)


def host_share(costs: WorkCosts, rates: GpuRates, params: TimeParams, m: int) -> float:
    """How host-bound a micro-step is: ``t_host**p / (t_host**p + t_gpu**p)`` in [0, 1]."""
    part = micro_step(costs, rates, params, m)
    hi = max(part.host, part.gpu)
    if hi <= 0:
        return 0.0
    p = costs.terms.overlap
    a, b = (part.host / hi) ** p, (part.gpu / hi) ** p
    return float(a / (a + b))


def optimizer_seconds(costs: WorkCosts, rates: GpuRates) -> float:
    """Seconds of the optimizer step (host bookkeeping + state traffic at the stream rate,
    as every memory-bound kernel's); a prior, not fitted."""
    return costs.terms.opt_host_s_per_layer * costs.layers + optimizer_traffic_seconds(
        costs, rates)


def optimizer_traffic_seconds(costs: WorkCosts, rates: GpuRates) -> float:
    """The GPU's part of the optimizer step: AdamW's state traffic at the stream rate."""
    return (ADAM_ACCESSES * costs.trainable_dtype_bytes * costs.trainable_params
            / stream_rate(rates, costs.terms))


def update_seconds(
    costs: WorkCosts, rates: GpuRates, params: TimeParams, m: int, k: int
) -> float:
    """Seconds per optimizer update for split ``m x k``."""
    return k * micro_step_seconds(costs, rates, params, m) + optimizer_seconds(costs, rates)


# --- data-parallel communication (one node, DDP over NCCL) -------------------------------


@dataclass(frozen=True)
class Link:
    """An intra-node GPU link as NCCL's ring all-reduce sees it: bus bandwidth and hop latency."""

    kind: str
    bandwidth: float  # bytes/s of all-reduce bus bandwidth per GPU
    latency: float  # seconds per ring step


# Conservative defaults of achieved NCCL all-reduce bus bandwidth (nccl-tests ``busbw``), not
# peak link rates: NVLink (V100 to H200, 130-450 GB/s measured) and PCIe Gen4/5 through the
# host (12-40 GB/s). See docs/multigpu.md.
LINKS = {
    "nvlink": Link("nvlink", 150e9, 10e-6),
    "pcie": Link("pcie", 12e9, 20e-6),
}
def interconnect_for(gpu: str) -> Link:
    """The default link between the GPUs of a multi-GPU instance of ``gpu``: the GPU
    table's ``interconnect`` column (NVLink/NVSwitch or Infinity Fabric), PCIe if unknown."""
    spec = gpu_table.gpu_specs().get(gpu)
    return LINKS["nvlink"] if spec is not None and spec.interconnect == "nvlink" else LINKS["pcie"]


def gradient_bytes(costs: WorkCosts, method: str, precision: str) -> float:
    """Bytes all-reduced per update: the trainable gradients.

    LoRA/QLoRA adapters train in fp32 (PEFT upcasts them): 4 bytes each. A full fine-tune
    reduces gradients in the parameters' dtype: 2 bytes in fp16/bf16, 4 in fp32.
    """
    per = 4.0 if method != "full" or precision == "fp32" else 2.0
    return costs.trainable_params * per


def allreduce_seconds(nbytes: float, world: int, link: Link) -> float:
    """Ring all-reduce of ``nbytes`` over ``world`` GPUs: ``2(N-1)/N * bytes / bw +
    2(N-1) * latency``; zero on one GPU."""
    if world <= 1:
        return 0.0
    steps = 2 * (world - 1)
    return steps / world * nbytes / link.bandwidth + steps * link.latency


def comm_seconds(
    costs: WorkCosts, method: str, precision: str, world: int, link: Link
) -> float:
    """Seconds per update of the gradient all-reduce (once per update: DDP skips it during
    gradient accumulation), taken as not overlapped with the backward (an upper bound)."""
    return allreduce_seconds(gradient_bytes(costs, method, precision), world, link)
