"""Build what a calibration trains: the model (random weights from the job's config, or real
weights), its LoRA adapters (none for a full fine-tune), a tokenizer and a fixed-length
dataset; and the copy of the trainable weights every split starts from."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from peft import LoraConfig, PeftModel
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


def weight_dtype(job: Job) -> torch.dtype:
    """The dtype the weights are built or loaded in: the job's precision, except a full
    fine-tune in fp16, whose weights stay fp32 (fp16 mixed precision scales the gradients,
    and torch's GradScaler refuses to unscale fp16 ones: the fp32 master weights the memory
    model counts)."""
    if job.method == "full" and job.precision == "fp16":
        return torch.float32
    return DTYPES[job.precision]


def build_model(
    cfg: dict[str, Any], job: Job, device: torch.device, weights: str | None = None
) -> PreTrainedModel:
    """The causal LM: ``weights`` loaded, or random weights from ``cfg`` (time and memory
    depend only on shapes). For QLoRA without ``weights`` a random-weight checkpoint of the
    config is saved to a temporary folder and loaded 4-bit from there, as a real checkpoint
    would be (it quantises on load)."""
    dtype = weight_dtype(job)
    kwargs: dict[str, Any] = {"dtype": dtype}
    if job.method == "qlora":
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True,
            bnb_4bit_quant_type="nf4",
            bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=torch.bfloat16 if job.precision == "bf16" else torch.float16,
        )
    model: PreTrainedModel
    if weights is not None:
        try:
            model = AutoModelForCausalLM.from_pretrained(weights, device_map={"": device}, **kwargs)
        except (OSError, ValueError) as exc:
            raise CalibrationError(f"--weights: cannot load {weights} ({exc})") from exc
    elif job.method == "qlora":
        model = _random_quantised(cfg, dtype, device, kwargs)
    else:
        model = _random_model(cfg, dtype, device)
    model.config.use_cache = False
    return model


def _random_model(cfg: dict[str, Any], dtype: torch.dtype, device: torch.device
                  ) -> PreTrainedModel:
    config = AutoConfig.for_model(
        cfg["model_type"],
        **{k: v for k, v in cfg.items() if k not in ("model_type", "torch_dtype", "dtype")},
    )
    config.use_cache = False
    with torch.device(device):
        model: PreTrainedModel = AutoModelForCausalLM.from_config(config, dtype=dtype)
    return model


def _random_quantised(cfg: dict[str, Any], dtype: torch.dtype, device: torch.device,
                      kwargs: dict[str, Any]) -> PreTrainedModel:
    """Save random weights (built on ``device``) to a temporary folder, load them 4-bit."""
    with tempfile.TemporaryDirectory(prefix="gacost-qlora-") as folder:
        random = _random_model(cfg, dtype, device)
        try:
            random.save_pretrained(folder, safe_serialization=True)
        except OSError as exc:
            raise CalibrationError(
                f"method: qlora: cannot save the random-weight checkpoint to {folder} "
                f"({exc.strerror or exc}); free disk space or set TMPDIR to a larger folder"
            ) from None
        del random
        if device.type == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(device)
        return AutoModelForCausalLM.from_pretrained(folder, device_map={"": device}, **kwargs)


def lora_config(job: Job) -> LoraConfig:
    """The job's LoRA adapter settings as PEFT takes them."""
    targets: str | list[str] = (
        "all-linear" if job.lora.target_modules == "all-linear" else list(job.lora.targets)
    )
    return LoraConfig(
        r=job.lora.r,
        lora_alpha=_alpha(job.lora.effective_alpha),
        lora_dropout=job.lora.dropout,
        bias="none",
        task_type="CAUSAL_LM",
        target_modules=targets,
    )


def model_as_trl_builds_it(
    model: PreTrainedModel,
    job: Job,
    tokenizer: PreTrainedTokenizerBase,
    dataset: Dataset,
    device: torch.device,
    seed: int = 42,
) -> PreTrainedModel | PeftModel:
    """The model a user's ``SFTTrainer`` trains: for ``method: full`` the model itself (no
    ``peft_config``: TRL trains every weight, which :func:`build_model` leaves trainable, and
    nothing of LoRA or QLoRA runs); else :func:`peft_model_as_trl_builds_it`."""
    if job.method == "full":
        return model
    return peft_model_as_trl_builds_it(model, job, tokenizer, dataset, device, seed)


def peft_model_as_trl_builds_it(
    model: PreTrainedModel,
    job: Job,
    tokenizer: PreTrainedTokenizerBase,
    dataset: Dataset,
    device: torch.device,
    seed: int = 42,
) -> PeftModel:
    """Wrap ``model`` with LoRA adapters the way the installed TRL does for a user's script.

    TRL's ``SFTTrainer`` is given the base model and ``peft_config`` and builds the
    ``PeftModel`` itself (in TRL 1.16: ``get_peft_model``, input gradients for checkpointing,
    QLoRA adapters cast to bf16; it does *not* call ``prepare_model_for_kbit_training``), so
    whatever the installed TRL does, the calibration does too. With the job's
    ``qlora.prepare_for_kbit: true`` PEFT's ``prepare_model_for_kbit_training`` runs first,
    as the older recipe in many scripts does.
    """
    from trl import SFTConfig, SFTTrainer

    if job.method == "qlora" and job.qlora.prepare_for_kbit:
        from peft import prepare_model_for_kbit_training

        model = prepare_model_for_kbit_training(
            model, use_gradient_checkpointing=job.gradient_checkpointing
        )
    torch.manual_seed(seed)
    with tempfile.TemporaryDirectory(prefix="gacost-wrap-") as out:
        args = SFTConfig(
            output_dir=out,
            max_steps=1,
            max_length=job.sequence_length,
            gradient_checkpointing=job.gradient_checkpointing,
            gradient_checkpointing_kwargs=(
                {"use_reentrant": False} if job.gradient_checkpointing else None
            ),
            bf16=job.precision == "bf16",
            fp16=job.precision == "fp16",
            report_to="none",
            use_cpu=device.type != "cuda",
        )
        try:
            trainer = SFTTrainer(model=model, args=args, train_dataset=dataset,
                                 processing_class=tokenizer, peft_config=lora_config(job))
        except ValueError as exc:
            raise CalibrationError(f"lora.target_modules: {exc}") from exc
        wrapped = trainer.model
        del trainer
    if not isinstance(wrapped, PeftModel):
        raise CalibrationError(
            f"the installed TRL did not build a PEFT model (got {type(wrapped).__name__})")
    return wrapped


def _alpha(alpha: float) -> int:
    """PEFT types ``lora_alpha`` as int; a fractional alpha is passed through unchanged."""
    return int(alpha) if alpha == int(alpha) else alpha  # type: ignore[return-value]


def trainable_state(
    model: torch.nn.Module, on: torch.device | None = None
) -> dict[str, torch.Tensor]:
    """A copy of every trainable tensor, on ``on`` (default: where each tensor is), to give
    every split the same starting point. A full fine-tune's copy is every weight: kept on the
    CPU (``on``) it adds nothing to the GPU's memory, which the splits' peaks measure."""
    return {
        n: p.detach().to(on or p.device, copy=True)
        for n, p in model.named_parameters()
        if p.requires_grad
    }


def restore_trainable(model: torch.nn.Module, state: dict[str, torch.Tensor]) -> None:
    """Put the trainable tensors back to ``state`` in place and drop their gradients (a
    full fine-tune's OOM leaves some); the next split's trainer builds a fresh optimizer."""
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
