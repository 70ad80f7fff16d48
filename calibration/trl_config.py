"""Read the configuration users already train with, and turn it into a :class:`Job`.

Two inputs are accepted (``--trl-config F``; the kind follows the file's suffix):

1. a ``trl sft --config sft.yaml`` YAML file (any suffix but ``.json``): the keys of the
   four dataclasses ``trl/scripts/sft.py`` parses (``make_parser``: ``ScriptArguments``,
   ``SFTConfig``, ``ModelConfig``, ``DatasetMixtureConfig``) plus ``env``;
2. a saved ``SFTConfig``/``TrainingArguments`` as JSON (``.json``:
   ``trainer.args.to_json_string()``, or the ``training_args.json`` some scripts write).
   It holds the trainer's fields only: no model name and no LoRA settings.

Key names and defaults, checked against TRL 1.16.0 and transformers 5.24.0:

- ``trl.ModelConfig`` (trl/trainer/model_config.py; YAML only): ``model_name_or_path``
  (no default), ``use_peft`` (False), ``load_in_4bit`` (False), ``load_in_8bit`` (False),
  ``lora_r`` (16), ``lora_alpha`` (32), ``lora_dropout`` (0.05), ``lora_target_modules``
  (None: PEFT picks a default per architecture, ``q_proj``/``v_proj`` for Llama, Qwen,
  Mistral and Gemma; a one-item list becomes its string), ``use_dora``,
  ``lora_modules_to_save``, ``dtype`` (called ``torch_dtype`` in older TRL);
- ``trl.SFTConfig`` (trl/trainer/sft_config.py, base_config.py): ``max_length`` (1024;
  ``max_seq_length`` before TRL 0.20), ``packing``, ``padding_free``,
  ``gradient_checkpointing`` (True, where transformers has False), ``bf16`` (None, then
  True unless ``fp16``);
- ``transformers.TrainingArguments``: ``per_device_train_batch_size`` (8),
  ``gradient_accumulation_steps`` (1), ``fp16`` (False), ``max_steps`` (-1: train by
  epochs), ``num_train_epochs`` (3.0), ``torch_compile``, ``use_liger_kernel``, and
  ``activation_checkpointing`` (the 5.x name; ``gradient_checkpointing`` is its deprecated
  alias, used only when the new name is unset).

A key the file does not hold takes that default, as ``trl sft`` would; a JSON without
``max_length`` is a plain ``TrainingArguments`` and has no sequence length. Every other key
(learning_rate, dataset_name, output_dir, ...) is the user's and is ignored; a wrongly typed
value of a key read here is an error naming the file and the key.

The mapping onto the job: ``effective_batch = per_device_train_batch_size x
gradient_accumulation_steps x gpus_per_run``; ``sequence_length`` from ``max_length``;
``method`` lora/qlora/full from ``use_peft`` and ``load_in_4bit``; ``lora`` from the
``lora_*`` keys; ``precision`` from ``bf16``/``fp16`` (else a half ``dtype``, else fp32);
``gradient_checkpointing``; ``torch_compile`` and ``liger`` from ``torch_compile`` and
``use_liger_kernel``; ``work.updates`` from ``max_steps > 0``, else
``work.samples`` (not in a TRL config: ``--samples`` or the job file) x
``num_train_epochs``; ``save_steps`` from ``save_strategy`` and ``save_steps`` (``no``: 0,
``epoch``: a share of the run per epoch), and ``save_only_model``, where the file sets them.
``micro_batches`` stays open so every split is planned; the user's
split (``per_device_train_batch_size x gradient_accumulation_steps``) is kept on
:class:`TrlJob` for the reports. Whatever else the job needs (runs, gpus, providers,
objective, ...) comes from a partial job file and flags; a key given in two places with
two values is an error naming both.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from gacost.base.errors import JobSpecError
from gacost.base.inputfile import clip, parse_json, read_text
from gacost.base.job import Job, parse_job, read_yaml
from gacost.base.split import Split

PEFT_DEFAULT_TARGETS = ["q_proj", "v_proj"]  # PEFT's default for llama/qwen2/qwen3/mistral/gemma
Kind = Literal["trl-yaml", "training-args-json"]

# the defaults of TRL 1.16's SFTConfig (and transformers 5.24's TrainingArguments under it)
TRAINER_DEFAULTS: dict[str, Any] = {
    "per_device_train_batch_size": 8,
    "gradient_accumulation_steps": 1,
    "max_length": 1024,
    "bf16": None,
    "fp16": False,
    "gradient_checkpointing": True,
    "activation_checkpointing": None,
    "max_steps": -1,
    "num_train_epochs": 3.0,
    "torch_compile": False,
    "use_liger_kernel": False,
    "packing": False,
    "padding_free": False,
    "save_strategy": "steps",
    "save_steps": 500,
    "save_only_model": False,
}
MODEL_DEFAULTS: dict[str, Any] = {
    "model_name_or_path": None,
    "use_peft": False,
    "load_in_4bit": False,
    "load_in_8bit": False,
    "lora_r": 16,
    "lora_alpha": 32,
    "lora_dropout": 0.05,
    "lora_target_modules": None,
    "use_dora": False,
    "lora_modules_to_save": None,
    "dtype": None,
}  # the defaults of TRL 1.16's ModelConfig
# settings that change speed or memory but that neither the model nor calibrate reproduce
UNMODELLED = {
    "use_dora": "trains DoRA adapters (slower than LoRA)",
    "padding_free": "trains padding-free batches",
}
LEVERS = {"torch_compile": "torch_compile", "use_liger_kernel": "liger"}  # TRL key: job key


@dataclass(frozen=True)
class TrlConfig:
    """What a TRL config says about the job, before the job file and flags are added.

    ``values`` are job keys (``model``, ``method``, ``lora``, ``sequence_length``,
    ``precision``, ``gradient_checkpointing``, ``work``); ``sources`` says, per job key,
    which TRL keys and values produced it (for conflict messages).
    """

    path: str
    kind: Kind
    micro_batch: int
    grad_accum: int
    max_steps: int | None
    epochs: float
    values: dict[str, Any]
    sources: dict[str, str]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class TrlJob:
    """The job built from a TRL config, with the user's current split per GPU."""

    job: Job
    config: TrlConfig
    world: int
    notes: tuple[str, ...] = field(default=())

    @property
    def split(self) -> Split:
        """The user's split, ``m x k`` per GPU (``str()`` gives ``"2x8"``)."""
        return Split(self.config.micro_batch, self.config.grad_accum)

    def summary(self) -> dict[str, Any]:
        """The JSON form for reports."""
        return {
            "source": self.config.path,
            "kind": self.config.kind,
            "split": str(self.split),
            "per_device_train_batch_size": self.config.micro_batch,
            "gradient_accumulation_steps": self.config.grad_accum,
            "gpus_per_run": self.world,
            "notes": list(self.notes),
        }


