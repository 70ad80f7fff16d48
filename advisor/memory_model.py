"""Peak GPU memory of one micro-step: pure functions of the setup, ``m`` and two fitted terms.

``peak_reserved = static + alpha * A_tok * T + loss_tok * T + moment + frag * static + slack``,
what the PyTorch caching allocator reserves (``torch.cuda.max_memory_reserved``), with

* ``static``: frozen weights (bf16/fp16 2 B, fp32 4 B, QLoRA NF4 decoder + bf16 embeddings and
  LM head as TRL loads them, fp32 after ``prepare_model_for_kbit_training``) plus the
  trainable part: 16 B/param for LoRA (fp32 adapter, gradient, Adam m and v), 8 B/param
  for QLoRA (TRL casts its adapters to bf16), a full fine-tune's gradient and moments in
  the weights' dtype,
* ``A_tok``: activation bytes per token; with gradient checkpointing the bf16 input of every
  decoder layer plus, while one layer is recomputed and back-propagated, a multiple of its
  working set (its saved tensors, its backward's gradients, the allocator's reserve:
  :func:`recompute_factor`, 1.86 where the adapters' input casts copy, 1.4 with TRL's bf16 QLoRA
  adapters on a bf16 stream); without, every
  layer's working set: the tensors autograd saves, counted
  (:func:`layer_working_set_per_token`; ``bench/saved_tensors_cpu.py`` checks the count
  against saved-tensor hooks on the CPU, within 0.2 % for Qwen3 and Llama layers),
* ``loss_tok``: TRL >= 1.7's chunked NLL keeps only hidden-size buffers per token; a full loss
  materialises the logits (2 B), their fp32 copy (4 B) and fp32 gradient (4 B) per vocab entry;
  the chunked loss's backward also holds its projection tile (:data:`LOSS_TILE_TOKENS`) and,
  in a full fine-tune, the LM head's weight gradient in fp32 beside the copy it returns in the
  weights' dtype (:func:`lm_head_gradient_bytes`): transients of the loss's moment, on top
  of every layer's saved tensors without checkpointing, in place of the recomputed layer's
  with it (whichever is larger),
* ``moment``: the larger of the recomputed layer's bytes and the loss backward's transients,
  which are not live at once; with ``k = 1`` the gradients in ``static`` and the held
  activations count as the larger of the two (:func:`peak_reserved_gib`),
* ``frag``: allocator fragmentation of the static part (2.5 %, from reserved - allocated on
  the H200 runs),
* the optimizer step's own peak: ``static (1 + frag) + opt_tmp + slack`` when that is higher
  (a full fine-tune at small ``m``) with PyTorch's foreach AdamW (``optim="adamw_torch"``,
  ``_multi_tensor_adam``), which takes ``sqrt(v)`` out of place, one buffer the size of the
  trainable parameters in their dtype, while weights, gradients and both moments are held;
  none with the fused AdamW, transformers' default from torch 2.8 on (``adamw_torch_fused``:
  one in-place kernel; a full fine-tune's peak is then in the backward, as the allocator
  history of one showed, bench/MODEL.md "What is live at the peak"),
* fitted: ``alpha`` (activation scale, global) and ``slack`` (GiB, per software stack).

The device also holds the CUDA context (:data:`CUDA_CONTEXT_GIB`), outside torch's counters.
"""

from __future__ import annotations

from dataclasses import dataclass

from gacost.advisor import kernel_counts
from gacost.advisor.time_model import (
    QLORA_BYTES_PER_PARAM,
    TrainSetup,
    lora_input_width_list,
    trainable_dtype_bytes,
    trainable_params,
)
from gacost.base.records import GIB, ModelArch

