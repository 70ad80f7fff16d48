"""Time model of one LoRA training update: pure functions of costs, GPU rates and parameters.

One micro-step of ``m`` sequences (``T = m * s`` tokens) costs

* host/launch time ``t_host = h * L * pass_factor`` (``h``: seconds per decoder layer, a
  property of the host CPU and software stack; GC adds a recompute pass),
* GPU time ``t_gpu = W / BW + F(T) / (P * eta(w))``: frozen-weight bytes ``W`` (read in the
  forward, the GC recompute and the backward) over the memory bandwidth, and training FLOPs
  ``F`` (frozen base: forward + input-gradient GEMMs, no weight gradients; LoRA adapters: all
  three; attention core; recompute under GC) over the dense tensor rate ``P`` at an efficiency
  that grows with the work per layer ``w = F / L``: ``eta(w) = eta_max * w / (w + P * tau)``,
  so ``F / (P * eta) = F / (P * eta_max) + L * tau / eta_max``,

and the host and GPU overlap (the host queues kernels ahead of the GPU):
``t_micro = (t_host**p + t_gpu**p) ** (1/p)``, a smooth maximum (``p = 1``: no overlap).
One update is ``k * t_micro + t_opt`` (optimizer step: host time per layer plus the bytes of
the trainable state over the bandwidth).

Free parameters (:class:`TimeParams`): ``h`` (host), ``eta_max`` (GPU), ``tau`` (global).

Data parallel over ``N`` GPUs of one node (``m`` per GPU) adds, once per update, the ring
all-reduce of the trainable gradients: ``2(N-1)/N * bytes / link_bw + 2(N-1) * latency``
(:func:`comm_seconds`; a prior per interconnect, not fitted).
"""

from __future__ import annotations

from dataclasses import dataclass

from gacost.base import gpu_table
from gacost.base.records import GpuSpec, ModelArch

OVERLAP_P = 4.0  # smooth-max exponent between host and GPU time (see bench/MODEL.md)
OPT_HOST_S_PER_LAYER = 6e-4  # optimizer step + Trainer bookkeeping per layer (prior, not fitted)
ADAM_BYTES_PER_PARAM = 28.0  # AdamW fp32: read param, grad, m, v; write param, m, v
QLORA_BYTES_PER_PARAM = 0.5 + 4.0 / 64 / 4  # NF4 + double-quantised absmax per 64-block
DEQUANT_BYTES_PER_PARAM = 4.0  # bf16 tile written and read back per pass (QLoRA)


@dataclass(frozen=True)
class TrainSetup:
    """The job facts the models need, free of the job schema.

    ``chunked_loss``: the loss never materialises full fp32 logits (TRL >= 1.7 default).
    """

    method: str
    lora_r: int
    lora_targets: tuple[str, ...]
    sequence_length: int
    precision: str
    gradient_checkpointing: bool
    chunked_loss: bool = True


@dataclass(frozen=True)
class WorkCosts:
    """Per-token and per-micro-step work of one training setup on one model."""

    layers: int
    sequence_length: int
    flops_per_token: float
    weight_bytes: float
    trainable_params: float
    host_pass_factor: float
    compute_precision: str


@dataclass(frozen=True)
class GpuRates:
    """What the time model needs of a GPU: dense tensor FLOP/s and bytes/s."""

    flops: float
    bandwidth: float


@dataclass(frozen=True)
class TimeParams:
    """The fitted parameters of the time model."""

    host_s_per_layer: float
    efficiency: float
    kernel_s_per_layer: float
    overlap: float = OVERLAP_P


@dataclass(frozen=True)
class MicroStep:
    """The parts of one micro-step, in seconds."""

    host: float
    traffic: float
    compute: float
    fixed: float

    @property
    def gpu(self) -> float:
        """GPU-side time: traffic + compute + fixed per-layer time."""
        return self.traffic + self.compute + self.fixed


def frozen_linear_params(arch: ModelArch) -> tuple[int, int]:
    """(decoder linear parameters, LM-head parameters): the weights multiplied per token."""
    return arch.num_hidden_layers * arch.layer_linear_params, arch.vocab_size * arch.hidden_size


def trainable_params(arch: ModelArch, setup: TrainSetup) -> int:
    """Parameters the optimizer updates (adapters, or all for a full fine-tune)."""
    if setup.method == "full":
        return arch.total_params
    return arch.lora_params(setup.lora_r, setup.lora_targets)


