"""gacost calibration: time the job's real TRL + PEFT training on the attached GPU (or CPU),
and read the TRL configs users already train with (``trl_config``: a ``trl sft`` YAML or
saved TrainingArguments JSON -> a :class:`~gacost.base.job.Job`, TRL's key names and
defaults; the counterpart of ``sweep``, which hands a job to TRL).

Only this package imports torch, transformers, trl and peft. At module level they are
imported by ``sweep`` and ``builder`` (torch, transformers, peft; ``sweep`` also trl),
``protocol`` (trl), ``callback`` (torch, transformers), ``env`` and ``run`` (torch);
``trace`` and ``ranks`` import torch only inside the functions that need it, ``wire``
imports transformers only when it attaches, and the other modules (``request``,
``trl_config``, ``launch``, ``worker``, ``stats``, ``passes``, ``oom``, ``record``,
``host_probe``) not at all, so the command line checks every flag before the seconds-long
import, ``recommend --trl-config`` runs without torch and ``gacost probe`` where torch is not
installed (import-linter checks ``request``, ``trl_config`` and ``host_probe``).
"""