CUDA_CONTEXT_GIB = 0.5
FRAGMENTATION = 0.025
# LoRA dropout > 0: CUDA's native_dropout saves a bool mask (1 B per element of the wrapped
# linear's input) for its backward; the adapter's saved input is the dropped one instead of
# the plain one (same size)
DROPOUT_MASK_BYTES = 1.0
# TRL's chunked loss projects the hidden states onto the vocabulary a tile at a time: a
# buffer of up to 4,096 tokens x 32,768 vocabulary entries in the compute dtype, in its
# forward and again in its backward (trl/kernels/chunked_logprob.py TOKEN_CHUNK_SIZE,
# trl/trainer/utils.py _CHUNKED_LOGPROB_CHUNK_SIZE; TRL 1.16)
LOSS_TILE_TOKENS = 4096
LOSS_TILE_VOCAB = 32768
# The recomputed layer with checkpointing, per byte of its saved tensors, what the allocator
# reserves for it included: the value that puts the model's reserved peak on the measured one
# in the 2026-12-04 census (bench/MODEL.md "What is live at the peak", "The recomputed layer
# by adapter dtype"). Where PEFT's cast of each adapter's input to the adapter's dtype makes
# a copy, and the backward's gradients come back through it (LoRA's fp32 adapters on a bf16
# stream; TRL's bf16 QLoRA adapters on the fp32 stream of prepare_model_for_kbit_training; a
# full fine-tune taken alike): 1.48-2.37 in five LoRA splits, their geometric mean 1.86 (kept
# at 2 until 2026-12-08, while a GPU without a memory profile kept the slack prior's 0.25 GiB).
# Where the adapters' dtype is the stream's (TRL's bf16 QLoRA adapters, bf16 stream) and the
# cast copies nothing: 1.26 and 1.56 in the two QLoRA splits (geometric mean 1.40)
RECOMPUTE_ADAPTER_CAST = 1.86
RECOMPUTE_ADAPTER_SAME_DTYPE = 1.4
DEFAULT_ACTIVATION_SCALE = 1.0
DEFAULT_SLACK_GIB = 0.25


@dataclass(frozen=True)
class MemoryCosts:
    """The memory terms of one setup on one model, in bytes."""

    static_bytes: float
    optimizer_bytes: float
    """Transient bytes of the optimizer step: ``sqrt(v)`` (:func:`trained_copy_bytes`) with
    the foreach AdamW, 0 with the fused one."""
    activation_bytes_per_token: float
    """Held through the backward: every layer's saved tensors, or with checkpointing each
    layer's input."""
    loss_bytes_per_token: float
    sequence_length: int
    recompute_bytes_per_token: float = 0.0
    """With checkpointing, while one layer is recomputed: :func:`recompute_factor` times its
    saved tensors (its own, its backward's gradients and the allocator's reserve)."""
    loss_transient_bytes: float = 0.0
    """The loss backward's transient of fixed size (:func:`lm_head_gradient_bytes`)."""
    loss_tile_bytes_per_token: float = 0.0
    """The chunked loss's projection tile, per token up to :data:`LOSS_TILE_TOKENS`."""
    gradient_bytes: float = 0.0
    """The trained parameters' gradients (in ``static_bytes``); with one micro-step per
    update (``k = 1``) they are made during the backward, not held before it."""


@dataclass(frozen=True)
class MemParams:
    """The fitted parameters of the memory model."""

    activation_scale: float = DEFAULT_ACTIVATION_SCALE
    slack_gib: float = DEFAULT_SLACK_GIB


def act_bytes(setup: TrainSetup) -> float:
    """Bytes of one activation element."""
    return 4.0 if setup.precision == "fp32" else 2.0


