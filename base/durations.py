"""The one duration parser of gacost's flags, job-adjacent options and environment variables.

``"90s"``, ``"30m"``, ``"24h"``, ``"1.5d"``, ``"2w"``; a bare number is in the caller's
default unit (hours for ages and deadlines of plans, seconds for network deadlines). Case
and surrounding spaces do not matter; negative, NaN and infinite values are refused, and
zero only where the caller allows it (``--max-age 0`` means "always refresh").
"""

from __future__ import annotations

import math
import re
from datetime import timedelta

UNITS: dict[str, float] = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]?)\s*$", re.IGNORECASE)


def parse_duration(text: str, *, default_unit: str = "h", allow_zero: bool = True) -> timedelta:
    """The duration ``text`` means; :class:`ValueError` with an example otherwise."""
    match = _DURATION.match(text)
    unit = (match.group(2).lower() or default_unit) if match else ""
    if not match or unit not in UNITS:
        raise ValueError(f"expected a duration like 12h, 90m, 1.5d or 30s, got {text[:40]!r}")
    seconds = float(match.group(1)) * UNITS[unit]
    if not math.isfinite(seconds) or seconds > timedelta.max.total_seconds() / 2:
        raise ValueError(f"expected a finite duration, got {text[:40]!r}")
    if seconds == 0 and not allow_zero:
        raise ValueError(f"must be a positive duration, got {text[:40]!r}")
    return timedelta(seconds=seconds)


def parse_hours(text: str) -> float:
    """A positive duration in hours (a bare number is hours)."""
    return parse_duration(text, allow_zero=False).total_seconds() / 3600.0
