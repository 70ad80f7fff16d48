"""gacost advisor: decides. The time and memory model, split estimates, objectives, the
planner, break-even, and what ``recommend``, ``budget`` and ``compare`` decide (their
rendering is the command modules', :mod:`gacost.commands`).

This package never imports torch or httpx at module level: ``gacost recommend``
with a saved profile runs on a machine without either.
"""
