"""The one atomic file writer: readers see the old file or the new one, never a mix.

Policy, the same for profiles, price caches, snapshots and plots: the data goes to a
temporary file in the target's folder, is flushed and fsync'ed, gets the mode the target
already has (a new file: the usual ``0o666`` less the umask, like ``open()`` would give),
and replaces the target with ``os.replace``. On any failure the temporary file is removed
and the target is left as it was.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO


def _new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], *, binary: bool = False) -> Iterator[IO[str]]:
    """Yield a handle on a temporary file next to ``path``; replace ``path`` on success.

    Text mode writes UTF-8 with no newline translation. ``binary=True`` yields a binary
    handle (typed loosely: write ``bytes`` to it).
    """
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    fd, tmp_name = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        handle = os.fdopen(fd, "wb") if binary else os.fdopen(
            fd, "w", encoding="utf-8", newline=""
        )
        with handle:
            yield handle  # type: ignore[misc]
            handle.flush()
            os.fsync(handle.fileno())
        try:
            mode = stat.S_IMODE(target.stat().st_mode)
        except FileNotFoundError:
            mode = _new_file_mode()
        tmp.chmod(mode)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomic(
    path: str | os.PathLike[str], data: str | bytes, *, make_parents: bool = False
) -> None:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` atomically; ``make_parents``
    creates its folder first (otherwise a missing folder is an ``OSError``)."""
    if not isinstance(data, (str, bytes)):
        raise TypeError(f"write_atomic takes str or bytes, not {type(data).__name__}")
    target = Path(path)
    if make_parents and str(target.parent):
        target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(target, binary=isinstance(data, bytes)) as handle:
        handle.write(data)  # type: ignore[arg-type]
