"""Plain, immutable records shared by every layer.

``pricing`` produces :class:`Offer`, ``calibration`` produces profiles
(:mod:`gacost.base.profile`), ``advisor`` consumes both together with
:class:`GpuSpec` (:mod:`gacost.base.gpu_table`) and :class:`ModelArch`
(:mod:`gacost.base.models`).
"""

from __future__ import annotations

from dataclasses import dataclass

GIB = 1024**3


@dataclass(frozen=True)
class GpuSpec:
    """Datasheet facts about one GPU model (dense tensor rates, no sparsity)."""

    name: str
    memory_gib: float
    bandwidth_gbs: float
    fp16_tflops: float | None
    bf16_tflops: float | None
    fp32_tflops: float | None
    bf16_supported: bool
    source: str
    aliases: tuple[str, ...] = ()
    family: str = ""
    form: str = ""
    architecture: str = ""  # the chip generation (Hopper, Ampere, ...): shares GEMM efficiency
    interconnect: str = "pcie"
    matmul_fraction: float | None = None
    sustained_tflops: float | None = None  # a large dense fp16/bf16 matmul, sustained
    stream_bandwidth_gbs: float | None = None  # measured copy/stream bandwidth
    l2_mb: float | None = None
    boost_clock_mhz: float | None = None
    sm_count: int | None = None

    def tensor_tflops(self, precision: str) -> float | None:
        """Dense matrix rate for ``precision`` (fp16/bf16/fp32), None if unknown."""
        if precision == "bf16":
            return self.bf16_tflops if self.bf16_supported else None
        if precision == "fp16":
            return self.fp16_tflops
        return self.fp32_tflops


@dataclass(frozen=True)
class Offer:
    """One rentable instance type in one region, prices in USD per instance-hour."""

    provider: str
    region: str
    instance_type: str
    gpu: str
    gpu_count: float
    gpu_memory_gib: float | None
    vcpus: float | None
    ram_gib: float | None
    price_hour: float | None
    spot_hour: float | None
    source: str
    fetched_at: str
    # interruptions per instance-hour of the spot price, where published (AWS spot advisor)
    interruption_per_hour: float | None = None

    @property
    def identity(self) -> tuple[str, str, str]:
        """What makes two rows the same offer: the provider, region and instance type (what
        one rents; GCP's attachable GPUs are named in it, ``n1-highmem-16+2xP100``). Two
        rows of one identity that differ elsewhere, even in the GPU or its count, conflict:
        one is wrong, and the price data keeps one (:mod:`gacost.pricing.quality`)."""
        return (self.provider, self.region, self.instance_type)

    @property
    def per_gpu_hour(self) -> float | None:
        """On-demand price divided by the GPU count (for comparison only)."""
        if self.price_hour is None or self.gpu_count <= 0:
            return None
        return self.price_hour / self.gpu_count


@dataclass(frozen=True)
class ModelArch:
    """The architecture fields of a causal LM that time and memory depend on."""

    name: str
    model_type: str
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int
    tie_word_embeddings: bool

    @property
    def query_width(self) -> int:
        """Width of a layer's queries (and of attention's output): heads x head size."""
        return self.num_attention_heads * self.head_dim

    @property
    def kv_width(self) -> int:
        """Width of a layer's keys, and of its values: key/value heads x head size."""
        return self.num_key_value_heads * self.head_dim

    @property
    def layer_linear_params(self) -> int:
        """Parameters of the linear layers of one decoder block (q, k, v, o, gate, up, down)."""
        h, i = self.hidden_size, self.intermediate_size
        q = h * self.query_width
        kv = 2 * h * self.kv_width
        o = self.query_width * h
        mlp = 3 * h * i
        return q + kv + o + mlp

    @property
    def embedding_params(self) -> int:
        """Input embedding parameters (the LM head shares them when tied)."""
        return self.vocab_size * self.hidden_size

    @property
    def total_params(self) -> int:
        """Approximate parameter count (norms ignored)."""
        head = 0 if self.tie_word_embeddings else self.embedding_params
        return self.num_hidden_layers * self.layer_linear_params + self.embedding_params + head

    def lora_params(self, rank: int, targets: tuple[str, ...]) -> int:
        """Trainable LoRA parameters for ``rank`` on the named linear layers of every block."""
        h, i = self.hidden_size, self.intermediate_size
        qd, kvd = self.query_width, self.kv_width
        shapes = {
            "q_proj": (h, qd),
            "k_proj": (h, kvd),
            "v_proj": (h, kvd),
            "o_proj": (qd, h),
            "gate_proj": (h, i),
            "up_proj": (h, i),
            "down_proj": (i, h),
        }
        per_layer = sum(rank * (a + b) for name, (a, b) in shapes.items() if name in targets)
        return self.num_hidden_layers * per_layer
