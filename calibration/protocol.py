"""The TRL training configuration of a measurement, defined once.

``gacost calibrate`` (:mod:`gacost.calibration.sweep`) and the bench scripts that time plain
TRL on the device (``bench/h200_sweep.py``, ``bench/archive/published_protocol.py``) build their
``SFTConfig`` with :func:`sft_config`: fixed-length rows without packing (``max_length`` and
``pad_to_multiple_of`` the sequence length), gradient checkpointing without re-entrant
autograd, no checkpoint saves, no reports or evaluation, no progress bar, no dataloader
workers, one seed for the model and the data order; under torchrun no unused-parameter search.

The optimizer, its schedule, the learning rate and the logging are TRL's defaults, as in a
user's script (AdamW fused, a linear schedule, a log every 10 updates): what calibrate runs.
The H200 sweep and the published protocol keep the settings calibrate measured with on
2026-12-02 (:data:`OPTIMIZER_2026_12_02`), so that their numbers stay reproducible
(bench/RESULTS.md, bench/H200-SWEEP.md). ``bench/user_script.py``, the user's own script,
does not use this: it sets only what the job sets and leaves the rest to TRL.
"""

from __future__ import annotations

from typing import Any, Literal

from trl import SFTConfig

from gacost.calibration import ranks

# What calibrate trained with until it took TRL's defaults, and what the H200 sweep and the
# published protocol still measure with: torch's AdamW (not the fused one), a constant
# learning rate, no logging.
OPTIMIZER_2026_12_02: dict[str, Any] = {
    "learning_rate": 2e-4,
    "lr_scheduler_type": "constant",
    "optim": "adamw_torch",
    "logging_strategy": "no",
}

Optimizer = Literal["trl", "2026-12-02"]


def sft_config(
    out: str,
    *,
    micro_batch: int,
    grad_accum: int,
    steps: int,
    seq_len: int,
    precision: str,
    checkpointing: bool,
    seed: int,
    use_cpu: bool,
    torch_compile: bool = False,
    liger: bool = False,
    optimizer: Optimizer = "trl",
) -> SFTConfig:
    """The ``SFTConfig`` of one split ``micro_batch x grad_accum`` trained for ``steps``
    optimizer updates on rows of ``seq_len`` tokens, written to ``out``.

    ``precision``: ``bf16`` or ``fp16`` mixed precision (anything else: neither);
    ``optimizer``: ``"trl"`` for TRL's defaults (calibrate), ``"2026-12-02"`` for
    :data:`OPTIMIZER_2026_12_02` (the H200 sweep, the published protocol).
    """
    extra = dict(OPTIMIZER_2026_12_02) if optimizer == "2026-12-02" else {}
    if ranks.world_size() > 1:  # DDP: every adapter gets a gradient, no unused-parameter search
        extra["ddp_find_unused_parameters"] = False
    return SFTConfig(
        output_dir=out,
        per_device_train_batch_size=micro_batch,
        gradient_accumulation_steps=grad_accum,
        max_steps=steps,
        max_length=seq_len,
        pad_to_multiple_of=seq_len,
        packing=False,
        gradient_checkpointing=checkpointing,
        gradient_checkpointing_kwargs={"use_reentrant": False} if checkpointing else None,
        torch_compile=torch_compile,
        use_liger_kernel=liger,
        save_strategy="no",
        eval_strategy="no",
        report_to="none",
        disable_tqdm=True,
        fp16=precision == "fp16",
        bf16=precision == "bf16",
        dataloader_num_workers=0,
        seed=seed,
        data_seed=seed,
        use_cpu=use_cpu,
        **extra,
    )