# -- reading


def load_trl_config(path: str | Path) -> TrlConfig:
    """Read a ``trl sft`` YAML or a saved TrainingArguments JSON (by suffix)."""
    p = Path(path)
    kind: Kind = "training-args-json" if p.suffix.lower() == ".json" else "trl-yaml"
    data = _read_json(p) if kind == "training-args-json" else read_yaml(p, "--trl-config")
    if not isinstance(data, dict):
        what = "a JSON object" if kind == "training-args-json" else "a YAML mapping of keys"
        raise JobSpecError(f"{p}: a TRL config must be {what} (as `trl sft --config` reads)")
    return parse_trl_config(data, str(p), kind)


def _read_json(path: Path) -> Any:
    text = read_text(path, "--trl-config", JobSpecError)
    return parse_json(text, str(path), JobSpecError)


class _Reader:
    """Typed access to the keys gacost reads, collecting one error line per bad key."""

    def __init__(self, data: Mapping[str, Any], origin: str, defaults: Mapping[str, Any]):
        self.data, self.origin, self.defaults = data, origin, defaults
        self.errors: list[str] = []
        self.defaulted: list[str] = []

    def has(self, key: str) -> bool:
        return key in self.data

    def raw(self, key: str) -> Any:
        if key in self.data:
            return self.data[key]
        return self.defaults.get(key)

    def said(self, key: str, value: Any) -> str:
        """``key value``, marked when the value is TRL's default (the file lacks the key)."""
        shown = str(value).lower() if isinstance(value, bool) else (
            f"{value:g}" if isinstance(value, float) else str(value))
        return f"{key} {shown}" + ("" if key in self.data else " (TRL's default)")

    def bad(self, key: str, expected: str) -> None:
        self.errors.append(
            f"{self.origin}: {key}: must be {expected}, got {clip(self.data.get(key))}"
        )

    def integer(self, key: str, low: int | None = None, nullable: bool = False) -> int | None:
        value = self.raw(key)
        if value is None and nullable:
            return None
        ok = isinstance(value, int) and not isinstance(value, bool)
        if not ok or (low is not None and value < low):
            bound = f" >= {low}" if low is not None else ""
            self.bad(key, f"an integer{bound}" + (" or null" if nullable else ""))
            return None
        if key not in self.data:
            self.defaulted.append(f"{key} {value}")
        return int(value)

    def number(self, key: str, low: float, high: float = math.inf,
               low_open: bool = False, high_open: bool = False) -> float | None:
        value = self.raw(key)
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if ok:
            below = value <= low if low_open else value < low
            above = value >= high if high_open else value > high
            ok = not (below or above or value != value)
        if not ok:
            lo = f"> {low:g}" if low_open else f">= {low:g}"
            hi = "" if high == math.inf else (f" and < {high:g}" if high_open else
                                              f" and <= {high:g}")
            self.bad(key, f"a number {lo}{hi}")
            return None
        if key not in self.data:
            self.defaulted.append(f"{key} {value:g}")
        return float(value)

    def boolean(self, key: str, nullable: bool = False, quiet: bool = False) -> bool | None:
        value = self.raw(key)
        if value is None and nullable:
            return None
        if not isinstance(value, bool):
            self.bad(key, "true or false" + (" (or null)" if nullable else ""))
            return None
        if key not in self.data and not quiet:
            self.defaulted.append(f"{key} {str(value).lower()}")
        return value

    def text(self, key: str) -> str | None:
        value = self.raw(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            self.bad(key, "a non-empty string")
            return None
        return value


def parse_trl_config(data: Mapping[str, Any], origin: str, kind: Kind) -> TrlConfig:
    """Map a parsed TRL config onto job keys; all type errors at once, one line each."""
    yaml_kind = kind == "trl-yaml"
    r = _Reader(data, origin, {**TRAINER_DEFAULTS, **(MODEL_DEFAULTS if yaml_kind else {})})
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    notes: list[str] = []

    m = r.integer("per_device_train_batch_size", low=1)
    k = r.integer("gradient_accumulation_steps", low=1)
    _sequence_length(r, yaml_kind, values, sources)
    _precision(r, values, sources)
    _checkpointing(r, values, sources)
    max_steps = r.integer("max_steps")
    epochs = None
    if max_steps is not None and max_steps > 0:
        values["work"] = {"updates": max_steps}
        sources["work"] = r.said("max_steps", max_steps)
    elif max_steps is not None:
        epochs = r.number("num_train_epochs", 0.0, low_open=True)
        if epochs is not None:
            values["work"] = {"epochs": epochs}
            sources["work"] = (f"{r.said('num_train_epochs', epochs)}, "
                               f"{r.said('max_steps', max_steps)}")
    _saving(r, values, sources, epochs)
    for key, job_key in LEVERS.items():
        on = r.boolean(key, quiet=True)
        if on is not None:
            values[job_key], sources[job_key] = on, r.said(key, on)
    if yaml_kind:
        _model_side(r, values, sources, notes)
    for key, what in UNMODELLED.items():
        if key in r.defaults and r.boolean(key, quiet=True):
            notes.append(f"{key}: true {what}; gacost's predictions and calibrate run "
                         "without it, so time and memory may differ")
    if r.boolean("packing", quiet=True):
        notes.append("packing: true packs rows into max_length-token sequences: give "
                     "--samples as the number of packed sequences, not dataset rows")
    if r.errors:
        raise JobSpecError("\nerror: ".join(r.errors))
    if r.defaulted and yaml_kind:
        notes.insert(0, f"{origin} leaves these at TRL's defaults: {', '.join(r.defaulted)}")
    assert m is not None and k is not None and max_steps is not None
    return TrlConfig(
        path=origin, kind=kind, micro_batch=m, grad_accum=k,
        max_steps=max_steps if max_steps > 0 else None, epochs=epochs or 0.0,
        values=values, sources=sources, notes=tuple(notes),
    )


def _saving(r: _Reader, values: dict[str, Any], sources: dict[str, str],
            epochs: float | None) -> None:
    """``save_strategy``, ``save_steps`` and ``save_only_model`` onto the job's
    ``save_steps`` (0: ``no``; an epoch's share of the run: ``epoch``; ``best`` saves at
    most as often as ``steps``) and ``save_only_model``, where the file sets them."""
    strategy = r.raw("save_strategy")
    if strategy not in ("no", "steps", "epoch", "best"):
        r.bad("save_strategy", "one of no, steps, epoch, best")
        return
    steps: float | None = float(TRAINER_DEFAULTS["save_steps"])
    if strategy == "no":
        steps = 0.0
    elif strategy == "epoch":  # a save at each epoch's end (a run of one: left out)
        steps = 1.0 / epochs if epochs and epochs > 1 else 0.0
    elif r.has("save_steps"):
        steps = r.number("save_steps", 0.0, low_open=True)
    if steps is not None and (r.has("save_strategy") or r.has("save_steps")):
        values["save_steps"] = steps
        sources["save_steps"] = ", ".join(r.said(k, r.raw(k)) for k in ("save_strategy",
                                                                        "save_steps")
                                          if r.has(k))
    only = r.boolean("save_only_model", quiet=True)
    if only is not None and r.has("save_only_model"):
        values["save_only_model"], sources["save_only_model"] = only, r.said(
            "save_only_model", only)


def _sequence_length(r: _Reader, yaml_kind: bool, values: dict[str, Any],
                     sources: dict[str, str]) -> None:
    key = "max_length"
    if not r.has("max_length") and r.has("max_seq_length"):
        key = "max_seq_length"  # TRL before 0.20
    elif r.has("max_length") and r.has("max_seq_length"):
        old, new = r.data["max_seq_length"], r.data["max_length"]
        if old != new:
            r.errors.append(f"{r.origin}: max_seq_length: {clip(old)} differs from max_length "
                            f"{clip(new)}; keep max_length (the TRL 1.x name)")
            return
    if not yaml_kind and not r.has(key):
        return  # a plain TrainingArguments: no sequence length
    length = r.integer(key, low=1, nullable=True)
    if length is not None:
        values["sequence_length"] = length
        sources["sequence_length"] = r.said(key, length)


def _precision(r: _Reader, values: dict[str, Any], sources: dict[str, str]) -> None:
    bf16 = r.boolean("bf16", nullable=True)
    fp16 = r.boolean("fp16", quiet=True)
    if fp16 is None or (bf16 is None and r.data.get("bf16") is not None):
        return
    if bf16 and fp16:
        r.errors.append(f"{r.origin}: bf16, fp16: both true; set one of them to false")
        return
    if bf16 is None:  # SFTConfig: bf16 defaults to True unless fp16
        bf16 = not fp16
        if "bf16" not in r.data:
            r.defaulted.append(f"bf16 {str(bf16).lower()} (true unless fp16)")
    if bf16:
        values["precision"] = "bf16"
        sources["precision"] = "bf16 true" if "bf16" in r.data else (
            "bf16 unset (TRL's default: true unless fp16)")
    elif fp16:
        values["precision"], sources["precision"] = "fp16", "fp16 true"
    else:
        dtype_key = "dtype" if r.has("dtype") else "torch_dtype"
        dtype = r.data.get(dtype_key)
        half = {"bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "fp16": "fp16",
                "half": "fp16"}.get(str(dtype).removeprefix("torch."), None)
        if half is not None:
            values["precision"] = half
            sources["precision"] = f"bf16 and fp16 false, {dtype_key} {dtype}"
        else:
            values["precision"], sources["precision"] = "fp32", "bf16 and fp16 false"


def _checkpointing(r: _Reader, values: dict[str, Any], sources: dict[str, str]) -> None:
    new = r.boolean("activation_checkpointing", nullable=True)
    if new is not None:
        values["gradient_checkpointing"] = new
        sources["gradient_checkpointing"] = f"activation_checkpointing {str(new).lower()}"
        return
    if r.has("activation_checkpointing") and r.data["activation_checkpointing"] is not None:
        return  # a type error, already reported
    old = r.boolean("gradient_checkpointing", nullable=True)
    if old is None and r.has("gradient_checkpointing") and r.data[
            "gradient_checkpointing"] is not None:
        return
    values["gradient_checkpointing"] = bool(old)  # None: transformers' False
    sources["gradient_checkpointing"] = r.said("gradient_checkpointing",
                                               "null" if old is None else old)


def _model_side(r: _Reader, values: dict[str, Any], sources: dict[str, str],
                notes: list[str]) -> None:
    """ModelConfig keys (YAML only): model, method and lora."""
    model = r.text("model_name_or_path")
    if model is not None:
        values["model"], sources["model"] = model, f"model_name_or_path {model}"
    use_peft = r.boolean("use_peft")
    four = r.boolean("load_in_4bit", quiet=True)
    if r.boolean("load_in_8bit", quiet=True):
        r.errors.append(f"{r.origin}: load_in_8bit: 8-bit training is not modelled by gacost; "
                        "use load_in_4bit (QLoRA) or neither")
    if use_peft is None or four is None:
        return
    peft_src = r.said("use_peft", use_peft)
    if not use_peft:
        if four:
            r.errors.append(f"{r.origin}: load_in_4bit: a 4-bit model trains only through "
                            "adapters; set use_peft: true (QLoRA)")
            return
        values["method"], sources["method"] = "full", peft_src
        return
    values["method"] = "qlora" if four else "lora"
    sources["method"] = f"{peft_src}, load_in_4bit {str(four).lower()}"
    if four:  # trl sft hands the 4-bit model to SFTTrainer with a peft_config
        values["qlora"] = {"prepare_for_kbit": False}
        sources["qlora"] = "trl sft (SFTTrainer prepares the 4-bit model itself)"
    rank = r.integer("lora_r", low=1)
    alpha = r.number("lora_alpha", 0.0, low_open=True)
    dropout = r.number("lora_dropout", 0.0, 1.0, high_open=True)
    targets = _targets(r, notes)
    if rank is None or alpha is None or dropout is None or targets is None:
        return
    values["lora"] = {"r": rank, "alpha": alpha, "dropout": dropout, "target_modules": targets}
    sources["lora"] = "use_peft true and the lora_* keys"
    for sub, key, value in (("r", "lora_r", rank), ("alpha", "lora_alpha", alpha),
                            ("dropout", "lora_dropout", dropout)):
        sources[f"lora.{sub}"] = r.said(key, value)
    sources["lora.target_modules"] = r.said("lora_target_modules", targets)
    saved = r.raw("lora_modules_to_save")
    if saved:
        notes.append(f"lora_modules_to_save: {saved} also trains those modules in full; "
                     "gacost counts only the adapters")


def _targets(r: _Reader, notes: list[str]) -> str | list[str] | None:
    value = r.raw("lora_target_modules")
    if value is None:
        notes.append("lora_target_modules not set: PEFT's default for Llama, Qwen, Mistral and "
                     "Gemma models (q_proj, v_proj) assumed; list the modules to be sure")
        return list(PEFT_DEFAULT_TARGETS)
    if value == ["all-linear"]:
        value = "all-linear"  # ModelConfig.__post_init__ unwraps a one-item list
    if value == "all-linear":
        return "all-linear"
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        return list(value)
    if isinstance(value, str) and value.strip():
        r.errors.append(f"{r.origin}: lora_target_modules: {clip(value)} is a PEFT pattern; gacost "
                        "reads 'all-linear' or a list of module names, e.g. [q_proj, v_proj]")
        return None
    r.bad("lora_target_modules", "'all-linear' or a list of module names")
    return None


# -- building the job


def build_job(
    config: TrlConfig,
    extra: Any = None,
    extra_origin: str = "job file",
    *,
    samples: int | None = None,
    runs: int | None = None,
    gpus_per_run: int | None = None,
    need_work: bool = True,
) -> TrlJob:
    """The job: the TRL config's values, the job file's extra keys and the flags.

    Each job key comes from one place; a key given by two of them with different values is
    an error naming both. ``need_work=False`` (calibrate) lets an epoch-based config go
    without ``samples``.
    """
    if extra is None:
        extra = {}
    if not isinstance(extra, dict):
        raise JobSpecError(f"{extra_origin}: the job must be a YAML mapping of keys "
                           "(see README 'Job keys')")
    merged: dict[str, Any] = dict(extra)
    for key, value in (("runs", runs), ("gpus_per_run", gpus_per_run)):
        if value is not None:
            flag = "--" + key.replace("_", "-")
            if key in merged and merged[key] != value:
                raise JobSpecError(f"{key}: {flag} {value} but {extra_origin} says "
                                   f"{clip(merged[key])}; give it in one place")
            merged[key] = value
    world = merged.get("gpus_per_run", 1)
    if world == "choose":
        raise JobSpecError(
            f"gpus_per_run: 'choose' does not apply with --trl-config: {config.path}'s "
            "per-device batch fixes the effective batch only for a given GPU count; give the "
            "number of GPUs you launch with (--gpus-per-run N)")
    world_n = world if isinstance(world, int) and not isinstance(world, bool) and world > 0 else 1
    derived = dict(config.values)
    derived["effective_batch"] = config.micro_batch * config.grad_accum * world_n
    sources = dict(config.sources)
    sources["effective_batch"] = (
        f"per_device_train_batch_size {config.micro_batch} x gradient_accumulation_steps "
        f"{config.grad_accum} x {world_n} GPU(s)")
    notes = list(config.notes)
    derived_work = derived.pop("work", None)
    if derived.get("method") == "full" and "lora" in merged:
        raise JobSpecError(f"lora: set in {extra_origin}, but {config.path} trains the full "
                           f"model ({sources['method']}); set use_peft: true there, or remove "
                           f"lora from {extra_origin}")
    for key, value in derived.items():
        _agree(key, value, merged.get(key, _MISSING), extra_origin, config.path, sources)
        merged[key] = value
    if derived_work is not None:
        merged["work"] = _work(config, derived_work, merged.get("work"), extra_origin,
                               samples, need_work)
    if "model" not in merged:
        raise JobSpecError(_missing_model(config, extra_origin))
    if "sequence_length" not in merged:
        raise JobSpecError(
            f"sequence_length: {config.path} has no max_length (a plain TrainingArguments, "
            f"or max_length: null); add sequence_length: N to {extra_origin} (--job)")
    if config.kind == "training-args-json" and "method" not in extra:
        notes.append(f"{config.path} holds no PEFT settings: method {merged.get('method', 'lora')}"
                     " with gacost's default lora settings unless the --job file sets "
                     "method and lora")
    job = parse_job(merged, origin=extra_origin)
    return TrlJob(job=job, config=config, world=world_n, notes=tuple(notes))


class _Missing:
    pass


_MISSING = _Missing()


def _agree(key: str, ours: Any, theirs: Any, extra_origin: str, path: str,
           sources: Mapping[str, str] | str) -> None:
    """Raise when the job file gives ``key`` a value other than the TRL config's;
    ``sources`` says where the config's values came from (per key, or one string)."""
    if isinstance(theirs, _Missing):
        return
    source = sources if isinstance(sources, str) else (
        sources.get(key) or sources.get(key.split(".")[0], ""))
    if isinstance(ours, dict) and isinstance(theirs, dict):
        for sub, value in theirs.items():
            if sub in ours:
                _agree(f"{key}.{sub}", ours[sub], value, extra_origin, path, sources)
            else:
                raise JobSpecError(f"{key}.{sub}: set in {extra_origin}, but {key} comes from "
                                   f"{path} ({source}); remove it from {extra_origin}")
        return
    if theirs != ours or type(theirs) is not type(ours) and not _same_number(ours, theirs):
        raise JobSpecError(
            f"{key}: {extra_origin} says {clip(theirs)} but {path} gives {clip(ours)} ({source}); "
            f"remove {key} from {extra_origin} or change {path}")


def _same_number(a: Any, b: Any) -> bool:
    numbers = (int, float)
    return (isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool)
            and not isinstance(b, bool) and a == b)


