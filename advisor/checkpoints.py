"""What a run's checkpoints cost: the bytes TRL's Trainer writes per save, the seconds that
takes, and how many saves a run makes.

A user's ``SFTTrainer`` saves a checkpoint every ``save_steps`` updates (transformers'
default: 500) and once more at the end of training (``DefaultFlowCallback``: the last step
saves when the strategy is ``steps``), so a run of ``U`` updates saves
``ceil(U / save_steps)`` times; a ``save_steps`` below 1 is a share of the run, as in
``TrainingArguments``. The training loop waits for each save, so the bill pays for it.

A checkpoint holds the trained weights (a full fine-tune's every weight, in its dtype, fp32
master weights under fp16; LoRA's adapters only) and, unless ``save_only_model``, the
optimizer's two Adam moments: three copies of the trained parameters in their dtype, as
:mod:`gacost.advisor.memory_model` counts them on the GPU; scheduler, RNG and trainer state
are kilobytes.

:data:`SAVE_SECONDS_PER_GB` is measured: TRL's own checkpoints timed by the Trainer's
``on_save`` callback, 18 saves of six workloads (0.5 to 15.7 GB) on a lent H100's 16-core
KVM host, 2026-12-05: 0.65-1.20 s per GB, median 1.00, no fixed part left once the bytes are
counted (bench/MODEL.md, "Checkpoints"; ``python bench/checkpoint_saves.py``). Two saves
held out on the lent H200's host the same day ran 1.47 and 2.1 s per GB (a 24 GB full
fine-tune 32 % over the 1.0, QLoRA's 0.26 GB adapters 0.3 s over): the rate is the
machine's, so the hours' 90 % band takes :data:`SAVE_SECONDS_PER_GB_RANGE`. That is
serialising from the GPU into the page cache; a disk slower than the run's average write
rate (bytes per save over the time between saves) would throttle it further, which nothing
here models.
"""

from __future__ import annotations

import math

from gacost.advisor import memory_model
from gacost.advisor.time_model import TrainSetup
from gacost.base.records import ModelArch

#: Seconds per 1e9 bytes of checkpoint (module docstring: measured, median of 18 saves).
SAVE_SECONDS_PER_GB = 1.0

#: The range of the timed saves over two hosts, the held-out ones included (bench/MODEL.md,
#: "Checkpoints": 0.65-1.20 s per GB on the H100's host, 1.47-2.35 on the H200's the same
#: day): the rate is the machine's, like the host's per launch; the hours' band carries it.
SAVE_SECONDS_PER_GB_RANGE = (0.65, 2.35)


def checkpoint_bytes(arch: ModelArch, setup: TrainSetup, *, weights_only: bool = False) -> float:
    """Bytes one checkpoint of ``setup`` on ``arch`` writes: the trained weights, and the two
    Adam moments unless ``weights_only`` (``save_only_model``)."""
    copies = 1.0 if weights_only else 3.0  # the weights, then Adam's m and v
    return copies * memory_model.trained_copy_bytes(arch, setup)


def save_seconds(nbytes: float, rate: float = SAVE_SECONDS_PER_GB) -> float:
    """Seconds one save of ``nbytes`` takes at ``rate`` seconds per GB."""
    return max(nbytes, 0.0) / 1e9 * rate


def save_interval(updates: int, save_steps: float) -> int:
    """Updates between saves of a run of ``updates`` (0: the run saves nothing); a
    ``save_steps`` below 1 is a share of the run, rounded up as transformers does."""
    if save_steps <= 0 or updates <= 0:
        return 0
    if save_steps < 1:
        return max(1, math.ceil(updates * save_steps))
    return int(save_steps)


def saves_per_run(updates: int, interval: int) -> int:
    """Saves of a run of ``updates`` saving every ``interval`` updates and at its end."""
    return 0 if interval <= 0 or updates <= 0 else math.ceil(updates / interval)
