"""Which linear layers the checkpointed recompute multiplies again, counted on the CPU.

TRL runs gradient checkpointing non-reentrant (``use_reentrant=False``), and
``torch.utils.checkpoint``'s non-reentrant recompute stops once it has rebuilt the last tensor
the layer's backward saved. A layer whose last GEMM's output nothing saves (``down_proj`` in a
Llama layer, unless an adapter wraps it) skips that GEMM in the recompute. This script counts
it: a tiny random-weight copy of each shipped family (its config with the sizes shrunk, as
``bench/kernel_counts_cpu.py`` builds it), LoRA on the attention projections, LoRA on every
linear, or a full fine-tune, one forward and backward with checkpointing and one without; every
``mm``/``addmm`` the backward dispatches is recorded, and the recompute's GEMMs are the
checkpointed backward's less the other's. Each family's weight matrices multiplied again are
set beside the time model's (``time_model.recompute_linear_params``).

    python bench/recompute_gemms.py [--out bench/results/recompute-gemms.json]

Prints a table and writes the JSON (default ``bench/results/recompute-gemms.json``).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path
from typing import Any

from tabulate import tabulate

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))  # kernel_counts_cpu, also when a test loads this file
OUT = ROOT / "bench" / "results" / "recompute-gemms.json"
# one shipped config per family (data/models/)
FAMILIES = {
    "llama": "meta-llama--Llama-3.2-1B", "qwen2": "Qwen--Qwen2.5-0.5B",
    "qwen3": "Qwen--Qwen3-0.6B", "mistral": "mistralai--Mistral-7B-v0.3",
    "gemma2": "google--gemma-2-2b", "phi3": "microsoft--Phi-3-mini-4k-instruct",
}
LAYERS = 2
RANK = 4
ATTENTION = ("q_proj", "k_proj", "v_proj", "o_proj")
ALL_LINEAR = (*ATTENTION, "gate_proj", "up_proj", "down_proj")
CASES = (("lora", ATTENTION), ("lora", ALL_LINEAR), ("full", ALL_LINEAR))


def tiny_config(family: str) -> dict[str, Any]:
    """The family's shipped config shrunk as ``bench/kernel_counts_cpu.py`` shrinks it, with
    :data:`LAYERS` layers, in the default dtype and without a KV cache."""
    from kernel_counts_cpu import tiny_config as shrunk

    cfg = shrunk(ROOT / "data" / "models" / f"{FAMILIES[family]}.json", LAYERS)
    for key in ("torch_dtype", "dtype"):
        cfg.pop(key, None)
    return {**cfg, "use_cache": False}


def peft_targets(family: str, targets: tuple[str, ...]) -> list[str]:
    """PEFT target names of ``targets`` in ``family`` (Phi-3's fused projections)."""
    if family != "phi3":
        return list(targets)
    fused = {"q_proj": "qkv_proj", "k_proj": "qkv_proj", "v_proj": "qkv_proj",
             "gate_proj": "gate_up_proj", "up_proj": "gate_up_proj"}
    return sorted({fused.get(t, t) for t in targets})


def backward_gemm_weights(cfg: dict[str, Any], method: str, targets: tuple[str, ...],
                          checkpointing: bool) -> collections.Counter[tuple[int, int]]:
    """The (rows, columns) of every 2-D right operand of ``mm``/``addmm`` in one backward of
    the tiny model, counted."""
    import torch
    from peft import LoraConfig, get_peft_model
    from torch.utils._python_dispatch import TorchDispatchMode
    from transformers import AutoConfig, AutoModelForCausalLM

    class Gemms(TorchDispatchMode):  # type: ignore[no-untyped-call]
        def __init__(self) -> None:
            super().__init__()  # type: ignore[no-untyped-call]
            self.seen: collections.Counter[tuple[int, int]] = collections.Counter()

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            if func.overloadpacket.__name__ in ("mm", "addmm"):
                right = args[-1]
                if isinstance(right, torch.Tensor) and right.dim() == 2:
                    self.seen[int(right.shape[0]), int(right.shape[1])] += 1
            return func(*args, **(kwargs or {}))

    torch.manual_seed(0)
    family = cfg["model_type"]
    config = AutoConfig.for_model(**cfg)
    # Gemma-2 on sdpa needs its soft-capping off; eager attention runs bmm, not counted here
    config._attn_implementation = "eager" if family == "gemma2" else "sdpa"
    model: Any = AutoModelForCausalLM.from_config(config)  # type: ignore[no-untyped-call]
    if method == "lora":
        model = get_peft_model(model, LoraConfig(
            r=RANK, target_modules=peft_targets(family, targets), lora_dropout=0.0))
    if checkpointing:
        # as TRL's SFTTrainer sets it (trl/trainer/sft_trainer.py: use_reentrant False)
        model.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs={"use_reentrant": False})
    if method == "lora":
        # PEFT makes the embedding's output require a gradient under checkpointing; both
        # runs do, so their backwards differ by the recompute alone (without it, the first
        # layer's input-gradient GEMMs are skipped)
        model.enable_input_require_grads()
    model.train()
    ids = torch.randint(2, cfg["vocab_size"], (2, 16))
    loss = model(input_ids=ids, labels=ids).loss
    counter = Gemms()
    with counter:
        loss.backward()
    return counter.seen


def counted_recompute_params(family: str, method: str, targets: tuple[str, ...]) -> float:
    """Decoder linear parameters per layer the recompute multiplies again, counted: the
    checkpointed backward's GEMMs less the plain one's, on weights wider than the rank."""
    cfg = tiny_config(family)
    extra = (backward_gemm_weights(cfg, method, targets, True)
             - backward_gemm_weights(cfg, method, targets, False))
    params = sum(rows * cols * n for (rows, cols), n in extra.items()
                 if min(rows, cols) > RANK)
    return params / LAYERS


def modelled_recompute_params(family: str, method: str, targets: tuple[str, ...]) -> float:
    """The time model's recompute parameters per layer for the same tiny model."""
    from gacost.advisor import time_model
    from gacost.base.models import model_arch

    arch = model_arch(FAMILIES[family], tiny_config(family))
    setup = time_model.TrainSetup(method, RANK, targets, 16, "bf16", True)
    return time_model.recompute_linear_params(arch, setup) / arch.num_hidden_layers


def rows() -> list[dict[str, Any]]:
    """One row per family and case: counted and modelled recompute parameters per layer, and
    the layer's linear parameters."""
    from gacost.base.models import model_arch

    out = []
    for family in FAMILIES:
        layer = model_arch(FAMILIES[family], tiny_config(family)).layer_linear_params
        for method, targets in CASES:
            out.append({
                "family": family, "method": method,
                "adapters": "-" if method == "full" else
                ("attention" if targets == ATTENTION else "all-linear"),
                "layer_linear_params": layer,
                "counted": counted_recompute_params(family, method, targets),
                "modelled": modelled_recompute_params(family, method, targets)})
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    table = rows()
    print(tabulate([[r["family"], r["method"], r["adapters"], r["layer_linear_params"],
                     f"{r['counted']:.0f}", f"{r['modelled']:.0f}",
                     f"{r['counted'] / r['layer_linear_params']:.3f}"] for r in table],
                   headers=["family", "method", "adapters", "layer params",
                            "recompute counted", "modelled", "share"]))
    args.out.write_text(json.dumps({"layers": LAYERS, "rank": RANK, "rows": table}, indent=1)
                        + "\n")
    print(f"wrote {args.out}")
    return 0 if all(r["counted"] == r["modelled"] for r in table) else 1


if __name__ == "__main__":
    sys.exit(main())
