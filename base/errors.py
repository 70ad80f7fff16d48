"""The one error hierarchy of gacost; ``gacost.commands.cli.main`` catches it.

    GacostError                 anything the user can fix; printed as ``error: ...``
    ├── JobSpecError            job.yaml: bad YAML, unknown key, wrong type, bad value
    ├── DataError               a data, profile, price or cache file is missing or corrupt
    ├── UnknownNameError        a GPU, provider or model name that is not known
    ├── PricingError            price sources could not be fetched or parsed
    ├── CalibrationError        calibration could not run (missing extra, no device, ...)
    ├── LaunchError             a plan SkyPilot cannot take (missing extra, provider, ...)
    └── InfeasibleError         constraints no plan satisfies (deadline, budget, VRAM)

Every message names the field or file at fault and, where one exists, the fix.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class GacostError(Exception):
    """Base of every error gacost reports to the user without a traceback."""

    exit_code = 1


class JobSpecError(GacostError):
    """The job spec is invalid; exit code 2 like a usage error."""

    exit_code = 2


class DataError(GacostError):
    """A data, profile, price or cache file is missing, corrupt or of the wrong kind."""


class UnknownNameError(GacostError):
    """A GPU, provider or model name that gacost does not know."""

    exit_code = 2


class PricingError(GacostError):
    """Price sources could not be fetched or parsed."""


class RefreshFailedError(PricingError):
    """``--strict``: a price source due for a refresh was not refreshed (exit 4)."""

    exit_code = 4


class CalibrationError(GacostError):
    """Calibration could not run."""


class LaunchError(GacostError):
    """The recommended plan cannot be written or handed to SkyPilot."""


class InfeasibleError(GacostError):
    """No plan satisfies the job's constraints."""

    exit_code = 3


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """Return ``" (did you mean 'x'?)"`` for the closest choice, or ``""``."""
    options = list(choices)
    lowered = {c.lower(): c for c in options}
    close = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return f" (did you mean '{lowered[close[0]]}'?)" if close else ""
