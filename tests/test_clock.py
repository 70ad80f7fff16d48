"""What the age of the prices looks like to a user on any day: the snapshot's day, a month
later, a year later, a day before it; and the clock that CI moves (``GACOST_TEST_CLOCK``)."""

from __future__ import annotations

import contextlib
import io
import os
from datetime import timedelta
from pathlib import Path

import pytest
import time_machine
from conftest import shifted_clock

from gacost.base.clock import utc_now
from gacost.commands.cli import main
from gacost.pricing.combine import SHIPPED_MAX_AGE, snapshot_time
from gacost.pricing.snapshot import load_snapshot

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "qwen3-1.7b-lora.yaml"
SNAPSHOT_DAY = snapshot_time(load_snapshot())


def recommend_at(days_after_snapshot: float) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    when = SNAPSHOT_DAY + timedelta(days=days_after_snapshot)
    with time_machine.travel(when, tick=False), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):  # fmt: skip
        code = main(["recommend", "--job", str(EXAMPLE), "--top", "1"])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("days", [-1, 0, 1.3, 29])
def test_a_new_user_sees_no_warning_in_the_first_month(days: float) -> None:
    code, out, err = recommend_at(days)
    assert code == 0 and err == ""
    assert f"as of {load_snapshot().as_of}" in out  # the footer names the date instead


@pytest.mark.parametrize("days", [31, 366])
def test_shipped_prices_past_a_month_get_one_warning(days: float) -> None:
    code, _, err = recommend_at(days)
    (line,) = err.splitlines()
    assert code == 0 and line.startswith("warning: prices: the embedded snapshot (read ")
    assert f"{days} days ago) is over {SHIPPED_MAX_AGE.days} days old; " in line
    assert "`gacost prices --refresh` fetches current rates" in line


def test_the_moved_clock_is_the_one_gacost_reads() -> None:
    spec = os.environ.get("GACOST_TEST_CLOCK", "").strip()
    if not spec:
        pytest.skip("GACOST_TEST_CLOCK is not set (CI sets it for its second and third runs)")
    assert abs(utc_now() - shifted_clock(spec)) < timedelta(hours=1)


def test_relative_clock_specs_count_from_the_snapshot() -> None:
    noon = SNAPSHOT_DAY + timedelta(hours=12)
    assert shifted_clock("snapshot+366d") == noon + timedelta(days=366)
    assert shifted_clock("snapshot-1d") == noon - timedelta(days=1)
    assert shifted_clock("2027-01-05").isoformat() == "2027-01-05T00:00:00+00:00"
