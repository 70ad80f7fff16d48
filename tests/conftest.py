"""Shared fixtures: isolate every test from the user's cache, keys and proxies, and from the
day the suite runs.

``GACOST_TEST_CLOCK`` moves the clock of the whole run (time-machine, ticking): an ISO date
or time, or ``snapshot+400d`` / ``snapshot-1d`` relative to the embedded snapshot's date.
CI runs the suite again at a year past the snapshot and a day before it (``.ci/run``), so a
test that depends on today's date fails there, not on some later day.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import time_machine

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GACOST_HOME", str(tmp_path / "gacost-home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for var in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "VAST_API_KEY",
        "RUNPOD_API_KEY",
        "LAMBDA_API_KEY",
    ):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def fixtures() -> Path:
    """The folder of test fixtures."""
    return FIXTURES


def shifted_clock(spec: str) -> datetime:
    """The time ``GACOST_TEST_CLOCK`` names (module docstring)."""
    relative = re.fullmatch(r"snapshot([+-]\d+)d", spec)
    if relative:
        from gacost.pricing.combine import snapshot_time
        from gacost.pricing.snapshot import load_snapshot

        noon = snapshot_time(load_snapshot()) + timedelta(hours=12)
        return noon + timedelta(days=int(relative.group(1)))
    when = datetime.fromisoformat(spec)
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


@pytest.fixture(autouse=True, scope="session")
def _moved_clock() -> Iterator[None]:
    spec = os.environ.get("GACOST_TEST_CLOCK", "").strip()
    if not spec:
        yield
        return
    with time_machine.travel(shifted_clock(spec), tick=True):
        yield


@pytest.fixture
def snapshot_day() -> Iterator[None]:
    """The clock at noon of the embedded snapshot's day (ticking), for tests that read a
    command's whole stderr: on later days it would carry the stale-prices warning."""
    with time_machine.travel(shifted_clock("snapshot+0d"), tick=True):
        yield
