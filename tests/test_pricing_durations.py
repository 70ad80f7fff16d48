"""The one duration parser (gacost.base.durations) behind --max-age, --deadline and budget's
--deadline, and the environment variables."""

from __future__ import annotations

from datetime import timedelta

import pytest

from gacost.advisor.budget import parse_hours
from gacost.base.durations import parse_duration
from gacost.pricing.cache import parse_age
from gacost.pricing.fetch.refresh import deadline_from_env


@pytest.mark.parametrize(
    ("text", "unit", "seconds"),
    [("90s", "h", 90), ("30m", "h", 1800), ("1.5d", "h", 129600), ("2W", "h", 1209600),
     (" 6 ", "h", 21600), ("6", "s", 6), (".5h", "h", 1800), ("0", "h", 0)],
)  # fmt: skip
def test_parse_duration(text: str, unit: str, seconds: float) -> None:
    assert parse_duration(text, default_unit=unit) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "h", "12x", "-1h", "nan", "inf", "1e3h", "9" * 400])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="expected a"):
        parse_duration(text)


def test_every_flag_uses_the_same_rules() -> None:
    for text in ("90m", "1.5d", "45s", "3"):
        assert parse_hours(text) * 3600 == pytest.approx(parse_age(text).total_seconds())
    with pytest.raises(ValueError, match="positive"):
        parse_hours("0")
    assert parse_age("0") == timedelta(0)  # --max-age 0: always refresh
    assert deadline_from_env({"GACOST_REFRESH_DEADLINE": "90"}) == 90.0  # bare: seconds
    assert deadline_from_env({"GACOST_REFRESH_DEADLINE": "2m"}) == 120.0
    assert deadline_from_env({}) == 60.0
