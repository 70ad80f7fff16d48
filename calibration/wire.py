"""``python -m gacost.calibration.wire SCRIPT [ARGS...]`` (or ``-m MODULE [ARGS...]``): run
a training script unchanged, with :class:`~gacost.calibration.callback.GacostCallback`
attached to every ``transformers`` ``Trainer`` (TRL's ``SFTTrainer`` included) it builds,
so the real run comes back as a profile without editing the script.

The profile goes to ``$GACOST_PROFILE`` (what ``recommend --sky-task`` sets for each run).
A trainer that already has a ``GacostCallback`` keeps its own. When the trainer's
``per_device_train_batch_size`` x ``gradient_accumulation_steps`` is not the plan's
``$GACOST_MICRO_BATCH`` x ``$GACOST_GRAD_ACCUM``, one warning on stderr says so (the
script, not gacost, sets the split; the profile records the split that ran). Under
``torchrun -m gacost.calibration.wire`` every rank attaches it; rank 0 writes.

Owns the attaching and the running of the script (as ``python SCRIPT`` would: ``__main__``,
``sys.argv``, the script's folder first on ``sys.path``); nothing else.
"""

from __future__ import annotations

import os
import runpy
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gacost.base.errors import GacostError
from gacost.base.split import Split

PROFILE_ENV = "GACOST_PROFILE"
SPLIT_ENVS = ("GACOST_MICRO_BATCH", "GACOST_GRAD_ACCUM")
USAGE = "usage: python -m gacost.calibration.wire SCRIPT [ARGS...] | -m MODULE [ARGS...]"


def split_mismatch(args: Any, env: dict[str, str]) -> str | None:
    """The warning when the trainer's split is not the plan's (None when it is, or when
    the plan's split is not in ``env``)."""
    planned = [env.get(name, "") for name in SPLIT_ENVS]
    if not all(p.isdigit() for p in planned):
        return None
    plan = Split(int(planned[0]), int(planned[1]))
    ran = Split(int(getattr(args, "per_device_train_batch_size", 0)),
                int(getattr(args, "gradient_accumulation_steps", 0)))
    if ran == plan:
        return None
    return (f"gacost: this run's split is {ran}, the plan's {plan} (pass $GACOST_MICRO_BATCH "
            "and $GACOST_GRAD_ACCUM as per_device_train_batch_size and "
            f"gradient_accumulation_steps); the profile records {ran}")


def attach(profile: str | Path, env: dict[str, str] | None = None) -> None:
    """Make every ``Trainer`` built from now on carry a ``GacostCallback(profile)``."""
    from transformers import Trainer

    from gacost.calibration.callback import GacostCallback

    if getattr(Trainer.__init__, "_gacost_wired", False):
        return
    original = Trainer.__init__
    environ = dict(os.environ if env is None else env)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        if any(isinstance(c, GacostCallback) for c in self.callback_handler.callbacks):
            return
        self.add_callback(GacostCallback(profile))
        warning = split_mismatch(self.args, environ)
        if warning and self.args.process_index == 0:
            print(warning, file=sys.stderr)

    __init__._gacost_wired = True  # type: ignore[attr-defined]
    Trainer.__init__ = __init__  # type: ignore[method-assign]


def run(argv: Sequence[str], env: dict[str, str] | None = None) -> None:
    """Attach the callback, then run ``argv`` (``SCRIPT ARGS`` or ``-m MODULE ARGS``)."""
    environ = dict(os.environ if env is None else env)
    profile = environ.get(PROFILE_ENV, "")
    if not profile:
        raise GacostError(f"wire: ${PROFILE_ENV} is not set; set it to the profile file the "
                          "run should write")
    if not argv or (argv[0] == "-m" and len(argv) < 2):
        raise GacostError(USAGE)
    if argv[0] == "-m":
        attach(profile, environ)
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return
    script = Path(argv[0])
    if not script.is_file():
        raise GacostError(f"wire: no script {argv[0]!r}; give the training script's path")
    attach(profile, environ)
    sys.argv = list(argv)
    sys.path.insert(0, str(script.resolve().parent))
    runpy.run_path(str(script), run_name="__main__")


def main() -> None:
    try:
        run(sys.argv[1:])
    except GacostError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
