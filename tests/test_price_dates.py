"""The date of the prices apart from the day read: stored per source, shown, and marked."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from bench_loader import load_bench

from gacost.base.errors import DataError, JobSpecError
from gacost.base.records import Offer
from gacost.commands.cli import main
from gacost.pricing import build_snapshot
from gacost.pricing.price_dates import (
    DEFAULT_MAX_AGE,
    MARK,
    MAX_AGE_ENV,
    PriceDating,
    max_age_from,
    parse_price_dates,
)
from gacost.pricing.snapshot import load_snapshot

ROOT = Path(__file__).resolve().parent.parent
FULL = ROOT / "tests" / "fixtures" / "pricing" / "full"
EXAMPLE = ROOT / "examples" / "qwen3-1.7b-lora.yaml"
NOON = datetime(2026, 12, 2, 12, tzinfo=timezone.utc)

pytestmark = pytest.mark.usefixtures("snapshot_day")


def _offer(provider: str, instance: str = "") -> Offer:
    table = load_snapshot()
    return next(o for o in table.offers
                if o.provider == provider and (not instance or o.instance_type == instance))


def test_every_snapshot_source_is_dated_or_says_why_not() -> None:
    table = load_snapshot()
    assert set(table.price_dates) == {o.provider for o in table.offers}  # all 21
    for provider, entry in table.price_dates.items():
        assert entry.source in table.sources, provider
        assert len(entry.basis) > 40, provider  # each date (or its absence) is cited
    dates = table.price_dates
    assert (dates["nebius"].prices_as_of, dates["nebius"].outdated) == ("2025-08-12", True)
    assert dates["lambda"].outdated and dates["lambda"].prices_as_of is None
    assert dates["runpod"].not_before == "2025-09-26" and dates["runpod"].outdated
    assert dates["oci"].prices_as_of == "2026-09-18" and not dates["oci"].outdated
    assert {dates[c].prices_as_of for c in ("aws", "azure", "gcp")} == {"2026-12-03"}
    assert "PR #6628" in dates["nebius"].basis and "#194" in dates["oci"].basis


def test_the_builder_carries_the_dates_from_sources_json(tmp_path: Path) -> None:
    out = tmp_path / "prices"
    assert build_snapshot.main(["--from", str(FULL), "--out", str(out),
                                "--as-of", "2026-12-02"]) == 0
    built = json.loads((out / "snapshot.json").read_text(encoding="utf-8"))
    embedded = json.loads((ROOT / "data" / "prices" / "snapshot.json").read_text("utf-8"))
    assert built == embedded  # the committed dates are the fixtures' ones, regenerated
    sources = json.loads((FULL / "sources.json").read_text(encoding="utf-8"))
    assert built["price_dates"]["lambda"]["basis"] == sources["lambda"]["basis"]


def test_a_bad_date_names_the_provider_and_field() -> None:
    with pytest.raises(DataError, match=r"price_dates\.aws\.prices_as_of: '2026-13-01'.*fix"):
        parse_price_dates({"aws": {"source": "s", "prices_as_of": "2026-13-01"}}, "f", "fix")
    with pytest.raises(DataError, match=r"price_dates\.aws\.outdated: must be true or false"):
        parse_price_dates({"aws": {"source": "s", "outdated": "yes"}}, "f", "fix")
    with pytest.raises(DataError, match=r"price_dates\.aws: unknown field\(s\) when"):
        parse_price_dates({"aws": {"source": "s", "when": "x"}}, "f", "fix")


def test_offers_are_dated_by_their_source_not_the_day_read() -> None:
    table = load_snapshot()
    dating = PriceDating(table.price_dates, NOON)
    nebius = dating.of(_offer("nebius"))
    assert (nebius.prices_as_of, nebius.read, nebius.age_days) == ("2025-08-12", "2026-12-02", 477)
    assert nebius.marked and nebius.outdated
    oci = dating.of(_offer("oci"))
    assert (oci.age_days, oci.marked) == (75, False)
    assert not dating.of(_offer("aws")).marked
    undated = dating.of(_offer("verda"))
    assert (undated.prices_as_of, undated.age_days, undated.marked) == (None, None, False)
    # a live fetch (another source label) is dated by its fetch: current rates
    live = replace(_offer("nebius"), source="nebius api", fetched_at="2026-12-01T10:00:00Z")
    assert (dating.of(live).prices_as_of, dating.of(live).marked) == ("2026-12-01", False)
    # a live SkyPilot catalog no scheduled job rewrites is as old as its last hand edit
    hand = replace(_offer("spheron"), source="skypilot-catalog v8 spheron",
                   fetched_at="2026-12-01T10:00:00Z")
    assert dating.of(hand).prices_as_of is None
    bot = replace(_offer("runpod"), source="skypilot-catalog v8 runpod",
                  fetched_at="2026-12-01T10:00:00Z")
    assert (dating.of(bot).prices_as_of, dating.of(bot).marked) == ("2026-12-01", False)
    # the threshold decides for a dated, not outdated source
    assert PriceDating(table.price_dates, NOON, timedelta(days=30)).of(_offer("oci")).marked


def test_the_threshold_comes_from_the_flag_then_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(MAX_AGE_ENV, raising=False)
    assert max_age_from(None) == DEFAULT_MAX_AGE == timedelta(days=180)
    assert max_age_from("90") == timedelta(days=90)  # a bare number is days
    monkeypatch.setenv(MAX_AGE_ENV, "26w")
    assert max_age_from(None) == timedelta(weeks=26)
    assert max_age_from("12h") == timedelta(hours=12)
    with pytest.raises(JobSpecError, match="--price-age: .*give e.g. 180d"):
        max_age_from("soon")
    monkeypatch.setenv(MAX_AGE_ENV, "-3")
    with pytest.raises(DataError, match=f"\\${MAX_AGE_ENV}: .*unset it"):
        max_age_from(None)


def test_prices_marks_outdated_offers_and_names_the_dates(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["prices", "--gpu", "H100-SXM", "--provider", "lambda"]) == 0
    out = capsys.readouterr().out
    assert f"3.290{MARK}" in out
    assert "price dates (not the day read): lambda undated (outdated)" in out
    assert out.rstrip().splitlines()[-1].startswith(f"{MARK} = a price known to differ")
    assert main(["prices", "--gpu", "H100-SXM", "--provider", "lambda", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    row = data["offers"][0]
    assert (row["prices_as_of"], row["price_outdated"], row["price_old"]) == (None, True, True)
    assert data["price_dates"]["nebius"]["prices_as_of"] == "2025-08-12"
    assert data["price_age_limit_days"] == 180


def test_prices_with_a_short_age_marks_dated_offers(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prices", "--offers", "--provider", "oci", "--format", "json"]) == 0
    assert not any(r["price_old"] for r in json.loads(capsys.readouterr().out)["offers"])
    assert main(["prices", "--offers", "--provider", "oci", "--format", "json",
                 "--price-age", "30d"]) == 0
    rows = json.loads(capsys.readouterr().out)["offers"]
    assert all(r["price_old"] and r["price_age_days"] >= 75 for r in rows)
    assert main(["prices", "--price-age", "never"]) == 2
    assert "--price-age: expected a duration" in capsys.readouterr().err


def test_market_view_marks_a_cheapest_price_that_is_outdated(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["prices", "--format", "json"]) == 0
    gpus = {r["gpu"]: r for r in json.loads(capsys.readouterr().out)["gpus"]}
    assert gpus["A10"]["on_demand_provider"] == "lambda" and gpus["A10"]["on_demand_price_old"]
    assert main(["prices"]) == 0
    out = capsys.readouterr().out
    a10 = next(line for line in out.splitlines() if line.startswith("A10 "))
    assert f"0.750{MARK}" in a10
    assert max(map(len, out.splitlines())) <= 120


def test_compare_and_recommend_carry_the_price_date(capsys: pytest.CaptureFixture[str]) -> None:
    job = str(EXAMPLE)
    assert main(["compare", "--job", job, "--gpu", "H100-SXM", "--top", "80"]) == 0
    out = capsys.readouterr().out
    assert f"2.950{MARK}" in out and "nebius 2025-08-12 (outdated)" in out.replace("\n  ", " ")
    assert max(map(len, out.splitlines())) <= 120
    assert main(["compare", "--job", job, "--gpu", "H100-SXM", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert {r["provider"] for r in rows if r["price_old"]} >= {"lambda", "nebius", "runpod"}
    assert not any(r["price_old"] for r in rows if r["provider"] in ("aws", "gcp", "azure"))
    assert main(["recommend", "--job", job, "--format", "json", "--top", "3"]) == 0
    report = json.loads(capsys.readouterr().out)
    plan = report["recommended"]
    assert plan["provider"] == "verda" and plan["prices_as_of"] is None
    assert plan["price_old"] is False and report["prices"]["price_age_limit_days"] == 180
    assert main(["recommend", "--job", job, "--top", "3"]) == 0
    text = capsys.readouterr().out
    assert "undated (primeintellect, cudo" not in text  # sorted
    assert "price dates (not the day read): undated (" in text


def test_every_snapshot_offer_recomputes_from_the_raw_rows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The independent full recompute (bench/price_recompute.py, no pricing/ code): 4870
    offers exact, the 42 whose GCP on-demand a rule cleared listed, none unexplained."""
    assert load_bench("price_recompute").main([]) == 0
    out = capsys.readouterr().out
    assert "4912 snapshot offers" in out and "4870 exact, 42 with" in out
    assert "0 unexplained" in out
