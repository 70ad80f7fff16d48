"""gacost calibration: time the job's real TRL + PEFT training on the attached GPU (or CPU).

Only this package imports torch, transformers, trl and peft, and only inside the modules
that need them (``sweep``, ``builder``, ``env``); ``stats`` is pure Python, and ``trace``
imports torch only in its capture functions (its analysis is pure Python).
"""
