"""Build what a calibration trains: the model (random weights from the job's config, or real
weights), its LoRA adapters, a tokenizer and a fixed-length dataset."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from peft import LoraConfig, PeftModel, get_peft_model
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    PreTrainedTokenizerFast,
)

from gacost.base.errors import CalibrationError
from gacost.base.job import Job

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


def check_precision(job: Job, device: torch.device) -> None:
    """Refuse precisions the device cannot train in, with the fix."""
    if device.type != "cuda" and job.precision == "fp16":
        raise CalibrationError(
            "precision: fp16 mixed precision needs a CUDA GPU; use fp32 or bf16 on the CPU"
        )
    if device.type == "cuda" and job.precision == "bf16" and not torch.cuda.is_bf16_supported():
        raise CalibrationError("precision: this GPU has no bf16; set precision: fp16")
    if job.method == "qlora":
        try:
            import bitsandbytes  # noqa: F401
        except ImportError:
            raise CalibrationError(
                "method: qlora needs bitsandbytes (`pip install bitsandbytes`) and a CUDA GPU"
            ) from None
        if device.type != "cuda":
            raise CalibrationError("method: qlora calibrates on a CUDA GPU only")


def build_model(
    cfg: dict[str, Any], job: Job, device: torch.device, weights: str | None = None
) -> PreTrainedModel:
    """The causal LM: random weights built on ``device`` from ``cfg``, or ``weights`` loaded."""
    dtype = DTYPES[job.precision]
    kwargs: dict[str, Any] = {"dtype": dtype}
    if job.method == "qlora":
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True,
            bnb_4bit_quant_type="nf4",
            bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=torch.bfloat16 if job.precision == "bf16" else torch.float16,
        )
    if weights is not None:
        try:
            model = AutoModelForCausalLM.from_pretrained(weights, device_map={"": device}, **kwargs)
        except (OSError, ValueError) as exc:
            raise CalibrationError(f"--weights: cannot load {weights} ({exc})") from exc
    elif job.method == "qlora":
        raise CalibrationError(
            "method: qlora quantises real weights; pass --weights PATH (a local folder or Hub id)"
        )
    else:
        config = AutoConfig.for_model(
            cfg["model_type"],
            **{k: v for k, v in cfg.items() if k not in ("model_type", "torch_dtype", "dtype")},
        )
        config.use_cache = False
        with torch.device(device):
            model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    model.config.use_cache = False
    return model


def apply_lora(model: PreTrainedModel, job: Job, seed: int = 42) -> PeftModel:
    """Wrap ``model`` with PEFT LoRA adapters as the job says (same init for a given seed)."""
    if job.method == "qlora":
        from peft import prepare_model_for_kbit_training

        model = prepare_model_for_kbit_training(
            model, use_gradient_checkpointing=job.gradient_checkpointing
        )
    torch.manual_seed(seed)
    targets: str | list[str] = (
        "all-linear" if job.lora.target_modules == "all-linear" else list(job.lora.targets)
    )
    config = LoraConfig(
        r=job.lora.r,
        lora_alpha=_alpha(job.lora.effective_alpha),
        lora_dropout=job.lora.dropout,
        bias="none",
        task_type="CAUSAL_LM",
        target_modules=targets,
    )
    try:
        return get_peft_model(model, config)
    except ValueError as exc:
        raise CalibrationError(f"lora.target_modules: {exc}") from exc


def _alpha(alpha: float) -> int:
    """PEFT types ``lora_alpha`` as int; a fractional alpha is passed through unchanged."""
    return int(alpha) if alpha == int(alpha) else alpha  # type: ignore[return-value]


def adapter_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A copy of every trainable tensor (to give every split the same starting point)."""
    return {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}


def restore_adapter(model: torch.nn.Module, state: dict[str, torch.Tensor]) -> None:
    """Put the trainable tensors back to ``state`` and clear gradients."""
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name in state:
                param.copy_(state[name])
    model.zero_grad(set_to_none=True)


def placeholder_tokenizer() -> PreTrainedTokenizerFast:
    """A tiny tokenizer for pre-tokenised synthetic data (TRL needs pad and eos tokens)."""
    vocab = {"<pad>": 0, "<eos>": 1, "<unk>": 2}
    tok = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>"
    )


def align_special_tokens(model: torch.nn.Module, tok: PreTrainedTokenizerBase) -> None:
    """Give the model the tokenizer's pad/eos ids (what TRL would otherwise do, noisily)."""
    for config in (getattr(model, "config", None), getattr(model, "generation_config", None)):
        if config is not None:
            config.pad_token_id = tok.pad_token_id
            config.eos_token_id = tok.eos_token_id


def synthetic_dataset(n: int, seq_len: int, vocab_size: int, seed: int = 0) -> Dataset:
    """``n`` random token sequences of exactly ``seq_len`` tokens (ids avoid 0-2)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, max(4, vocab_size), (n, seq_len), generator=g)
    return Dataset.from_dict({"input_ids": ids.tolist()})


def load_tokenizer(path: str) -> PreTrainedTokenizerBase:
    """A real tokenizer from a local folder or the Hub."""
    try:
        tok = AutoTokenizer.from_pretrained(path)
    except (OSError, ValueError) as exc:
        raise CalibrationError(f"--tokenizer: cannot load {path} ({exc})") from exc
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def file_dataset(path: str, tokenizer: PreTrainedTokenizerBase, seq_len: int, n: int) -> Dataset:
    """``n`` sequences from a local JSONL or Parquet file, tokenised and cut to ``seq_len``.

    Each record's ``text`` field (or ``messages``/``prompt``+``completion`` joined as text)
    is tokenised and truncated; the trainer pads every sequence to ``seq_len`` (one bucket),
    so every split does the same work. The file is cycled if it has fewer than ``n`` records.
    """
    texts = _read_texts(Path(path))
    if not texts:
        raise CalibrationError(f"--data: {path} has no usable records (need a 'text' field)")
    encoded = [list(tokenizer(t, add_special_tokens=True)["input_ids"])[:seq_len] for t in texts]
    return Dataset.from_dict({"input_ids": [encoded[i % len(encoded)] for i in range(n)]})


def _read_texts(path: Path) -> list[str]:
    if not path.is_file():
        raise CalibrationError(f"--data: no file at {path}")
    if path.suffix == ".parquet":
        import pandas as pd

        records = pd.read_parquet(path).to_dict("records")
    else:
        records = []
        with path.open(encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if line.strip():
                    try:
                        records.append(json.loads(line))
                    except ValueError:
                        raise CalibrationError(
                            f"--data: {path} line {lineno} is not JSON (expected JSON Lines)"
                        ) from None
    return [t for t in (_text_of(r) for r in records) if t]


def _text_of(record: Any) -> str:
    if not isinstance(record, dict):
        return ""
    if isinstance(record.get("text"), str):
        return str(record["text"])
    if isinstance(record.get("messages"), list):
        return "\n".join(
            str(m.get("content", "")) for m in record["messages"] if isinstance(m, dict)
        )
    if isinstance(record.get("prompt"), str):
        return str(record["prompt"]) + str(record.get("completion", ""))
    return ""
