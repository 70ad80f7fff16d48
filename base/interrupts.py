"""Ctrl-C held back while C extensions import, then raised once, in gacost's own code.

Python turns SIGINT into ``KeyboardInterrupt`` at the next bytecode it runs, which may be
Python code that a C++ extension calls back while it loads (torch's import does, for
seconds). There the exception is either turned into a C++ exception nothing catches (the
process aborts with ``terminate called ... KeyboardInterrupt``, killed by a signal instead
of exiting 130) or swallowed (the process carries on calibrating). :func:`deferred_interrupt`
runs a block with a handler that only records the signal, and raises ``KeyboardInterrupt``
after it, where ``gacost.commands.cli.main`` turns it into ``error: interrupted`` and exit 130.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType


@contextlib.contextmanager
def deferred_interrupt() -> Iterator[None]:
    """Run the block with SIGINT recorded, not raised; raise ``KeyboardInterrupt`` after it
    if one came. A no-op off the main thread, or when SIGINT is not handled by Python (an
    ignored SIGINT, as in a background job, stays ignored)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):  # SIG_IGN, SIG_DFL or a handler not set from Python
        yield
        return
    caught: list[int] = []

    def record(signum: int, _frame: FrameType | None) -> None:
        caught.append(signum)

    signal.signal(signal.SIGINT, record)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt
