"""The profile folder: where ``calibrate --sky`` puts the profiles that come back, and what
``recommend`` reads by default, and the no-clobber writer that puts them there.

Location: ``$GACOST_PROFILE_DIR``, else ``$GACOST_HOME/profiles``, else ``profiles/`` in
platformdirs' user data directory (``$XDG_DATA_HOME/gacost/profiles`` or
``~/.local/share/gacost/profiles`` on Linux, ``~/Library/Application Support/gacost/profiles``
on macOS, ``%LOCALAPPDATA%\\gacost\\profiles`` on Windows). A profile there is any
``*.json`` file whose name does not start with a dot (the atomic writers' temporary files
do; so does ``recommend``'s record of what it used, :data:`SEEN_FILE`).

:func:`write_new` never replaces a file: the data go to a temporary file next to the target,
flushed and fsync'ed, which is then hard-linked to the first free name of ``name.json``,
``name-2.json``, ``name-3.json``, ... (a link fails on an existing name, so two writers
racing for one name both keep their data), and the temporary file is removed. On a file
system without hard links the name is created exclusively (``O_EXCL``) and written.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

import platformdirs

PROFILE_DIR_ENV = "GACOST_PROFILE_DIR"
HOME_ENV = "GACOST_HOME"  # as pricing.cache reads it
SEEN_FILE = ".recommend-seen.json"
MAX_SUFFIX = 10_000  # name-2 ... name-9999: beyond that the folder needs a clean-up


def profile_dir(env: Mapping[str, str] | None = None) -> Path:
    """The profile folder (it may not exist yet; see the module docstring)."""
    env = os.environ if env is None else env
    if env.get(PROFILE_DIR_ENV):
        return Path(env[PROFILE_DIR_ENV]).expanduser()
    if env.get(HOME_ENV):
        return Path(env[HOME_ENV]).expanduser() / "profiles"
    return Path(platformdirs.user_data_dir("gacost", appauthor=False)) / "profiles"


def profile_files(folder: Path) -> list[Path]:
    """The profiles in ``folder`` (``*.json``, no dot-files), by name; none if it is missing."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.json") if not p.name.startswith(".") and p.is_file())


def candidate_names(name: str) -> list[str]:
    """``name``, then ``stem-2.suffix``, ``stem-3.suffix``, ... (the names :func:`write_new`
    tries, in order)."""
    path = Path(name)
    return [name, *(f"{path.stem}-{i}{path.suffix}" for i in range(2, MAX_SUFFIX))]


def write_new(folder: Path, name: str, data: bytes) -> Path:
    """Write ``data`` to ``folder/name``, or to the first free suffixed name when that exists;
    never replaces a file. Creates ``folder``. Returns the path written."""
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        tmp.chmod(0o666 & ~umask)
        for candidate in candidate_names(name):
            target = folder / candidate
            try:
                os.link(tmp, target)
            except FileExistsError:
                continue
            except OSError:  # a file system without hard links: exclusive create instead
                if not _write_exclusive(target, data):
                    continue
            return target
        raise FileExistsError(f"{folder / name}: {MAX_SUFFIX} versions exist; clean up "
                              "the folder")
    finally:
        tmp.unlink(missing_ok=True)


def _write_exclusive(target: Path, data: bytes) -> bool:
    """Create ``target`` (False when it exists) and write ``data``; a partial file is
    removed when the write fails."""
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        return False
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    return True
