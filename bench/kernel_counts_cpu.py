"""Count the operators that would launch GPU work, per micro-step, on the CPU.

A tiny random-weight copy of a shipped architecture (its ``model_type`` and per-family
switches; the sizes shrunk) is wrapped exactly as a user's script does it (TRL
``SFTTrainer(peft_config=LoraConfig(...))``), trained for a few updates on the CPU, and
one update is recorded with ``torch.profiler``. Each micro-step (``Trainer.training_step``,
marked with ``record_function``) is a forward, TRL's loss and metrics, and a backward.

Counted: aten operators that are effective leaves of the operator tree: not pure metadata
(views, reshapes, ``empty``, a ``to`` that copies nothing: they launch nothing on a GPU) and
with no launching aten operator below them.
That is a proxy for kernel launches: on a GPU each counted leaf launches one kernel or
copy (a GEMM may launch a second, split-K, kernel; some fused GPU kernels differ).

Used by ``bench/kernel_counts.py`` and ``bench/MODEL.md`` ("Kernel counts") to learn the
per-module structure: differences between runs with 2 and 4 layers, all-linear vs
attention-only targets, checkpointing on and off, give per-layer and per-model counts.

    python bench/kernel_counts_cpu.py --out bench/results/kernel-counts-cpu.json
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# Leaf aten operators that launch no GPU work (metadata, views, allocation).
NO_LAUNCH = frozenset(
    """
    aten::view aten::_unsafe_view aten::reshape aten::t aten::transpose aten::permute
    aten::expand aten::expand_as aten::as_strided aten::slice aten::select aten::unsqueeze
    aten::squeeze aten::detach aten::detach_ aten::alias aten::empty aten::empty_strided
    aten::empty_like aten::resize_ aten::lift_fresh aten::split aten::split_with_sizes
    aten::chunk aten::unbind aten::narrow aten::contiguous aten::to aten::_to_copy
    aten::result_type aten::view_as aten::unflatten aten::flatten aten::numpy_T
    aten::_reshape_alias aten::set_ aten::is_same_size aten::_has_compatible_shallow_copy_type
    aten::movedim aten::swapaxes aten::matrix_H aten::mT aten::_conj aten::resolve_conj
    aten::resolve_neg aten::is_nonzero aten::size aten::stride aten::dim aten::requires_grad_
    aten::_version aten::output_nr aten::retain_grad aten::expand_copy aten::sym_size
    aten::diagonal aten::unfold aten::_nested_tensor_size aten::align_as aten::record_stream
    """.split()
)
# ``_local_scalar_dense`` (``.item()``) is a device-to-host copy plus a sync: counted, and
# also reported apart.
ITEM = "aten::_local_scalar_dense"

TINY = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "vocab_size": 1024,
}


def tiny_config(path: Path, layers: int) -> dict[str, Any]:
    raw = json.loads(path.read_text())
    cfg = {k: v for k, v in raw.items() if not k.startswith("_") and v is not None}
    cfg.update(TINY)
    cfg["num_hidden_layers"] = layers
    for key in ("layer_types", "max_window_layers"):
        cfg.pop(key, None)
    cfg.pop("quantization_config", None)
    # token ids inside the tiny vocabulary (some configs default to ids of the real one)
    cfg.update({"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 1})
    return cfg


def count_ops(prof: Any, n_micro: int) -> dict[str, Any]:
    """Leaf-operator counts per micro-step within the ``kc_microstep`` ranges."""
    evs = list(prof.events())
    ranges = [(e.time_range.start, e.time_range.end) for e in evs if e.name == "kc_microstep"]
    if len(ranges) != n_micro:
        raise RuntimeError(f"expected {n_micro} micro-steps, profiled {len(ranges)}")

    def inside(e: Any) -> bool:
        s = e.time_range.start
        return any(a <= s <= b for a, b in ranges)

    memo: dict[int, bool] = {}

    def launches(e: Any) -> bool:
        """Whether ``e`` or an aten operator below it would launch GPU work."""
        key = id(e)
        if key not in memo:
            below = [launches(c) for c in e.cpu_children if c.name.startswith("aten::")]
            memo[key] = any(below) or e.name not in NO_LAUNCH
        return memo[key]

    leaves: collections.Counter[str] = collections.Counter()
    items = 0
    for e in evs:
        if not e.name.startswith("aten::") or not inside(e):
            continue
        if e.name == ITEM:
            items += 1
        # an effective leaf: a launching operator with nothing launching below it
        if e.name in NO_LAUNCH or any(
            launches(c) for c in e.cpu_children if c.name.startswith("aten::")
        ):
            continue
        leaves[e.name] += 1
    total = sum(leaves.values())
    mm = sum(leaves[n] for n in ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"))
    return {
        "launching_ops_per_microstep": total / n_micro,
        "mm_ops_per_microstep": mm / n_micro,
        "item_syncs_per_microstep": items / n_micro,
        "by_op_per_microstep": {
            k: round(v / n_micro, 3) for k, v in sorted(leaves.items(), key=lambda kv: -kv[1])
        },
    }


def run_one(model_cfg: Path, layers: int, targets: str, gc: bool, m: int, k: int, seq: int,
            rank: int, attn: str = "sdpa", precision: str = "bf16",
            dropout: float = 0.0) -> dict[str, Any]:
    import torch
    from peft import LoraConfig
    from torch.profiler import ProfilerActivity, profile, record_function
    from transformers import AutoConfig, AutoModelForCausalLM, TrainerCallback
    from trl import SFTTrainer

    from gacost.calibration import builder, protocol

    cfg = tiny_config(model_cfg, layers)
    model_type = cfg.pop("model_type")
    cfg.pop("torch_dtype", None)
    config = AutoConfig.for_model(model_type, **cfg)
    config.use_cache = False
    torch.manual_seed(0)
    # sdpa, as the GPU sweep ran every model. This transformers refuses sdpa for Gemma-2
    # (its sdpa path does not support the attention logit soft-capping); the sweep's
    # transformers 5.17 ran Gemma-2 with sdpa, and its counts match sdpa without the
    # attention soft-capping (bench/MODEL.md, "Kernel counts"): build it eager, then switch
    # to sdpa with that soft-capping off (the final-logit soft-capping stays).
    note = ""
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    try:
        model = AutoModelForCausalLM.from_config(  # type: ignore[no-untyped-call]
            config, dtype=dtype, attn_implementation=attn)
    except ValueError:
        if attn != "sdpa" or getattr(config, "attn_logit_softcapping", None) is None:
            raise
        config.attn_logit_softcapping = None
        model = AutoModelForCausalLM.from_config(  # type: ignore[no-untyped-call]
            config, dtype=dtype, attn_implementation="eager")
        model.config._attn_implementation = "sdpa"
        note = "sdpa without attention soft-capping (built eager, switched)"
    tok = builder.placeholder_tokenizer()
    builder.align_special_tokens(model, tok)
    warm, n_prof = 2, 1
    steps = warm + n_prof
    data = builder.synthetic_dataset(m * k * steps, seq, config.vocab_size, seed=0)

    class Prof(TrainerCallback):
        def __init__(self) -> None:
            self.prof: Any = None

        def on_step_end(self, args: Any, state: Any, control: Any,  # noqa: ARG002
                        **kw: Any) -> None:
            if state.global_step == warm:
                self.prof = profile(activities=[ProfilerActivity.CPU])
                self.prof.__enter__()
            elif state.global_step == warm + n_prof and self.prof is not None:
                self.prof.__exit__(None, None, None)

    cb = Prof()
    with tempfile.TemporaryDirectory() as odir:
        # the GPU sweep's trainer settings (bench/h200_sweep.py); the data order is seeded
        # too, which no operator count depends on
        args = protocol.sft_config(
            odir, micro_batch=m, grad_accum=k, steps=steps, seq_len=seq, precision=precision,
            checkpointing=gc, seed=42, use_cpu=True, optimizer="2026-12-02",
        )
        peft_cfg = LoraConfig(
            r=rank, lora_alpha=2 * rank, lora_dropout=dropout, bias="none", task_type="CAUSAL_LM",
            target_modules="all-linear" if targets == "all-linear"
            else ["q_proj", "k_proj", "v_proj", "o_proj"],
        )
        trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tok,
                             peft_config=None if targets == "full" else peft_cfg,
                             callbacks=[cb])
        orig = trainer.training_step

        def training_step(*a: Any, **kw: Any) -> Any:
            with record_function("kc_microstep"):
                return orig(*a, **kw)

        trainer.training_step = training_step
        trainer.train()
    n_modules = sum(1 for n, _ in trainer.model.named_modules() if n.endswith("lora_A"))
    res = count_ops(cb.prof, n_prof * k)
    res.update({
        "model": model_cfg.stem, "model_type": model_type, "layers": layers,
        "targets": targets, "gradient_checkpointing": gc, "micro_batch": m, "grad_accum": k,
        "seq": seq, "rank": rank, "lora_modules": n_modules,
        "attn_implementation": model.config._attn_implementation,
        "precision": precision, "lora_dropout": dropout,
        "note": note,
    })
    return res


DROPOUT = 0.05  # TRL's default lora_dropout; any p in (0, 1) runs the same operators
FAMILIES = ("Qwen--Qwen3-1.7B", "meta-llama--Llama-3.2-1B", "google--gemma-2-2b")
GRID = [
    # model config, layers, targets ("full": no adapter, every weight trained), gc, m, k,
    # precision (bf16 autocast, or fp32 weights without autocast), LoRA dropout
    (c, n, t, g, 1, 1, p, 0.0)
    for p in ("bf16", "fp32")
    for c in FAMILIES
    for n in (2, 4)
    for t in ("all-linear", "attention")
    for g in (True, False)
] + [
    (c, n, "full", g, 1, 1, "bf16", 0.0)
    for c in FAMILIES + ("microsoft--Phi-3-mini-4k-instruct",)
    for n in (2, 4)
    for g in (True, False)
] + [
    ("Qwen--Qwen3-1.7B", 2, "all-linear", True, 2, 1, "bf16", 0.0),
    ("Qwen--Qwen3-1.7B", 2, "all-linear", True, 1, 2, "bf16", 0.0),
    ("Qwen--Qwen3-1.7B", 2, "all-linear", True, 1, 4, "bf16", 0.0),
    ("Qwen--Qwen3-1.7B", 2, "full", True, 1, 2, "bf16", 0.0),
    ("Qwen--Qwen2.5-0.5B", 2, "all-linear", True, 1, 1, "bf16", 0.0),
    ("Qwen--Qwen2.5-0.5B", 4, "all-linear", True, 1, 1, "bf16", 0.0),
    ("mistralai--Mistral-7B-v0.3", 2, "all-linear", True, 1, 1, "bf16", 0.0),
    ("mistralai--Mistral-7B-v0.3", 4, "all-linear", True, 1, 1, "bf16", 0.0),
] + [
    ("microsoft--Phi-3-mini-4k-instruct", n, "all-linear", g, 1, 1, p, 0.0)
    for p in ("bf16", "fp32")
    for g in (True, False)
    for n in (2, 4)
] + [
    # LoRA dropout > 0: PEFT's nn.Dropout on the input of every wrapped linear (issue 19)
    (c, n, t, g, 1, 1, p, DROPOUT)
    for c, p in [(f, "bf16") for f in FAMILIES] + [("Qwen--Qwen3-1.7B", "fp32")]
    for n in (2, 4)
    for t in ("all-linear", "attention")
    for g in (True, False)
] + [
    ("microsoft--Phi-3-mini-4k-instruct", n, "all-linear", g, 1, 1, "bf16", DROPOUT)
    for g in (True, False)
    for n in (2, 4)
]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=None, help="JSON to write (default: print only)")
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--rank", type=int, default=8)
    p.add_argument("--only", default=None, help="substring of the model config name")
    a = p.parse_args(argv)
    import peft
    import torch
    import transformers
    import trl

    torch.set_num_threads(1)
    rows = []
    t0 = time.time()
    for cfg_name, layers, targets, gc, m, k, precision, dropout in GRID:
        if a.only and a.only not in cfg_name:
            continue
        path = ROOT / "data" / "models" / f"{cfg_name}.json"
        r = run_one(path, layers, targets, gc, m, k, a.seq, a.rank, precision=precision,
                    dropout=dropout)
        rows.append(r)
        print(f"{cfg_name:28s} L={layers} {targets:10s} gc={int(gc)} {m}x{k} {precision} "
              f"dropout={dropout:g} {r['attn_implementation']}: "
              f"{r['launching_ops_per_microstep']:.0f} ops, {r['mm_ops_per_microstep']:.0f} mm, "
              f"{r['lora_modules']} LoRA modules", flush=True)
    if a.out:
        doc = {
            "schema": "gacost-kernel-counts-cpu", "version": 1,
            "created_at": time.strftime("%Y-%m-%d"),
            "software": {"torch": torch.__version__, "transformers": transformers.__version__,
                         "trl": trl.__version__, "peft": peft.__version__,
                         "python": sys.version.split()[0]},
            "method": __doc__.split("\n\n")[1].replace("\n", " "),
            "counting": {"no_launch_leaf_ops": sorted(NO_LAUNCH)},
            "seq": a.seq, "rank": a.rank, "wall_s": round(time.time() - t0, 1), "rows": rows,
        }
        tmp = a.out + ".tmp"
        Path(tmp).write_text(json.dumps(doc, indent=1) + "\n")
        os.replace(tmp, a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
