"""Model architectures: the shipped configs in ``data/models/``, local config files and Hub ids,
and the :class:`~gacost.base.records.ModelArch` record the models read from them.

Nothing is read at import time; every loader is a function.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from functools import cache
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from gacost.base.embedded import data_root
from gacost.base.errors import DataError, GacostError, UnknownNameError, did_you_mean
from gacost.base.inputfile import clip, parse_json, read_text
from gacost.base.records import ModelArch


def _models_dir() -> Traversable:
    return data_root() / "models"


@cache
def shipped_models() -> dict[str, str]:
    """Hub id (e.g. ``Qwen/Qwen3-1.7B``) -> file name of its shipped config."""
    out: dict[str, str] = {}
    for entry in _models_dir().iterdir():
        if entry.name.endswith(".json"):
            out[entry.name[: -len(".json")].replace("--", "/")] = entry.name
    return dict(sorted(out.items()))


def _shipped_key(model: str) -> str | None:
    """The shipped Hub id that ``model`` names (full or short form, any case), if any."""
    shipped = shipped_models()
    by_lower = {k.lower(): k for k in shipped}
    short = {k.split("/")[-1].lower(): k for k in shipped}
    return by_lower.get(model.lower()) or short.get(model.lower())


def _local_path(model: str) -> Path | None:
    """The config file a model string names on disk (a folder means its config.json), or
    None for a shipped name or Hub id; a path the OS refuses is a ``UnknownNameError``."""
    try:
        path = Path(model).expanduser()
        if path.is_dir():
            path = path / "config.json"
        if path.suffix == ".json" or path.exists() or model.startswith((".", "/", "~")):
            return path
    except (OSError, ValueError, RuntimeError) as exc:
        raise UnknownNameError(
            f"model: {clip(model)} is not a usable path ({exc.__class__.__name__}); give a "
            "shipped name (`gacost models`), a config.json path or a Hub id"
        ) from None
    return None


def load_model_config(model: str) -> tuple[str, dict[str, Any]]:
    """Raw config dict for a shipped name, a local path or (with transformers) a Hub id.

    Returns ``(display_name, config)``. Keys starting with ``_`` and null values are
    dropped so the dict can be fed to ``transformers.AutoConfig.for_model``.
    """
    key = _shipped_key(model)
    if key is not None:
        raw = json.loads((_models_dir() / shipped_models()[key]).read_text(encoding="utf-8"))
        return key, _clean_config(raw, derived=raw.get("_gacost_meta", {}).get("derived_if_absent"))
    path = _local_path(model)
    if path is not None:
        if not path.is_file():
            raise UnknownNameError(f"model: no config file at {clip(str(path))[1:-1]}")
        raw = parse_json(read_text(path, "model", DataError), str(path), DataError)
        if not isinstance(raw, dict):
            raise DataError(f"model: {path} must hold a JSON object (a transformers "
                            f"config.json), not {type(raw).__name__}")
        return str(path), _clean_config(raw)
    return model, _hub_config(model, shipped_models())


def model_key(model: str) -> str:
    """The identity of a model for matching profiles to jobs: its config's content, not
    the spelling of its path.

    A shipped name (any spelling) is its Hub id; a local config whose architecture equals
    exactly one shipped model's is that model's Hub id; another readable local config is
    ``config:<hash of its architecture fields>``; anything else (a Hub id, a path that
    does not exist here) is the string itself. The result is lower-cased.
    """
    try:
        path = _local_path(model) if _shipped_key(model) is None else None
        if path is None or not path.is_file():
            return (_shipped_key(model) or model).lower()
        info = path.stat()
        return _key_of_file(str(path.resolve()), info.st_mtime_ns, info.st_size)
    except (GacostError, OSError):
        return model.lower()


@cache
def _key_of_file(path: str, mtime_ns: int, size: int) -> str:
    del mtime_ns, size  # part of the cache key only: an edited file is read again
    name, cfg = load_model_config(path)
    fields = _arch_fields(model_arch(name, cfg))
    for shipped, theirs in _shipped_arch_fields().items():
        if theirs == fields:
            return shipped.lower()
    digest = hashlib.sha256(json.dumps(fields).encode()).hexdigest()[:16]
    return f"config:{digest}"


def _arch_fields(arch: ModelArch) -> list[Any]:
    return [v for k, v in asdict(arch).items() if k != "name"]


@cache
def _shipped_arch_fields() -> dict[str, list[Any]]:
    """Architecture fields of every shipped config whose architecture no other shares."""
    out: dict[str, list[Any]] = {}
    for name in shipped_models():
        out[name] = _arch_fields(model_arch(*load_model_config(name)))
    counts = [json.dumps(v) for v in out.values()]
    return {k: v for k, v in out.items() if counts.count(json.dumps(v)) == 1}


def _clean_config(raw: dict[str, Any], derived: dict[str, Any] | None = None) -> dict[str, Any]:
    cfg = {k: v for k, v in raw.items() if not k.startswith("_") and v is not None}
    for k, v in (derived or {}).items():
        cfg.setdefault(k, v)
    return cfg


def _hub_config(model: str, shipped: dict[str, str]) -> dict[str, Any]:
    hint = did_you_mean(model[:100], shipped)
    if "/" not in model:
        raise UnknownNameError(
            f"model: {clip(model)} is not a shipped config{hint}, a local config path or a Hub id; "
            "`gacost models` lists the shipped ones"
        )
    try:
        from transformers import AutoConfig
    except ImportError as exc:
        raise UnknownNameError(
            f"model: {clip(model)} is not shipped{hint}; reading it from the Hub needs "
            "`pip install 'gacost[calibrate]'`, or pass a local config.json"
        ) from exc
    try:
        cfg = AutoConfig.from_pretrained(model).to_dict()
    except Exception as exc:  # noqa: BLE001 - any Hub failure becomes one message
        raise UnknownNameError(
            f"model: could not read the config of {clip(model)} from the Hub "
            f"({exc.__class__.__name__})"
            f"{hint}; pass a local config.json"
        ) from exc
    return _clean_config(cfg)


# Plausible ranges of the architecture fields: about ten times the largest published
# decoder configs (Llama 3.1 405B: hidden 16384, intermediate 53248, 126 layers, 128
# heads; Gemma 2: vocabulary 256000, head_dim 256).
ARCH_RANGES = {
    "hidden_size": 262_144,
    "intermediate_size": 1_048_576,
    "num_hidden_layers": 2048,
    "num_attention_heads": 2048,
    "num_key_value_heads": 2048,
    "head_dim": 8192,
    "vocab_size": 4_194_304,
}


def _int_field(name: str, key: str, value: Any) -> int:
    ok = isinstance(value, int) and not isinstance(value, bool)
    if isinstance(value, float) and value.is_integer() and abs(value) <= ARCH_RANGES[key]:
        value, ok = int(value), True
    if not ok or not 1 <= value <= ARCH_RANGES[key]:
        raise DataError(
            f"model: config of {clip(name)} has {key} {clip(value)}; it must be an integer "
            f"from 1 to {ARCH_RANGES[key]} (is it a transformers config.json of a causal LM?)"
        )
    return int(value)


def model_arch(name: str, cfg: dict[str, Any]) -> ModelArch:
    """The architecture record of a config dict; a missing, non-integer or implausible
    field is a ``DataError`` naming it."""
    if not isinstance(cfg, dict):
        raise DataError(f"model: config of {clip(name)} must be a JSON object")
    for key in ("hidden_size", "intermediate_size", "num_hidden_layers",
                "num_attention_heads", "vocab_size"):
        if key not in cfg:
            raise DataError(f"model: config of {clip(name)} lacks the field {key}")
    heads = _int_field(name, "num_attention_heads", cfg["num_attention_heads"])
    hidden = _int_field(name, "hidden_size", cfg["hidden_size"])
    kv = _int_field(name, "num_key_value_heads", cfg.get("num_key_value_heads", heads))
    if kv > heads or heads % kv:
        raise DataError(
            f"model: config of {clip(name)} has num_key_value_heads {kv}, which must divide "
            f"num_attention_heads {heads}"
        )
    head_dim = cfg.get("head_dim") or hidden // heads
    if not head_dim:
        raise DataError(
            f"model: config of {clip(name)} has hidden_size {hidden} below "
            f"num_attention_heads {heads}; give head_dim"
        )
    return ModelArch(
        name=name,
        model_type=str(cfg.get("model_type", "unknown"))[:100],
        hidden_size=hidden,
        intermediate_size=_int_field(name, "intermediate_size", cfg["intermediate_size"]),
        num_hidden_layers=_int_field(name, "num_hidden_layers", cfg["num_hidden_layers"]),
        num_attention_heads=heads,
        num_key_value_heads=kv,
        head_dim=_int_field(name, "head_dim", head_dim),
        vocab_size=_int_field(name, "vocab_size", cfg["vocab_size"]),
        tie_word_embeddings=cfg.get("tie_word_embeddings", False) is True,
    )
