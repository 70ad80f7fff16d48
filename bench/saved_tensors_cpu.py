"""Count the activation bytes one decoder layer saves for its backward, on the CPU.

The memory model's working set per token and layer
(``gacost.advisor.memory_model.layer_working_set_per_token``) is a count of the tensors
autograd keeps. This bench checks that count against the real modules: a random-weight copy
of a shipped architecture at its real widths (2 and 4 layers, 96 tokens), wrapped as a
user's script wraps it (PEFT LoRA r16 on every linear, or a full fine-tune), runs one
forward in bf16 under autocast inside ``torch.autograd.graph.saved_tensors_hooks``. Every
saved tensor that is not a parameter is counted once per storage (views share one), only
if one of its dimensions is the token count (the adapters' bf16 weight casts do not grow
with tokens). Per layer and token: (4 layers - 2 layers) / 2 / tokens.

What the CPU cannot show: CUDA's dropout saves a boolean mask (the CPU keeps the scaled
float noise), and the GPU attention kernels may keep a view of a fused projection's output
where the CPU copies it; run without dropout, and read Phi-3's row with that in mind
(bench/MODEL.md, "Saved tensors, counted").

    python bench/saved_tensors_cpu.py   # a table; bench/results/saved-tensors-cpu.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "saved-tensors-cpu.json"
TOKENS = 96
CASES = (
    ("Qwen/Qwen3-0.6B", "lora"), ("Qwen/Qwen3-1.7B", "full"),
    ("meta-llama/Llama-3.2-1B", "lora"), ("meta-llama/Llama-3.2-1B", "full"),
    ("google/gemma-2-2b", "lora"), ("microsoft/Phi-3-mini-4k-instruct", "lora"),
)


def saved_bytes(name: str, layers: int, method: str) -> int:
    """Bytes of the non-parameter tensors saved for the backward in one forward pass."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM

    from gacost.base import models

    _, cfg = models.load_model_config(name)
    config = AutoConfig.for_model(**{k: v for k, v in cfg.items() if k != "architectures"})
    config.num_hidden_layers = layers  # attention as transformers picks it (Gemma-2: eager)
    torch.manual_seed(0)
    model: Any = AutoModelForCausalLM.from_config(  # type: ignore[no-untyped-call]
        config, dtype=torch.bfloat16)
    if method == "lora":
        model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0,
                                                 target_modules="all-linear"))
    model.train()
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in params and TOKENS in t.shape:
            seen.setdefault(storage.data_ptr(), storage.nbytes())
        return t

    ids = torch.randint(0, config.vocab_size, (1, TOKENS))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), \
            torch.autocast("cpu", dtype=torch.bfloat16):
        model(input_ids=ids, labels=ids)
    return sum(seen.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    from gacost.advisor import memory_model
    from gacost.advisor.time_model import TrainSetup
    from gacost.base import models
    from gacost.base.job import LINEAR_MODULES

    rows = []
    for name, method in CASES:
        per_layer = (saved_bytes(name, 4, method) - saved_bytes(name, 2, method)) / 2 / TOKENS
        model_name, cfg = models.load_model_config(name)
        arch = models.model_arch(model_name, cfg)
        setup = TrainSetup(method, 16 if method == "lora" else 0,
                           LINEAR_MODULES if method == "lora" else (), TOKENS, "bf16", False,
                           True)
        counted = memory_model.layer_working_set_per_token(arch, setup)
        rows.append({"model": name, "method": method, "saved_b_per_layer_token": per_layer,
                     "model_b_per_layer_token": counted,
                     "model_over_saved": round(counted / per_layer, 4)})
        print(f"{name:34s} {method:5s} saved {per_layer:9.0f} B  model {counted:9.0f} B  "
              f"{counted / per_layer - 1:+.1%}")
    args.out.write_text(json.dumps({"tokens": TOKENS, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
