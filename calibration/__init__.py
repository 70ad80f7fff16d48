"""gacost calibration: time the job's real TRL + PEFT training on the attached GPU (or CPU).

Only this package imports torch, transformers, trl and peft. At module level they are
imported by ``sweep`` and ``builder`` (torch, transformers, peft; ``sweep`` also trl),
``protocol`` (trl), ``callback`` (torch, transformers), ``env`` and ``run`` (torch);
``trace`` and ``ranks`` import torch only inside the functions that need it, and the other
modules (``request``, ``launch``, ``worker``, ``stats``, ``passes``, ``oom``, ``record``) not
at all, so the command line checks every flag before the seconds-long import.
"""
