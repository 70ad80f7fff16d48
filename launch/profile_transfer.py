"""A profile's way back from a cloud machine: printed into the job's log there, read out
of the log here. Owns the framing only (no SkyPilot, no profile parsing).

SkyPilot gives every job's output back through its log (``sky.tail_logs``), from the local
machine and from a remote API server alike, with no SSH setup or bucket; so the calibration
task ends with ``python -m gacost.launch.profile_transfer PROFILE``, which prints::

    GACOST-PROFILE-BEGIN <chunks> <sha256 of the file>
    GACOST-PROFILE <i> <base64 of zlib(file)>[i]      (800 characters a line)
    GACOST-PROFILE-END

:func:`decode` finds these lines anywhere in a log (SkyPilot prefixes job output with
``(task, pid=...)``, and may repeat lines when a log stream is retried), puts the chunks in
order and checks the digest, so a truncated or mixed-up log is an error, never a wrong file.
"""

from __future__ import annotations

import base64
import hashlib
import re
import sys
import zlib
from pathlib import Path

from gacost.base.errors import DataError

CHUNK = 800
MAX_PROFILE_BYTES = 16 << 20  # as gacost.base.profile reads them
_BEGIN = re.compile(r"GACOST-PROFILE-BEGIN (\d{1,6}) ([0-9a-f]{64})")
_CHUNK = re.compile(r"GACOST-PROFILE (\d{1,6}) ([A-Za-z0-9+/=]{1,800})")  # 800: CHUNK


def encode(data: bytes) -> list[str]:
    """The log lines that carry ``data``."""
    packed = base64.b64encode(zlib.compress(data, 9)).decode("ascii")
    chunks = [packed[i:i + CHUNK] for i in range(0, len(packed), CHUNK)] or [""]
    digest = hashlib.sha256(data).hexdigest()
    return ([f"GACOST-PROFILE-BEGIN {len(chunks)} {digest}"]
            + [f"GACOST-PROFILE {i} {c}" for i, c in enumerate(chunks)]
            + ["GACOST-PROFILE-END"])


def decode(log: str) -> bytes:
    """The file the last complete framing in ``log`` carries; :class:`DataError` when there
    is none, or it is incomplete or does not match its digest."""
    begins = list(_BEGIN.finditer(log))
    if not begins:
        raise DataError("the job's log holds no profile (the calibration wrote none)")
    last = begins[-1]
    count, digest = int(last.group(1)), last.group(2)
    chunks: dict[int, str] = {}
    for found in _CHUNK.finditer(log, last.end()):
        chunks.setdefault(int(found.group(1)), found.group(2))
    missing = [i for i in range(count) if i not in chunks]
    if missing:
        raise DataError(f"the profile in the job's log is cut short ({len(missing)} of "
                        f"{count} parts missing)")
    try:
        data = zlib.decompressobj().decompress(
            base64.b64decode("".join(chunks[i] for i in range(count)), validate=True),
            MAX_PROFILE_BYTES + 1)
    except (ValueError, zlib.error):
        raise DataError("the profile in the job's log is garbled") from None
    if len(data) > MAX_PROFILE_BYTES or hashlib.sha256(data).hexdigest() != digest:
        raise DataError("the profile in the job's log does not match its digest")
    return data


def main(argv: list[str]) -> int:
    """``python -m gacost.launch.profile_transfer FILE``: print FILE's framing."""
    if len(argv) != 1:
        print("usage: python -m gacost.launch.profile_transfer PROFILE", file=sys.stderr)
        return 2
    print("\n".join(encode(Path(argv[0]).read_bytes())), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
