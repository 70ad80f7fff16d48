"""Kernels launched per micro-step and per update, predicted from the workload's structure.

The host term of a micro-step is (launches per micro-step) x (host seconds per launch), so
the launch count must be known for configurations nobody counted. This module owns that
count; it is pure (no torch) and reads only :class:`ModelArch` and :class:`TrainSetup`.

Structure (one micro-step: forward, TRL's loss and metrics, backward; GC adds a recompute):

* **Operators per decoder layer**: a frozen layer (norms, RoPE, attention, the MLP
  activation, residual adds, its base linears) plus, per LoRA-wrapped linear, the adapter's
  operators (the dtype casts, two rank-r GEMMs, scaling and add, and their backward), each
  for checkpointing on and off; plus a per-model part (embedding, final norm, LM head, loss,
  TRL's entropy/accuracy metrics). From the second micro-step of an update on, every
  trainable tensor's gradient is accumulated with one add. The table :data:`STRUCTURE` was
  counted on the CPU (``bench/kernel_counts_cpu.py``: real TRL ``SFTTrainer`` + PEFT on tiny
  random copies of the shipped architectures, operators that launch GPU work per
  micro-step, with 2 and 4 layers, all-linear and attention-only targets, checkpointing on
  and off, bf16 autocast and fp32, and full fine-tunes). fp16 is taken as bf16 (the same
  autocast casts); fp32 and full fine-tunes have CPU counts but no GPU count yet.
* **Operators -> GPU launches** (:class:`GpuAnchor`, fitted on the H200 sweep's traces,
  ``bench/results/h200-sweep``): kernels per counted operator ``ops_to_kernels``, and the
  shape-dependent extras per GEMM operator (cuBLAS split-K reductions and device-to-device
  copies, which grow with the rows x width of the GEMMs): ``extra_a + extra_b * x`` with
  ``x = log2(m * seq * hidden / 2**20)`` clamped to ``[0, EXTRA_X_MAX]``.
* **QLoRA** (bitsandbytes NF4, double quant): per 4-bit linear and pass, two dequantisation
  kernels (the absmax, then the weight) and three fewer cast/elementwise kernels than a bf16
  linear; two extra copies per micro-step; ``prepare_model_for_kbit_training`` adds the fp32
  casts of its upcast norms (per layer).
* **Liger** and **torch.compile**: measured changes (one workload each), see the constants.
* **LoRA dropout** (``lora_dropout > 0``): PEFT puts ``nn.Dropout`` on the input of every
  LoRA-wrapped linear (``nn.Identity`` at 0). Counted on the CPU (the ``dropout_*`` fields
  of :class:`OperatorCounts`): per wrapped linear and forward pass (the forward, and the
  recompute under GC) three operators, per backward one; the first layer's q/k/v adapters
  skip that backward without GC (their input needs no gradient). On a GPU the three forward
  operators are one kernel (``aten::dropout`` takes the fused ``native_dropout`` path on
  CUDA: one kernel writing output and mask; the CPU has no fused kernel and runs
  ``bernoulli_``, a copy and ``mul``), the backward one (``native_dropout_backward``, a
  masked scale): :func:`dropout_kernels_per_microstep`, one kernel per counted occurrence,
  not scaled by ``ops_to_kernels``.

Per update: the AdamW ``foreach`` optimizer launches one kernel per ``multi_tensor_apply``
chunk of each of its element-wise steps (:func:`optimizer_kernels`), and the rest of the
update (gradient-norm clipping, ``zero_grad``, the batch copies) a few more.

Sources and the leave-one-workload-out check: ``bench/MODEL.md`` ("Kernel counts"),
``bench/kernel_counts.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gacost.base.errors import JobSpecError
from gacost.base.records import ModelArch

if TYPE_CHECKING:  # time_model imports this module to count a workload's launches
    from gacost.advisor.time_model import TrainSetup

LINEAR_NAMES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class KernelCounts:
    """Launches (kernels + memcpy/memset) per micro-step and once per update.

    ``per_microstep``: the mean over the ``k`` micro-steps of an update of what one forward,
    loss and backward launches. ``per_update``: the optimizer step and the rest of the
    update (clipping, ``zero_grad``, the batches' host-to-device copies), once per update.
    An update launches ``k * per_microstep + per_update``.
    """

    per_microstep: float
    per_update: float


@dataclass(frozen=True)
class OperatorCounts:
    """Launching operators per micro-step, counted on the CPU (see module doc).

    ``layer_*``: per decoder layer with no LoRA-wrapped linear; ``lora_*``: what each
    LoRA-wrapped linear adds to its layer; ``model_*``: the per-model part. ``gc``/``nogc``:
    gradient checkpointing on/off. ``dropout_*``: what LoRA dropout > 0 adds per wrapped
    linear (forward, recompute, backward); per model it adds nothing with GC and, without
    GC, loses the backward of the first layer's q/k/v adapters (:func:`_first_layer_no_grad`).
    """

    layer_gc: float
    layer_nogc: float
    lora_gc: float
    lora_nogc: float
    model_gc: float
    model_nogc: float
    dropout_gc: float = 0.0
    dropout_nogc: float = 0.0


@dataclass(frozen=True)
class FamilyStructure:
    """One architecture family: its layer's modules and its operator counts.

    ``half``: LoRA under bf16/fp16 autocast; ``fp32``: LoRA in fp32 without autocast;
    ``full``: a full fine-tune in bf16 (every weight trained; ``lora_*`` are 0).
    ``linears``: the layer's linear modules; ``norms``: its RMSNorms (trainable in a full
    fine-tune), of which ``head_norms`` normalise each head's query and key (Qwen3) rather
    than the hidden state; ``fused``: which of the usual seven names each fused module
    stands for (Phi-3's ``qkv_proj``). ``recompute_skips_down``: the recompute of a
    checkpointed layer skips its ``down_proj`` GEMM when no adapter wraps it (see
    :data:`RECOMPUTE_SKIPS_DOWN`).
    """

    linears: tuple[str, ...]
    norms: int
    half: OperatorCounts
    fp32: OperatorCounts
    full: OperatorCounts
    fused: tuple[tuple[str, tuple[str, ...]], ...] = ()
    head_norms: int = 0
    recompute_skips_down: bool = True


_PHI3_FUSED = (
    ("qkv_proj", ("q_proj", "k_proj", "v_proj")),
    ("o_proj", ("o_proj",)),
    ("gate_up_proj", ("gate_proj", "up_proj")),
    ("down_proj", ("down_proj",)),
)

# Counted with bench/kernel_counts_cpu.py (torch 2.13 CPU, transformers 5.24, TRL 1.16,
# PEFT 0.21.2; bench/results/kernel-counts-cpu.json), sdpa attention. Per layer: half the
# difference between 4 and 2 layers; per LoRA linear: a third of all-linear minus
# attention-only (q, k, v, o); per model: the 2-layer count less two layers. Gemma-2: sdpa
# without the attention soft-capping, as the GPU sweep's transformers ran it (see
# bench/MODEL.md); Phi-3 (all-linear only): the Llama adapter cost. LoRA dropout (last two
# fields): per wrapped linear, the 4-layer minus 2-layer all-linear difference with dropout
# 0.05 and 0, halved, over the wrapped linears: 7 with GC, 4 without, in every family counted
# (fp32: counted on Qwen3, taken for the others).
# test_kernel_counts.py re-derives this table from the committed JSON.
STRUCTURE: dict[str, FamilyStructure] = {
    "llama": FamilyStructure(
        linears=LINEAR_NAMES, norms=2,
        half=OperatorCounts(443 / 3, 106.0, 76 / 3, 18.0, 162.0, 130.0, 7.0, 4.0),
        fp32=OperatorCounts(407 / 3, 98.0, 40 / 3, 10.0, 151.0, 127.0, 7.0, 4.0),
        full=OperatorCounts(156.0, 117.0, 0.0, 0.0, 171.0, 171.0),
    ),
    "qwen3": FamilyStructure(
        linears=LINEAR_NAMES, norms=4,
        half=OperatorCounts(635 / 3, 152.0, 76 / 3, 18.0, 162.0, 130.0, 7.0, 4.0),
        fp32=OperatorCounts(563 / 3, 136.0, 40 / 3, 10.0, 151.0, 127.0, 7.0, 4.0),
        full=OperatorCounts(224.0, 167.0, 0.0, 0.0, 171.0, 171.0),
        head_norms=2,
    ),
    "gemma2": FamilyStructure(
        linears=LINEAR_NAMES, norms=4,
        half=OperatorCounts(224.0, 160.0, 26.0, 18.0, 179.0, 147.0, 7.0, 4.0),
        fp32=OperatorCounts(200.0, 144.0, 14.0, 10.0, 168.0, 144.0, 7.0, 4.0),
        full=OperatorCounts(243.0, 179.0, 0.0, 0.0, 190.0, 190.0),
        recompute_skips_down=False,
    ),
    "phi3": FamilyStructure(
        linears=tuple(name for name, _ in _PHI3_FUSED), norms=2,
        half=OperatorCounts(473 / 3, 117.0, 76 / 3, 18.0, 162.0, 142.0, 7.0, 4.0),
        fp32=OperatorCounts(437 / 3, 109.0, 40 / 3, 10.0, 151.0, 135.0, 7.0, 4.0),
        full=OperatorCounts(165.0, 125.0, 0.0, 0.0, 170.0, 170.0),
        fused=_PHI3_FUSED,
    ),
}
# RECOMPUTE_SKIPS_DOWN: TRL runs gradient checkpointing non-reentrant (SFTTrainer sets
# ``use_reentrant=False``), whose recompute stops once it has rebuilt the last tensor the
# layer's backward saved (torch.utils.checkpoint's early stop, on by default). The last linear
# of a Llama, Qwen2/3, Mistral or Phi-3 layer, ``down_proj``, saves nothing of its own output
# (its input, saved for a trained weight's gradient, exists before it runs; a frozen base
# saves nothing, bitsandbytes' 4-bit matmul keeps its weight on ``ctx``), so its GEMM is not
# re-run unless an adapter wraps it (PEFT runs lora_A and lora_B after the base layer, and
# lora_B saves its input). Gemma-2 normalises the MLP's output (post_feedforward_layernorm,
# which saves it), so its recompute runs the whole layer. Counted on CPU with a tiny model of
# each family (bench/recompute_gemms.py: the down_proj GEMM is absent from the recompute of
# attention-only LoRA and of a full fine-tune, present with LoRA on down_proj and in Gemma-2),
# and measured on an H100 (bench/gc_twins.py, op tables of two checkpointed splits and their
# twins: the recompute's GEMM time 0.74 and 0.72 of a forward's, where 0.73 and 0.75 of the
# decoder's linear FLOPs are outside down_proj).
RECOMPUTE_SKIPS_DOWN = "down_proj"
# model_type -> family whose CPU counts it shares (Mistral and Qwen2 counted equal to Llama
# with checkpointing: 812 and 1462 operators at 2 and 4 layers).
FAMILY_OF = {
    "llama": "llama", "mistral": "llama", "qwen2": "llama", "qwen3": "qwen3",
    "gemma2": "gemma2", "phi3": "phi3",
}
DEFAULT_FAMILY = "llama"


@dataclass(frozen=True)
class GpuAnchor:
    """How counted operators become GPU launches on one stack (see module doc).

    ``update_other_*``: kernels of the rest of the update at k = 1 (gradient-norm clipping,
    ``zero_grad``), which grow with the trainable tensors.
    """

    ops_to_kernels: float
    extra_a: float
    extra_b: float
    update_other_base: float
    update_other_per_tensor: float
    source: str = ""


EXTRA_X_MAX = 4.0  # past m*seq*hidden = 2**24 the extras per GEMM stop growing (H200 sweep)

# Fitted by bench/kernel_counts.py on all counted traces of the H200 sweep (torch 2.11+cu130,
# transformers 5.17, TRL 1.16, PEFT 0.21; bench/results/h200-sweep/w*.json).
H200_ANCHOR = GpuAnchor(
    ops_to_kernels=0.9777, extra_a=0.0542, extra_b=0.1769,
    update_other_base=17.19, update_other_per_tensor=0.02522,
    source="H200 sweep 2026-12-02 (bench/results/h200-sweep), fitted by bench/kernel_counts.py",
)

# QLoRA (bitsandbytes 0.50 NF4 + double quant), per 4-bit linear. The two dequantisation
# kernels per use are bitsandbytes' structure (absmax, then weight), seen as 6 per linear
# with GC (forward, recompute, backward) on Qwen3-8B; the others are Qwen3-8B QLoRA minus
# bf16 LoRA (workloads 6 and 8: -2268 other kernels = -3 x 252 linears x 3 passes, +504
# copies = 2 x 252, at every split), and prepare_model_for_kbit_training (workload 7 minus 6:
# +1673 other kernels per micro-step over 36 layers with GC).
QLORA_DEQUANT_PER_PASS = 2.0
QLORA_OTHER_PER_PASS = -3.0
QLORA_COPIES_PER_MICROSTEP = 2.0
PREPARE_KBIT_PER_LAYER_GC = 1673 / 36
# Liger (liger-kernel 0.8.5, Qwen3-1.7B, GC; workload 10 minus 1): -4079 other kernels and
# -113 copies per micro-step at both splits, over 28 layers; spread over the three passes.
LIGER_PER_LAYER_GC = -(4079 + 113) / 28
# torch.compile (TRL torch_compile=True; Qwen3-1.7B 1x4 on an H200): 11,978 -> 4,684 kernels
# per micro-step (shared/research/measurements-h200.md, one measurement, not a law).
COMPILE_RATIO = 4684 / 11978

# LoRA dropout > 0 on the CPU, per wrapped linear and pass: ``bernoulli_``, a ``copy_`` and
# ``mul`` per forward pass, one ``mul`` per backward (bench/results/kernel-counts-cpu.json);
# on CUDA ``aten::dropout`` is one fused ``native_dropout`` kernel (output and bool mask;
# ATen's Dropout.cpp takes it whenever ``is_fused_kernel_acceptable``: a CUDA tensor and
# 0 < p < 1) and its backward one ``native_dropout_backward`` kernel (grad x mask x scale).
DROPOUT_CPU_OPS_PER_FORWARD = 3.0
DROPOUT_CPU_OPS_PER_BACKWARD = 1.0
DROPOUT_KERNELS_PER_FORWARD = 1.0
DROPOUT_KERNELS_PER_BACKWARD = 1.0
# the linears that read the first layer's normed embedding (no gradient without GC)
FIRST_READERS = ("q_proj", "k_proj", "v_proj", "qkv_proj")

# Rest of the update, counted in every split of the sweep: 8 kernels per extra micro-step
# (``num_items_in_batch`` and friends) and 5 host-to-device copies per micro-step (the
# batch), plus clipping and zero_grad (GpuAnchor.update_other_*).
UPDATE_KERNELS_PER_EXTRA_MICROSTEP = 8.0
UPDATE_COPIES_PER_MICROSTEP = 5.0

# AdamW foreach (torch.optim._multi_tensor_adam, no weight decay, no amsgrad, steps on the
# host): lerp_, mul_, addcmul_, sqrt, div_, add_, addcdiv_ on the fp32 trainable tensors,
# as (tensor lists, scalar list); launches follow ATen's MultiTensorApply.cuh
# (65536-element chunks, at most 320 blocks and depth_to_max_tensors tensors per launch;
# these classic limits reproduce every optimizer count of the H200 sweep).
ADAM_STEPS = ((2, False), (1, False), (3, False), (2, False), (1, True), (1, False), (3, True))
MTA_CHUNK = 65536
MTA_MAX_BLOCKS = 320
MTA_MAX_TENSORS = (110, 64, 48, 36, 30)
MTA_MAX_TENSORS_SCALARLIST = (96, 64, 48, 36, 30)


def family(arch: ModelArch) -> tuple[str, bool]:
    """The structure family of ``arch`` and whether its ``model_type`` was counted."""
    name = FAMILY_OF.get(arch.model_type)
    return (name, True) if name else (DEFAULT_FAMILY, False)


def structure(arch: ModelArch) -> FamilyStructure:
    """The layer structure of ``arch``'s family (the default family's if uncounted)."""
    return STRUCTURE[family(arch)[0]]


def _counts(arch: ModelArch, setup: TrainSetup) -> OperatorCounts:
    fam = structure(arch)
    if setup.method == "full":
        return fam.full
    return fam.fp32 if setup.precision == "fp32" else fam.half


def _modules(arch: ModelArch) -> tuple[tuple[str, tuple[str, ...]], ...]:
    fam = structure(arch)
    return fam.fused or tuple((name, (name,)) for name in fam.linears)


def lora_linears(arch: ModelArch, setup: TrainSetup) -> int:
    """LoRA-wrapped linear modules per decoder layer (0 for a full fine-tune)."""
    return len(_wrapped(arch, setup))


def _passes(setup: TrainSetup) -> int:
    """Forward passes per micro-step (the recompute under GC) plus the backward."""
    return 3 if setup.gradient_checkpointing else 2


def _wrapped(arch: ModelArch, setup: TrainSetup) -> list[str]:
    """Names of the LoRA-wrapped modules of one layer (none for a full fine-tune)."""
    return [name for name, _ in wrapped_modules(arch, setup)]


def wrapped_modules(arch: ModelArch, setup: TrainSetup) -> list[tuple[str, tuple[str, ...]]]:
    """The LoRA-wrapped modules of one layer, each with the usual names it stands for (a
    fused module such as Phi-3's ``qkv_proj`` stands for three; none for a full fine-tune)."""
    if setup.method == "full":
        return []
    targets = set(setup.lora_targets)
    return [(name, parts) for name, parts in _modules(arch)
            if name in targets or targets & set(parts)]


def recompute_skipped_params(arch: ModelArch, setup: TrainSetup) -> int:
    """Decoder linear parameters per layer whose GEMM a checkpointed recompute does not re-run
    (:data:`RECOMPUTE_SKIPS_DOWN`): ``down_proj``'s, where the family's layer ends with it and
    no adapter wraps it (``time_model.recompute_linear_params`` applies it where there is a
    recompute)."""
    if not structure(arch).recompute_skips_down:
        return 0
    if any(RECOMPUTE_SKIPS_DOWN in parts for _, parts in wrapped_modules(arch, setup)):
        return 0
    return arch.hidden_size * arch.intermediate_size


def _first_layer_no_grad(arch: ModelArch, setup: TrainSetup) -> int:
    """Wrapped linears whose dropout runs no backward: without GC, the first layer's q/k/v
    read the norm of the frozen embedding, which needs no gradient (with GC, PEFT makes
    the embedding output require one)."""
    if setup.gradient_checkpointing:
        return 0
    return sum(1 for name in _wrapped(arch, setup) if name in FIRST_READERS)


def dropout_operators_per_microstep(arch: ModelArch, setup: TrainSetup) -> float:
    """CPU operators LoRA dropout > 0 adds per micro-step (0 at dropout 0 or full)."""
    if setup.lora_dropout <= 0 or setup.method == "full":
        return 0.0
    c = _counts(arch, setup)
    per_linear = c.dropout_gc if setup.gradient_checkpointing else c.dropout_nogc
    return (arch.num_hidden_layers * lora_linears(arch, setup) * per_linear
            - DROPOUT_CPU_OPS_PER_BACKWARD * _first_layer_no_grad(arch, setup))


def dropout_kernels_per_microstep(arch: ModelArch, setup: TrainSetup) -> float:
    """GPU kernels LoRA dropout > 0 adds per micro-step: the counted operators with each
    forward pass's three CPU operators taken as one fused ``native_dropout`` kernel."""
    ops = dropout_operators_per_microstep(arch, setup)
    if not ops:
        return 0.0
    fused = DROPOUT_CPU_OPS_PER_FORWARD - DROPOUT_KERNELS_PER_FORWARD
    forwards = _passes(setup) - 1
    return ops - fused * forwards * arch.num_hidden_layers * lora_linears(arch, setup)


def operators_per_microstep(arch: ModelArch, setup: TrainSetup, grad_accum: int = 1) -> float:
    """Launching operators per micro-step as counted on the CPU (see module doc), LoRA
    dropout left out (:func:`dropout_operators_per_microstep`).

    From the second micro-step of an update on, each trainable tensor's gradient is
    accumulated with one add: ``grad_accum`` spreads that over the update's micro-steps.
    """
    c = _counts(arch, setup)
    gc = setup.gradient_checkpointing
    n = lora_linears(arch, setup)
    layer = (c.layer_gc if gc else c.layer_nogc) + n * (c.lora_gc if gc else c.lora_nogc)
    accumulate = len(_trainable_tensors(arch, setup)) * (grad_accum - 1) / grad_accum
    return arch.num_hidden_layers * layer + (c.model_gc if gc else c.model_nogc) + accumulate


def gemm_operators_per_microstep(arch: ModelArch, setup: TrainSetup) -> float:
    """GEMM operators per micro-step: per pass one per linear, plus its input gradient; a
    LoRA linear adds two per forward pass and four in the backward (weight and input
    gradients of A and B); a trained linear (full fine-tune) adds its weight gradient."""
    fwd = 2 if setup.gradient_checkpointing else 1
    n = lora_linears(arch, setup)
    linears = len(structure(arch).linears)
    per_layer = linears * (fwd + 1) + n * (2 * fwd + 4)
    if setup.method == "full":
        per_layer += linears
    return arch.num_hidden_layers * per_layer + 2.0  # LM head: forward and input gradient


def shape_x(arch: ModelArch, setup: TrainSetup, micro_batch: int) -> float:
    """``log2(rows x width / 2**20)`` of the micro-step's GEMMs, clamped to [0, EXTRA_X_MAX]."""
    rows = micro_batch * setup.sequence_length * arch.hidden_size
    return min(max(math.log2(rows / 2**20), 0.0), EXTRA_X_MAX)


def _trainable_tensors(arch: ModelArch, setup: TrainSetup) -> list[int]:
    """Element counts of the trainable tensors: LoRA A and B of every wrapped linear, or
    (full fine-tune) every weight: linears, RMSNorms, embedding, final norm, an untied head.
    Biases (Qwen2's q, k, v) are left out."""
    h, i = arch.hidden_size, arch.intermediate_size
    qd, kvd = arch.query_width, arch.kv_width
    shapes = {
        "q_proj": (h, qd), "k_proj": (h, kvd), "v_proj": (h, kvd), "o_proj": (qd, h),
        "gate_proj": (h, i), "up_proj": (h, i), "down_proj": (i, h),
        "qkv_proj": (h, qd + 2 * kvd), "gate_up_proj": (h, 2 * i),
    }
    fam = structure(arch)
    if setup.method == "full":
        layer = [shapes[n][0] * shapes[n][1] for n in fam.linears] + [h] * fam.norms
        head = [] if arch.tie_word_embeddings else [arch.vocab_size * h]
        return layer * arch.num_hidden_layers + [arch.vocab_size * h, h] + head
    wrapped = _wrapped(arch, setup)
    r = setup.lora_r
    per_layer = [r * shapes[n][0] for n in wrapped] + [shapes[n][1] * r for n in wrapped]
    return per_layer * arch.num_hidden_layers


def _launches(sizes: list[int], depth: int, scalarlist: bool) -> int:
    """Kernel launches of one ``multi_tensor_apply`` over tensors of ``sizes`` elements."""
    limit = (MTA_MAX_TENSORS_SCALARLIST if scalarlist else MTA_MAX_TENSORS)[depth - 1]
    launches = tensors = blocks = 0
    for size in sizes:
        tensors += 1
        chunks = max(1, math.ceil(size / MTA_CHUNK))
        for chunk in range(chunks):
            blocks += 1
            last_chunk = chunk == chunks - 1
            if blocks == MTA_MAX_BLOCKS or (tensors == limit and last_chunk):
                launches += 1
                blocks = 0
                tensors = 0 if last_chunk else 1
    return launches + (1 if blocks else 0)


def optimizer_kernels(arch: ModelArch, setup: TrainSetup) -> float:
    """AdamW ``foreach`` kernels per update over the trainable tensors."""
    sizes = _trainable_tensors(arch, setup)
    return float(sum(_launches(sizes, d, s) for d, s in ADAM_STEPS)) if sizes else 0.0


def _check(setup: TrainSetup, micro_batch: int, grad_accum: int) -> None:
    if setup.method not in ("lora", "qlora", "full"):
        raise JobSpecError(f"method: must be lora, qlora or full, got {setup.method!r}")
    if not 0.0 <= setup.lora_dropout < 1.0:
        raise JobSpecError(f"lora.dropout: must be >= 0 and < 1, got {setup.lora_dropout}")
    for name, value in (("micro_batch", micro_batch), ("grad_accum", grad_accum)):
        if value < 1:
            raise JobSpecError(f"{name}: must be an integer >= 1, got {value}")


def microstep_parts(
    arch: ModelArch,
    setup: TrainSetup,
    micro_batch: int,
    *,
    grad_accum: int = 1,
    liger: bool = False,
    prepare_for_kbit: bool = False,
    anchor: GpuAnchor = H200_ANCHOR,
) -> dict[str, float]:
    """The launches of one uncompiled micro-step by origin (they add up to the total).

    ``operators``: the CPU-counted operators x ``ops_to_kernels``; ``gemm_extras``: split-K
    reductions and copies; ``qlora_dequant``, ``qlora_other``, ``qlora_copies``,
    ``prepare_kbit``, ``liger``: the terms of those options (0 when off); ``dropout``: the
    kernels of LoRA dropout (:func:`dropout_kernels_per_microstep`).
    """
    _check(setup, micro_batch, grad_accum)
    layers = arch.num_hidden_layers
    passes = _passes(setup)
    gemm = gemm_operators_per_microstep(arch, setup)
    extra = anchor.extra_a + anchor.extra_b * shape_x(arch, setup, micro_batch)
    qlora = setup.method == "qlora"
    quantised = layers * len(structure(arch).linears) if qlora else 0
    return {
        "operators": anchor.ops_to_kernels * operators_per_microstep(arch, setup, grad_accum),
        "gemm_extras": gemm * extra,
        "qlora_dequant": quantised * passes * QLORA_DEQUANT_PER_PASS if qlora else 0.0,
        "qlora_other": quantised * passes * QLORA_OTHER_PER_PASS if qlora else 0.0,
        "qlora_copies": quantised * QLORA_COPIES_PER_MICROSTEP if qlora else 0.0,
        "prepare_kbit": layers * PREPARE_KBIT_PER_LAYER_GC * passes / 3
        if qlora and prepare_for_kbit else 0.0,
        "liger": layers * LIGER_PER_LAYER_GC * passes / 3 if liger else 0.0,
        "dropout": dropout_kernels_per_microstep(arch, setup),
    }


def kernel_counts(
    arch: ModelArch,
    setup: TrainSetup,
    micro_batch: int,
    *,
    grad_accum: int = 1,
    liger: bool = False,
    torch_compile: bool = False,
    prepare_for_kbit: bool = False,
    anchor: GpuAnchor = H200_ANCHOR,
) -> KernelCounts:
    """Launches per micro-step and per update of ``setup`` on ``arch`` at ``micro_batch``.

    ``grad_accum`` (k) adds the LoRA gradient accumulation of micro-steps 2..k and the
    per-micro-step part of the rest of the update; ``prepare_for_kbit``: QLoRA through
    PEFT's ``prepare_model_for_kbit_training``. An unknown method, or a micro-batch or k
    below 1, is a :class:`JobSpecError`. ``full`` and ``fp32`` rest on the CPU counts and
    the bf16 LoRA anchor only (no GPU count of them yet).
    """
    parts = microstep_parts(
        arch, setup, micro_batch, grad_accum=grad_accum, liger=liger,
        prepare_for_kbit=prepare_for_kbit, anchor=anchor,
    )
    per_micro = sum(parts.values()) * (COMPILE_RATIO if torch_compile else 1.0)
    tensors = len(_trainable_tensors(arch, setup))
    per_update = (
        optimizer_kernels(arch, setup)
        + anchor.update_other_base + anchor.update_other_per_tensor * tensors
        + UPDATE_KERNELS_PER_EXTRA_MICROSTEP * (grad_accum - 1)
        + UPDATE_COPIES_PER_MICROSTEP * grad_accum
    )
    return KernelCounts(per_microstep=per_micro, per_update=per_update)