def _work(config: TrlConfig, derived: dict[str, Any], given: Any, extra_origin: str,
          samples: int | None, need_work: bool) -> dict[str, Any]:
    """``work`` from max_steps, or from num_train_epochs and the samples of a flag or the
    job file."""
    path, source = config.path, config.sources["work"]
    if given is not None and not isinstance(given, dict):
        raise JobSpecError(f"work: {extra_origin} must give a mapping, e.g. work: "
                           "{samples: 20000}")
    given_work: dict[str, Any] = given or {}
    if "updates" in derived:
        if "samples" in given_work or samples is not None:
            where = "--samples" if samples is not None else f"work.samples in {extra_origin}"
            raise JobSpecError(
                f"work.samples: {path} sets max_steps {derived['updates']}, which overrides "
                f"the epochs and the dataset size; drop {where}, or set max_steps: -1")
        for sub, value in given_work.items():
            if sub not in derived:
                raise JobSpecError(f"work.{sub}: {path} sets max_steps {derived['updates']}; "
                                   f"remove work.{sub} from {extra_origin}")
            _agree(f"work.{sub}", derived[sub], value, extra_origin, path, source)
        return dict(derived)
    epochs = derived["epochs"]
    if "updates" in given_work:
        raise JobSpecError(
            f"work.updates: {path} trains by epochs ({source}); set max_steps in {path}, or "
            f"give the dataset size as work.samples in {extra_origin} or --samples")
    if "epochs" in given_work:
        _agree("work.epochs", epochs, given_work["epochs"], extra_origin, path, source)
    unknown = sorted(set(given_work) - {"samples", "epochs"})
    if unknown:
        raise JobSpecError(f"work.{unknown[0]}: unknown key; with --trl-config the job file "
                           "gives only work.samples")
    file_samples = given_work.get("samples")
    if samples is not None and file_samples is not None and samples != file_samples:
        raise JobSpecError(f"work.samples: --samples {samples} but {extra_origin} says "
                           f"{clip(file_samples)}; give it in one place")
    n = samples if samples is not None else file_samples
    if n is None:
        if not need_work:
            return {"updates": 1}  # calibrate times splits; the amount of work is unused
        raise JobSpecError(
            f"work.samples: {path} trains {epochs:g} epoch(s) ({source}) over a dataset "
            "whose size a TRL config does not hold; give --samples N (rows in the train "
            "split) or work: {samples: N} in --job, or set max_steps")
    return {"samples": n, "epochs": epochs}


def _missing_model(config: TrlConfig, extra_origin: str) -> str:
    if config.kind == "trl-yaml":
        return (f"model: {config.path} has no model_name_or_path; add it there (or model: to "
                f"{extra_origin})")
    return (f"model: {config.path} is a saved TrainingArguments and names no model; give "
            f"model: <name> in a --job file (see `gacost models`)")
