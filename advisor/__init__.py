"""gacost advisor: job spec, performance/memory model, solver, reports and CLI.

This package never imports torch or httpx at module level: ``gacost recommend``
with a saved profile runs on a machine without either.
"""

__version__ = "0.1.0"