def flops_per_token(arch: ModelArch, setup: TrainSetup) -> float:
    """Training FLOPs per token of one micro-step (frozen base + adapters, or full)."""
    n_dec, n_head = frozen_linear_params(arch)
    n = n_dec + n_head
    ckpt = setup.gradient_checkpointing
    # causal attention core, forward: QK^T and AV, 2 * 2 * s * d / 2 per token and layer
    attn_fwd = arch.num_hidden_layers * 2 * setup.sequence_length * (
        arch.num_attention_heads * arch.head_dim
    )
    attn = attn_fwd * (4 if ckpt else 3)  # forward, (recompute), backward = 2 x forward
    if setup.method == "full":
        return 6 * n + (2 * n_dec if ckpt else 0) + attn
    p_lora = trainable_params(arch, setup)
    base = 4 * n + (2 * n_dec if ckpt else 0)  # forward + input-gradient GEMMs (+ recompute)
    return base + attn + (8 if ckpt else 6) * p_lora


def weight_traffic_bytes(arch: ModelArch, setup: TrainSetup) -> float:
    """Bytes of frozen weights streamed from memory in one micro-step."""
    n_dec, n_head = frozen_linear_params(arch)
    dec_passes = 3 if setup.gradient_checkpointing else 2  # forward, (recompute), backward
    if setup.method == "qlora":
        per_dec = QLORA_BYTES_PER_PARAM + DEQUANT_BYTES_PER_PARAM
        return n_dec * dec_passes * per_dec + n_head * 2 * 4.0  # LM head upcast to fp32
    b = 4.0 if setup.precision == "fp32" else 2.0
    return (n_dec * dec_passes + n_head * 2) * b


def work_costs(arch: ModelArch, setup: TrainSetup) -> WorkCosts:
    """The cost terms of ``setup`` on ``arch``."""
    return WorkCosts(
        layers=arch.num_hidden_layers,
        sequence_length=setup.sequence_length,
        flops_per_token=flops_per_token(arch, setup),
        weight_bytes=weight_traffic_bytes(arch, setup),
        trainable_params=float(trainable_params(arch, setup)),
        # launches: forward 1, backward 2, GC recompute 1 -> 4 units with GC, 3 without
        host_pass_factor=1.0 if setup.gradient_checkpointing else 0.75,
        compute_precision="fp16" if setup.method == "qlora" else setup.precision,
    )


def gpu_rates(gpu: GpuSpec, precision: str) -> GpuRates | None:
    """Dense tensor rate and bandwidth of ``gpu`` for ``precision``, None without a rate."""
    peak = gpu.tensor_tflops(precision)
    if not peak:
        return None
    return GpuRates(flops=peak * 1e12, bandwidth=gpu.bandwidth_gbs * 1e9)


def micro_step(costs: WorkCosts, rates: GpuRates, params: TimeParams, m: int) -> MicroStep:
    """The parts of one micro-step of ``m`` sequences."""
    tokens = m * costs.sequence_length
    return MicroStep(
        host=params.host_s_per_layer * costs.layers * costs.host_pass_factor,
        traffic=costs.weight_bytes / rates.bandwidth,
        compute=costs.flops_per_token * tokens / (rates.flops * params.efficiency),
        fixed=costs.layers * params.kernel_s_per_layer / params.efficiency,
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
    return smooth_max(part.host, part.gpu, params.overlap)


def host_share(costs: WorkCosts, rates: GpuRates, params: TimeParams, m: int) -> float:
    """How host-bound a micro-step is: ``t_host**p / (t_host**p + t_gpu**p)`` in [0, 1]."""
    part = micro_step(costs, rates, params, m)
    hi = max(part.host, part.gpu)
    if hi <= 0:
        return 0.0
    a, b = (part.host / hi) ** params.overlap, (part.gpu / hi) ** params.overlap
    return float(a / (a + b))


def optimizer_seconds(costs: WorkCosts, rates: GpuRates) -> float:
    """Seconds of the optimizer step (host bookkeeping + state traffic); a prior, not fitted."""
    return (
        OPT_HOST_S_PER_LAYER * costs.layers
        + ADAM_BYTES_PER_PARAM * costs.trainable_params / rates.bandwidth
    )


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
