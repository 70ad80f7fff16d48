"""Embedded data: GPU specs, name resolution, model configs."""

from __future__ import annotations

from pathlib import Path

import pytest

from gacost.base import gpu_table, models
from gacost.base.errors import UnknownNameError
from gacost.base.gpu_names import resolve_gpus


def test_specs_have_the_common_gpus() -> None:
    specs = gpu_table.gpu_specs()
    for name in (
        "T4",
        "L4",
        "A10G",
        "A100-40GB-SXM",
        "A100-80GB-SXM",
        "H100-SXM",
        "H200-SXM",
        "L40S",
    ):
        assert specs[name].memory_gib > 0 and specs[name].bandwidth_gbs > 0
    assert specs["T4"].tensor_tflops("bf16") is None
    assert specs["T4"].tensor_tflops("fp16") == 65
    assert specs["H200-SXM"].memory_gib == 141


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        (["t4"], ("T4",)),
        (["H200"], ("H200-SXM",)),
        (["a100-80gb"], ("A100-80GB-PCIe", "A100-80GB-SXM")),
        (["L4", "l4"], ("L4",)),
        (["h100 sxm"], ("H100-SXM",)),
    ],
)
def test_resolve_gpus(typed: list[str], expected: tuple[str, ...]) -> None:
    assert resolve_gpus(typed) == expected


def test_unknown_gpu_suggests() -> None:
    with pytest.raises(UnknownNameError, match=r"unknown GPU 'P100' \(did you mean 'V100'\?\)"):
        resolve_gpus(["P100"])


def test_shipped_models_and_arch() -> None:
    name, cfg = models.load_model_config("qwen3-1.7b")
    assert name == "Qwen/Qwen3-1.7B"
    arch = models.model_arch(name, cfg)
    assert arch.head_dim == 128 and arch.tie_word_embeddings
    # 28 layers x linear params + tied embedding: the 1.72 B of the model card
    assert arch.total_params == pytest.approx(1.7205e9, rel=0.01)
    assert arch.lora_params(
        16, ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    ) == pytest.approx(17.4e6, rel=0.01)


def test_derived_fields_fill_nulls() -> None:
    name, cfg = models.load_model_config("meta-llama/Llama-3.1-8B")
    assert cfg["head_dim"] == 128
    assert models.model_arch(name, cfg).total_params == pytest.approx(8.03e9, rel=0.01)


def test_local_config(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(
        '{"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,'
        ' "num_attention_heads": 4, "vocab_size": 100}'
    )
    name, cfg = models.load_model_config(str(tmp_path))
    arch = models.model_arch(name, cfg)
    assert arch.num_key_value_heads == 4 and arch.head_dim == 16


def test_unknown_model_without_slash() -> None:
    with pytest.raises(UnknownNameError, match=r"did you mean 'Qwen/Qwen3-8B'"):
        models.load_model_config("Qwen3-8b-typo")


def test_config_missing_field(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text('{"hidden_size": 64}')
    name, cfg = models.load_model_config(str(path))
    with pytest.raises(Exception, match="lacks the field"):
        models.model_arch(name, cfg)


def test_missing_local_path_is_not_looked_up_on_the_hub(tmp_path: Path) -> None:
    with pytest.raises(UnknownNameError, match="model: no config file at"):
        models.load_model_config(str(tmp_path / "nowhere"))
