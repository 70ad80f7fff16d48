"""Model architectures: the shipped configs in ``data/models/``, local config files and Hub ids,
and the :class:`~gacost.base.records.ModelArch` record the models read from them.

Nothing is read at import time; every loader is a function.
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from gacost.base.embedded import data_root
from gacost.base.errors import DataError, UnknownNameError, did_you_mean
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


def load_model_config(model: str) -> tuple[str, dict[str, Any]]:
    """Raw config dict for a shipped name, a local path or (with transformers) a Hub id.

    Returns ``(display_name, config)``. Keys starting with ``_`` and null values are
    dropped so the dict can be fed to ``transformers.AutoConfig.for_model``.
    """
    shipped = shipped_models()
    by_lower = {k.lower(): k for k in shipped}
    short = {k.split("/")[-1].lower(): k for k in shipped}
    key = by_lower.get(model.lower()) or short.get(model.lower())
    if key is not None:
        raw = json.loads((_models_dir() / shipped[key]).read_text(encoding="utf-8"))
        return key, _clean_config(raw, derived=raw.get("_gacost_meta", {}).get("derived_if_absent"))
    path = Path(model).expanduser()
    if path.is_dir():
        path = path / "config.json"
    if path.suffix == ".json" or path.exists() or model.startswith((".", "/", "~")):
        if not path.is_file():
            raise UnknownNameError(f"model: no config file at {path}")
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DataError(f"model: {path} is not a readable JSON config ({exc})") from exc
        return str(path), _clean_config(raw)
    return model, _hub_config(model, shipped)


def _clean_config(raw: dict[str, Any], derived: dict[str, Any] | None = None) -> dict[str, Any]:
    cfg = {k: v for k, v in raw.items() if not k.startswith("_") and v is not None}
    for k, v in (derived or {}).items():
        cfg.setdefault(k, v)
    return cfg


def _hub_config(model: str, shipped: dict[str, str]) -> dict[str, Any]:
    hint = did_you_mean(model, shipped)
    if "/" not in model:
        raise UnknownNameError(
            f"model: '{model}' is not a shipped config{hint}, a local config path or a Hub id; "
            "`gacost models` lists the shipped ones"
        )
    try:
        from transformers import AutoConfig
    except ImportError as exc:
        raise UnknownNameError(
            f"model: '{model}' is not shipped{hint}; reading it from the Hub needs "
            "`pip install 'gacost[calibrate]'`, or pass a local config.json"
        ) from exc
    try:
        cfg = AutoConfig.from_pretrained(model).to_dict()
    except Exception as exc:  # noqa: BLE001 - any Hub failure becomes one message
        raise UnknownNameError(
            f"model: could not read the config of '{model}' from the Hub ({exc.__class__.__name__})"
            f"{hint}; pass a local config.json"
        ) from exc
    return _clean_config(cfg)


def model_arch(name: str, cfg: dict[str, Any]) -> ModelArch:
    """The architecture record of a config dict; a missing field is a ``DataError``."""
    try:
        heads = int(cfg["num_attention_heads"])
        hidden = int(cfg["hidden_size"])
        return ModelArch(
            name=name,
            model_type=str(cfg.get("model_type", "unknown")),
            hidden_size=hidden,
            intermediate_size=int(cfg["intermediate_size"]),
            num_hidden_layers=int(cfg["num_hidden_layers"]),
            num_attention_heads=heads,
            num_key_value_heads=int(cfg.get("num_key_value_heads", heads)),
            head_dim=int(cfg.get("head_dim") or hidden // heads),
            vocab_size=int(cfg["vocab_size"]),
            tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        )
    except KeyError as exc:
        raise DataError(f"model: config of '{name}' lacks the field {exc.args[0]}") from exc
    except (TypeError, ValueError) as exc:
        raise DataError(f"model: config of '{name}' has a non-numeric field ({exc})") from exc
