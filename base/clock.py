"""The one wall clock: what "now" is for every age, date and timestamp gacost computes.

Code that judges an age (a price cache, the embedded snapshot, a Retry-After date) takes
``now`` as an argument; the commands read it here, once per command. Tests move it with
time-machine (``tests/conftest.py``; ``GACOST_TEST_CLOCK`` moves the whole suite), so no
test depends on the day it runs.
"""

from __future__ import annotations

from datetime import datetime, timezone


def utc_now() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(timezone.utc)


def utc_timestamp() -> str:
    """The current time as ISO 8601 to the second (``2026-12-03T09:30:00+00:00``)."""
    return utc_now().isoformat(timespec="seconds")
