# ARCHIVED 2026-12-03 (issue 21), not maintained: the 100-update protocol of 2026-12-02 (issues
# 3 and 11), run on the lent H200 by calibration_vs_protocol.py and repeatability.py beside it.
# Its medians are in bench/results/h200-run2-calibration_vs_protocol.json and
# bench/results/repeatability/, and in bench/RESULTS.md. The reference a calibration is checked
# against now is bench/user_script.py (bench/README.md).
"""The published measurement protocol, in plain TRL + PEFT (no gacost code in the timed path).

Kept to reproduce the measurements of 2026-12-02 (bench/RESULTS.md): its trainer settings are
those calibrate used then (adamw_torch, a constant schedule, no logging), taken from the one
definition, :func:`gacost.calibration.protocol.sft_config` with ``optimizer="2026-12-02"``;
the placeholder tokenizer and the synthetic rows are calibrate's
(:mod:`gacost.calibration.builder`; on the device the project is installed,
``PYTHONPATH=/tmp/site``). The reference a calibration is checked against now is the user's
script with TRL's defaults, ``bench/user_script.py``.

One split per process: build the model from an architecture config with random weights on
the GPU, wrap it with PEFT LoRA, train with TRL's SFTTrainer for ``warmup + updates``
optimizer updates on fixed-length synthetic sequences, and time every update between
``on_step_end`` callbacks with ``torch.cuda.synchronize()``. Prints one JSON line.

    python bench/archive/published_protocol.py --config data/models/Qwen--Qwen3-1.7B.json \
        --micro-batch 2 --grad-accum 2 --seq-len 512 --precision bf16
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time

START = time.perf_counter()

import torch  # noqa: E402
from peft import LoraConfig, get_peft_model  # noqa: E402
from transformers import AutoConfig, AutoModelForCausalLM  # noqa: E402
from trl import SFTTrainer  # noqa: E402

from gacost.calibration import builder, protocol  # noqa: E402

CUDA = torch.cuda.is_available()
# one timer for both references (bench/ is on the path of a bench script)
from user_script import Timer  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--config", required=True)
    p.add_argument("--micro-batch", type=int, required=True)
    p.add_argument("--grad-accum", type=int, required=True)
    p.add_argument("--seq-len", type=int, default=512)
    p.add_argument("--precision", choices=("fp16", "bf16"), default="bf16")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--updates", type=int, default=100)
    p.add_argument("--rank", type=int, default=16)
    p.add_argument("--alpha", type=float, default=32)
    a = p.parse_args()
    dtype = torch.bfloat16 if a.precision == "bf16" else torch.float16

    raw = json.load(open(a.config))
    cfg = {k: v for k, v in raw.items() if not k.startswith("_") and v is not None}
    model_type = cfg.pop("model_type")
    cfg.pop("torch_dtype", None)
    config = AutoConfig.for_model(model_type, **cfg)
    config.use_cache = False
    torch.manual_seed(42)
    with torch.device("cuda" if CUDA else "cpu"):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    model = get_peft_model(
        model,
        LoraConfig(
            r=a.rank,
            lora_alpha=a.alpha,
            lora_dropout=0.0,
            bias="none",
            task_type="CAUSAL_LM",
            target_modules="all-linear",
        ),
    )
    tok = builder.placeholder_tokenizer()
    builder.align_special_tokens(model, tok)
    n = a.micro_batch * a.grad_accum * (a.warmup + a.updates)
    data = builder.synthetic_dataset(n, a.seq_len, config.vocab_size, seed=0)
    timer = Timer()
    with tempfile.TemporaryDirectory() as out:
        args = protocol.sft_config(
            out,
            micro_batch=a.micro_batch,
            grad_accum=a.grad_accum,
            steps=a.warmup + a.updates,
            seq_len=a.seq_len,
            precision=a.precision,
            checkpointing=True,
            seed=42,
            use_cpu=not CUDA,
            optimizer="2026-12-02",
        )
        trainer = SFTTrainer(
            model=model, args=args, train_dataset=data, processing_class=tok, callbacks=[timer]
        )
        if CUDA:
            torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        trainer.train()
        train_s = time.perf_counter() - t0
    timed = timer.times[a.warmup :]
    print(
        json.dumps(
            {
                "split": f"{a.micro_batch}x{a.grad_accum}",
                "micro_batch": a.micro_batch,
                "grad_accum": a.grad_accum,
                "warmup": a.warmup,
                "timed": len(timed),
                "median_s": statistics.median(timed),
                "mean_s": statistics.fmean(timed),
                "stdev_s": statistics.stdev(timed),
                "train_seconds": train_s,
                "process_seconds": time.perf_counter() - START,
                "peak_reserved_gib": torch.cuda.max_memory_reserved() / 2**30 if CUDA else None,
                "gpu": torch.cuda.get_device_name() if CUDA else "cpu",
                "update_times": [round(t, 5) for t in timer.times],
            }
        )
    )


if __name__ == "__main__":
    main()
