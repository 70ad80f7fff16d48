"""Run a script with TraceML's Hugging Face integration attached, as the published T4/L4
notebook's ``traceml run`` attaches it: ``traceml_ai.integrations.huggingface.init()``
(process-wide patches of ``nn.Module.__call__``, ``Tensor.to``, backward, the DataLoader and
the optimizer) and a ``TraceMLTrainerCallback`` on every ``SFTTrainer``.

    python bench/archive/traceml_attach.py bench/user_script.py JOB --micro-batch 1 ...

Used by ``bench/archive/traceml_overhead_cpu.sh``; needs ``traceml-ai`` (not a project
dependency) and an aggregator (``traceml serve``).
"""

import runpy
import sys
from typing import Any

import traceml_ai.integrations.huggingface as traceml_hf
import trl

traceml_hf.init()
_original_init = trl.SFTTrainer.__init__


def _init_with_callback(self: trl.SFTTrainer, *args: Any, **kwargs: Any) -> None:
    kwargs["callbacks"] = [*(kwargs.get("callbacks") or []), traceml_hf.TraceMLTrainerCallback()]
    _original_init(self, *args, **kwargs)


trl.SFTTrainer.__init__ = _init_with_callback  # type: ignore[method-assign]
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