def layer_working_set_per_token(arch: ModelArch, setup: TrainSetup) -> float:
    """Bytes per token that one decoder layer keeps for its backward (SwiGLU, SDPA attention).

    The tensors autograd saves, as counted on the CPU with saved-tensor hooks for Qwen3 and
    Llama layers, LoRA and full (bench/MODEL.md, "Saved tensors, counted"): the MLP's gate
    and up outputs and the activation's output (``3f``), attention's query, key, value and
    output (``2 h_q + 2 h_kv``), each norm's fp32 input (4 B per element; Qwen3's per-head
    query and key norms too); with LoRA each adapter's own input copy (PEFT casts the input
    to the adapter's dtype per wrapped linear, autocast saves the compute-dtype copy, one per
    wrapped linear even where q, k and v share the layer's input) and its rank-wide output,
    plus the dropout masks when LoRA dropout > 0 (:data:`DROPOUT_MASK_BYTES` each, CUDA's
    boolean mask); a full fine-tune instead keeps every linear's input for its weight's
    gradient (the two norm outputs, attention's output shared with ``o_proj``, the down
    projection's input ``f``) and each norm's normalised bf16 input for the norm weight's.
    """
    h, f = arch.hidden_size, arch.intermediate_size
    hq, hkv = arch.query_width, arch.kv_width
    family = kernel_counts.structure(arch)
    lora_widths = lora_input_width_list(arch, setup)  # none in a full fine-tune
    by_source = dict(zip(lora_input_sources(setup), lora_widths, strict=True))
    # a fused projection (Phi-3's qkv_proj, gate_up_proj) is one adapter on one input
    adapters = len(by_source) if family.fused else len(lora_widths)
    # one saved copy per input rather than per adapter: a fused projection's one adapter;
    # bf16 adapters (TRL's QLoRA) on a bf16 stream without dropout, where PEFT's cast of the
    # input to the adapter's dtype copies nothing, so the adapters on one input (q, k, v;
    # gate, up) save it once (after prepare_model_for_kbit_training the stream is fp32 and
    # each adapter casts its own copy)
    one_copy_per_input = family.fused or (
        setup.method == "qlora" and setup.lora_dropout == 0 and not setup.prepare_for_kbit)
    widths = sum(by_source.values()) if one_copy_per_input else sum(lora_widths)
    masks = DROPOUT_MASK_BYTES * widths if setup.lora_dropout > 0 else 0.0
    upcast = 0.0
    if setup.method == "qlora" and setup.prepare_for_kbit:
        # prepare_model_for_kbit_training keeps the norms in fp32: their outputs (the inputs
        # of q, k, v, gate and up) come out fp32, 2 B more per element than bf16, twice a layer
        upcast = 2.0 * 2 * h
    head_norms = hq + hkv if family.head_norms else 0
    norm_elements = (family.norms - family.head_norms) * h + head_norms
    shared = 3 * f + 2 * hq + 2 * hkv
    if any(name == "qkv_proj" for name, _ in family.fused):
        # a fused qkv projection's value is a view of its output: on the GPU the attention
        # kernel takes it as it is, so the saved value keeps the whole output alive (inferred:
        # on the CPU the kernel copies it; bench/MODEL.md, "Saved tensors, counted")
        shared += hq + hkv
    if setup.method == "full":
        elements = shared + 2 * h + f + norm_elements
    else:
        elements = shared + widths + setup.lora_r * adapters
    return act_bytes(setup) * elements + masks + upcast + 4.0 * norm_elements


def lm_head_gradient_bytes(arch: ModelArch, setup: TrainSetup) -> float:
    """Bytes of the LM head's weight gradient as TRL's chunked loss makes it in a full
    fine-tune: an fp32 accumulator of ``vocab x hidden`` and the copy in the weights' dtype
    it returns (``trl/kernels/chunked_logprob.py``, the backward), both live at once; none
    where the head is frozen (LoRA, QLoRA) or without the chunked loss (the logits' gradient
    then counts per token).

    Measured: what is live at the peak of the Qwen3-1.7B full fine-tune without
    checkpointing at 2x4 (``bench/user_script.py --memory-peak`` on the H200, 2026-12-04;
    bench/MODEL.md, "What is live at the peak") held 1.16 GiB at each of the two lines,
    6 B x 151,936 x 2,048 in all.
    """
    if setup.method != "full" or not setup.chunked_loss:
        return 0.0
    return (4.0 + trainable_dtype_bytes(setup)) * arch.vocab_size * arch.hidden_size


def lora_input_sources(setup: TrainSetup) -> tuple[str, ...]:
    """Which tensor each LoRA-wrapped linear of a layer reads (the attention's or the MLP's
    normalised input, the attention output, the MLP's gated product); none in a full
    fine-tune, as :func:`~gacost.advisor.time_model.lora_input_width_list`."""
    if setup.method == "full":
        return ()
    source = {"q_proj": "attention", "k_proj": "attention", "v_proj": "attention",
              "qkv_proj": "attention", "o_proj": "o_proj", "gate_proj": "mlp",
              "up_proj": "mlp", "gate_up_proj": "mlp", "down_proj": "down_proj"}
    return tuple(source.get(t, t) for t in setup.lora_targets)


def weight_bytes(arch: ModelArch, setup: TrainSetup) -> float:
    """Bytes of the frozen weights as stored on the GPU."""
    if setup.method == "qlora":
        # TRL keeps the embeddings, norms and LM head in bf16; PEFT's
        # prepare_model_for_kbit_training upcasts them to fp32 (H200: model memory of
        # Qwen3-8B 5.67 GiB plain, 7.99 GiB prepared; bench/H200-SWEEP.md)
        n_dec = arch.num_hidden_layers * arch.layer_linear_params
        rest = 4.0 if setup.prepare_for_kbit else 2.0
        return n_dec * QLORA_BYTES_PER_PARAM + (arch.total_params - n_dec) * rest
    if setup.method == "full" and setup.precision == "fp16":
        return arch.total_params * 4.0  # fp16 AMP keeps fp32 master weights
    return arch.total_params * (4.0 if setup.precision == "fp32" else 2.0)


