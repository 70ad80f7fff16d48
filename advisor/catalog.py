"""Read the embedded data (package ``gacost_data``): GPU specs, model configs, profiles.

Nothing is read at import time; every loader is a function.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from advisor.errors import DataError, UnknownNameError, did_you_mean
from advisor.records import GpuSpec, ModelArch


def data_root() -> Traversable:
    """The embedded data directory (``gacost_data``; the checkout's ``data/`` if not installed)."""
    try:
        return resources.files("gacost_data")
    except ModuleNotFoundError:
        return Path(__file__).resolve().parent.parent / "data"


def _opt_float(value: str) -> float | None:
    value = value.strip()
    return float(value) if value else None


@cache
def gpu_specs() -> dict[str, GpuSpec]:
    """GPU specs keyed by canonical name, from ``gpus.csv``."""
    text = (data_root() / "gpus.csv").read_text(encoding="utf-8")
    specs: dict[str, GpuSpec] = {}
    for row in csv.DictReader(io.StringIO(text)):
        specs[row["name"]] = GpuSpec(
            name=row["name"],
            memory_gib=float(row["memory_gib"]),
            bandwidth_gbs=float(row["bandwidth_gbs"]),
            fp16_tflops=_opt_float(row["fp16_tflops"]),
            bf16_tflops=_opt_float(row["bf16_tflops"]),
            fp32_tflops=_opt_float(row["fp32_tflops"]),
            bf16_supported=row["bf16_supported"].strip().lower() == "true",
            source=row["source"],
        )
    return specs


# Short names people type, mapped to every canonical model they may mean.
GPU_FAMILIES: dict[str, tuple[str, ...]] = {
    "A100": ("A100-40GB-PCIe", "A100-40GB-SXM", "A100-80GB-PCIe", "A100-80GB-SXM"),
    "A100-40GB": ("A100-40GB-PCIe", "A100-40GB-SXM"),
    "A100-80GB": ("A100-80GB-PCIe", "A100-80GB-SXM"),
    "H100": ("H100-PCIe", "H100-SXM", "H100-NVL"),
    "H200": ("H200-SXM",),
    "V100": ("V100-SXM2-16GB", "V100-SXM2-32GB", "V100-PCIe-16GB", "V100-PCIe-32GB"),
    "A6000": ("RTX-A6000",),
    "RTX3090": ("RTX-3090",),
    "RTX4090": ("RTX-4090",),
}


def _squash(name: str) -> str:
    return "".join(ch for ch in name.upper() if ch.isalnum())


def resolve_gpus(names: Iterable[str]) -> tuple[str, ...]:
    """Canonical GPU names for user-typed names or families ("a100", "H200", "t4")."""
    specs = gpu_specs()
    by_key = {_squash(n): n for n in specs}
    families = {_squash(k): v for k, v in GPU_FAMILIES.items()}
    out: list[str] = []
    for name in names:
        key = _squash(name)
        found = families.get(key) or ((by_key[key],) if key in by_key else None)
        if found is None:
            hint = did_you_mean(name, list(specs) + list(GPU_FAMILIES))
            raise UnknownNameError(
                f"unknown GPU '{name}'{hint}; `gacost gpus` lists the known ones"
            )
        out.extend(g for g in found if g not in out)
    return tuple(out)


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


def reference_profile_texts() -> list[tuple[str, str]]:
    """(file name, JSON text) of every reference profile shipped in ``profiles/``."""
    folder = data_root() / "profiles"
    return sorted(
        (e.name, e.read_text(encoding="utf-8"))
        for e in folder.iterdir()
        if e.name.endswith(".json")
    )
