"""The TRL configuration of a measurement (``gacost.calibration.protocol``): calibrate's, with
TRL's defaults for the optimizer, and the settings of 2026-12-02 that the H200 sweep and the
published protocol keep."""

from __future__ import annotations

import pytest

# TRL's import takes seconds, as in the other tests that import the calibration's trainer
pytestmark = pytest.mark.slow


def _config(**kw: object) -> object:
    from gacost.calibration import protocol

    args: dict[str, object] = dict(micro_batch=2, grad_accum=4, steps=12, seq_len=256,
                                   precision="fp32", checkpointing=True, seed=7, use_cpu=True)
    args.update(kw)
    return protocol.sft_config("/tmp/gacost-protocol-test", **args)  # type: ignore[arg-type]


def test_calibrate_trains_with_trls_defaults_on_fixed_length_rows() -> None:
    from trl import SFTConfig

    got = _config()
    defaults = SFTConfig(output_dir="/tmp/gacost-protocol-test", use_cpu=True, bf16=False)
    assert isinstance(got, SFTConfig)
    for name in ("optim", "lr_scheduler_type", "learning_rate", "logging_strategy",
                 "logging_steps", "max_grad_norm", "weight_decay"):
        assert getattr(got, name) == getattr(defaults, name), name
    assert (got.per_device_train_batch_size, got.gradient_accumulation_steps, got.max_steps) == (
        2, 4, 12)
    assert got.max_length == got.pad_to_multiple_of == 256 and not got.packing
    assert got.gradient_checkpointing
    assert got.gradient_checkpointing_kwargs == {"use_reentrant": False}
    assert (got.seed, got.data_seed) == (7, 7) and got.dataloader_num_workers == 0
    assert str(got.save_strategy).lower().endswith("no") and got.report_to == []
    assert got.disable_tqdm and not got.bf16 and not got.fp16
    assert not _config(checkpointing=False).gradient_checkpointing  # type: ignore[attr-defined]


def test_the_2026_12_02_settings_are_those_of_the_sweep_and_the_published_protocol() -> None:
    from gacost.calibration.protocol import OPTIMIZER_2026_12_02

    got = _config(optimizer="2026-12-02", torch_compile=True, liger=False)
    for name, value in OPTIMIZER_2026_12_02.items():
        assert str(getattr(got, name)).lower().endswith(str(value)), name
    assert got.learning_rate == 2e-4 and got.torch_compile  # type: ignore[attr-defined]


def test_the_memory_model_knows_which_adamw_trls_defaults_take() -> None:
    """The model's rule (the fused AdamW from torch 2.8 on, no sqrt(v) buffer) against the
    installed stack's default ``optim``."""
    import torch

    from gacost.advisor import predictor

    got = _config()
    fused = str(got.optim).lower().endswith("adamw_torch_fused")  # type: ignore[attr-defined]
    assert fused == predictor.fused_adamw({"torch": torch.__version__})
    assert not predictor.fused_adamw({"torch": "2.7.1+cu126"})
    assert predictor.fused_adamw({"torch": "2.8.0"}) and predictor.fused_adamw({})