def trained_copy_bytes(arch: ModelArch, setup: TrainSetup) -> float:
    """Bytes of one copy of the trained parameters in their dtype: the parameters, their
    gradient, each Adam moment, and the buffer the foreach AdamW's step allocates beside the
    state it holds (``sqrt(v)`` out of place)."""
    return float(trainable_params(arch, setup)) * trainable_dtype_bytes(setup)


def trainable_bytes(arch: ModelArch, setup: TrainSetup) -> float:
    """Bytes of the trainable state: parameter, gradient, Adam m and v (a full fine-tune's
    parameters are its weights, counted in :func:`weight_bytes`)."""
    return (3.0 if setup.method == "full" else 4.0) * trained_copy_bytes(arch, setup)


def recompute_factor(setup: TrainSetup) -> float:
    """The recomputed layer's live bytes, its saved tensors' and its backward's gradients and
    what the allocator reserves beyond them, per byte of its saved tensors (with
    checkpointing): less where the adapters' dtype is the stream's, so PEFT's cast of their
    input copies nothing (TRL's bf16 QLoRA adapters without
    ``prepare_model_for_kbit_training``, whose fp32 norms make the stream fp32)."""
    if setup.method == "qlora" and not setup.prepare_for_kbit:
        return RECOMPUTE_ADAPTER_SAME_DTYPE
    return RECOMPUTE_ADAPTER_CAST


def memory_costs(arch: ModelArch, setup: TrainSetup) -> MemoryCosts:
    """The memory terms of ``setup`` on ``arch``."""
    layer = layer_working_set_per_token(arch, setup)
    if setup.gradient_checkpointing:
        # each layer's checkpointed input; after prepare_model_for_kbit_training the fp32
        # norms and the 4-bit linears' fp32 outputs make the residual stream fp32
        stream = 4.0 if setup.method == "qlora" and setup.prepare_for_kbit else act_bytes(setup)
        acts = arch.num_hidden_layers * arch.hidden_size * stream
        recompute = recompute_factor(setup) * layer
    else:
        acts, recompute = arch.num_hidden_layers * layer, 0.0
    if setup.chunked_loss:
        loss = 6.0 * arch.hidden_size  # fp32 grad of the hidden state + bf16 copy
    else:
        loss = 10.0 * arch.vocab_size  # bf16 logits, fp32 copy, fp32 gradient
    return MemoryCosts(
        static_bytes=weight_bytes(arch, setup) + trainable_bytes(arch, setup),
        optimizer_bytes=0.0 if setup.fused_adamw else trained_copy_bytes(arch, setup),
        activation_bytes_per_token=acts,
        loss_bytes_per_token=loss,
        sequence_length=setup.sequence_length,
        recompute_bytes_per_token=recompute,
        loss_transient_bytes=lm_head_gradient_bytes(arch, setup),
        loss_tile_bytes_per_token=(LOSS_TILE_VOCAB * act_bytes(setup) if setup.chunked_loss
                                   else 0.0),
        gradient_bytes=trained_copy_bytes(arch, setup),
    )


def peak_reserved_gib(costs: MemoryCosts, params: MemParams, m: int, k: int = 0) -> float:
    """Peak memory the allocator reserves in an update of micro-batch ``m`` and ``k``
    micro-steps (GiB; 0: not known, taken as more than one): the micro-step's, or the
    optimizer step's where that is higher.

    With ``k = 1`` the gradients are made as the backward frees the activations (the Trainer
    zeroes them to None after each update), so they and the held activations compete rather
    than add up: the larger of the two is counted (the Qwen3-0.6B full fine-tune at 16x1 held
    0.95 of its 1.11 GiB of gradients at its peak, late in the backward; bench/MODEL.md,
    "What is live at the peak").
    """
    tokens = m * costs.sequence_length
    per_token = params.activation_scale * costs.activation_bytes_per_token
    held = tokens * (per_token + costs.loss_bytes_per_token)
    if k == 1:
        held = max(held, costs.gradient_bytes) - costs.gradient_bytes
    # the recomputed layer's tensors and the loss backward's transient are not live at once
    loss = (costs.loss_transient_bytes
            + min(tokens, LOSS_TILE_TOKENS) * costs.loss_tile_bytes_per_token)
    moment = max(tokens * params.activation_scale * costs.recompute_bytes_per_token, loss)
    dynamic = max(held + moment, costs.optimizer_bytes)
    return (costs.static_bytes * (1.0 + FRAGMENTATION) + dynamic) / GIB + params.slack_gib
