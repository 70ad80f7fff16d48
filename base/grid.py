"""What the keys of a sweep group's ``grid:`` mean, and their value checks.

A grid multiplies runs: one run per combination of its lists. gacost plans every run of a
group as the same work (the group's sequence length, effective batch and updates), so a grid
key is one of three kinds:

- a known hyper-parameter that does not change the work per run (``learning_rate``,
  ``seed``, ``weight_decay``, ...): each value is checked by type and range, as TRL and
  PEFT would take it;
- a key that would change the work (``sequence_length``, ``per_device_train_batch_size``,
  ``max_steps``, ``lora_r``, ``optim``, ...): refused, with where to put it instead, since
  the plan would silently price every run alike;
- any other key: a label (a dataset name, a prompt template, ...). Its values only count
  runs; any value goes, but numbers must be finite.

Pure functions; :mod:`gacost.base.job` calls :func:`grid_problem` and words the location.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gacost.base.inputfile import clip

MAX_SEED = 2**32 - 1  # numpy's seed range, which transformers' set_seed uses


@dataclass(frozen=True)
class Rule:
    """A known hyper-parameter: integer or real, and its range in words and as a test."""

    integer: bool
    allowed: Callable[[float], bool]
    range_text: str
    example: str


def _real(allowed: Callable[[float], bool], range_text: str, example: str) -> Rule:
    return Rule(False, allowed, range_text, example)


def _whole(allowed: Callable[[float], bool], range_text: str, example: str) -> Rule:
    return Rule(True, allowed, range_text, example)


_LR = _real(lambda x: 0 < x <= 10, "a number > 0 and <= 10", "2.0e-4")
_FRACTION = _real(lambda x: 0 <= x < 1, "a number >= 0 and < 1", "0.05")
_SEED = _whole(lambda x: 0 <= x <= MAX_SEED, f"an integer from 0 to {MAX_SEED}", "42")

# TRL SFTConfig / transformers TrainingArguments / PEFT LoraConfig names (and short forms).
KNOWN: dict[str, Rule] = {
    "learning_rate": _LR,
    "lr": _LR,
    "seed": _SEED,
    "data_seed": _SEED,
    "weight_decay": _real(lambda x: 0 <= x <= 10, "a number >= 0 and <= 10", "0.01"),
    "warmup_ratio": _real(lambda x: 0 <= x <= 1, "a number from 0 to 1", "0.03"),
    "warmup_steps": _whole(lambda x: 0 <= x <= 10**10, "an integer >= 0", "100"),
    "max_grad_norm": _real(lambda x: 0 <= x <= 1e6, "a number >= 0 (0: no clipping)", "1.0"),
    "lora_alpha": _real(lambda x: 0 < x <= 1e6, "a number > 0 and <= 1000000", "32"),
    "alpha": _real(lambda x: 0 < x <= 1e6, "a number > 0 and <= 1000000", "32"),
    "lora_dropout": _FRACTION,
    "dropout": _FRACTION,
    "adam_beta1": _FRACTION,
    "adam_beta2": _FRACTION,
    "adam_epsilon": _real(lambda x: 0 < x <= 1, "a number > 0 and <= 1", "1.0e-8"),
    "label_smoothing_factor": _FRACTION,
    "neftune_noise_alpha": _real(lambda x: 0 < x <= 1e6, "a number > 0", "5"),
}

_OWN_GROUP = "give each value its own run group with '{key}:' (docs/planning.md)"
_OWN_JOB = "plan one job file per value"
# Keys that change the work per run: what to do instead.
CHANGES_WORK: dict[str, str] = {
    **{k: _OWN_GROUP.format(key="sequence_length")
       for k in ("sequence_length", "max_seq_length", "max_length")},
    **{k: _OWN_GROUP.format(key="effective_batch")
       for k in ("effective_batch", "batch_size", "per_device_train_batch_size",
                 "gradient_accumulation_steps")},
    **{k: _OWN_GROUP.format(key="work")
       for k in ("work", "updates", "samples", "epochs", "max_steps", "num_train_epochs")},
    **{k: f"{_OWN_JOB} (lora.r)" for k in ("lora_r", "r", "rank")},
    **{k: f"{_OWN_JOB} (lora.target_modules)" for k in ("target_modules", "lora_target_modules")},
    **{k: f"{_OWN_JOB} ({k})" for k in ("model", "method", "precision",
                                        "gradient_checkpointing", "torch_compile", "liger",
                                        "micro_batches", "gpus_per_run")},
    **{k: _OWN_JOB for k in ("bf16", "fp16", "use_liger_kernel", "optim", "packing")},
}


def normal_key(key: str) -> str:
    """``Learning-Rate`` -> ``learning_rate``: how grid keys are matched."""
    return key.strip().lower().replace("-", "_")


def grid_problem(grid: Mapping[str, Sequence[Any]]) -> tuple[str, int | None, str] | None:
    """The first problem in a grid as ``(key, value index or None, message)``, or None."""
    for key, values in grid.items():
        name = normal_key(key)
        if name in CHANGES_WORK:
            return key, None, (
                "changes each run's time or memory, which a grid does not plan (it only "
                f"multiplies runs); {CHANGES_WORK[name]}"
            )
        rule = KNOWN.get(name)
        for i, value in enumerate(values):
            message = value_problem(rule, value) if rule else label_problem(value)
            if message:
                return key, i, message
    return None


def value_problem(rule: Rule, value: Any) -> str | None:
    """Why ``value`` is not a valid value of a known hyper-parameter, or None."""
    types = (int,) if rule.integer else (int, float)
    if not isinstance(value, types) or isinstance(value, bool):
        hint = ""
        if isinstance(value, str) and _looks_numeric(value):
            hint = " (a quoted string: write the number without quotes)"
        kind = "an integer" if rule.integer else "a number"
        return f"must be {kind}, e.g. {rule.example}, got {clip(value)}{hint}"
    finite = not isinstance(value, float) or math.isfinite(value)
    if not finite or not rule.allowed(value):
        return f"must be {rule.range_text}, e.g. {rule.example}, got {clip(value)}"
    return None


def label_problem(value: Any) -> str | None:
    """A label's values may be anything but a non-finite number (at any depth), or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"must be finite (a label may be any text or finite number), got {clip(value)}"
    children = value.values() if isinstance(value, dict) else value if isinstance(
        value, list) else ()
    for child in children:
        found = label_problem(child)
        if found:
            return found
    return None


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
