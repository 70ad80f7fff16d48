"""The price cache (location, atomic files, ages) and the offline freshest-data loader."""

from __future__ import annotations

import sys
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from pricing_helpers import NOW, isolate

from gacost.base.errors import DataError
from gacost.base.records import Offer
from gacost.pricing import combine
from gacost.pricing.cache import (
    DEFAULT_MAX_AGE,
    PriceCache,
    cache_dir,
    format_age,
    format_timestamp,
    max_age_from_env,
    parse_age,
    parse_timestamp,
)
from gacost.pricing.snapshot import PriceTable, read_offers_csv

STAMP = "2026-12-02T10:00:00Z"  # two hours before NOW
T4 = ("T4", 1, 16, 4, 16)
SNAPSHOT = PriceTable(
    offers=(
        Offer("aws", "us-east-1", "g4dn.xlarge", *T4, 0.60, 0.2, "snap", "2026-11-20"),
        Offer("aws", "eu-west-1", "g4dn.xlarge", *T4, 0.65, None, "snap", "2026-11-20"),
        Offer("gcp", "us-east1", "g2-standard-4", "L4", 1, 24, 4, 16, 0.7, None, "snap",
              "2026-11-20"),
        Offer("vast", "Texas, US, NA", "1x-RTX_4090-32-65536", "RTX-4090", 1, 24, None, None,
              0.4, None, "snap", "2026-11-20"),
    ),
    source="test snapshot",
    as_of="2026-11-20",
)  # fmt: skip


def _offer(provider: str, region: str, instance: str, price: float, source: str) -> Offer:
    return Offer(provider, region, instance, "T4", 1, 16, None, None, price, None, source, STAMP)


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> PriceCache:
    return PriceCache(isolate(monkeypatch, tmp_path))


# --- where the cache lives ---------------------------------------------------------------


def test_cache_dir_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert cache_dir({"GACOST_CACHE_DIR": "/c", "GACOST_HOME": "/h"}) == Path("/c")
    assert cache_dir({"GACOST_HOME": "/h"}) == Path("/h/cache")
    # otherwise platformdirs decides: on Linux, $XDG_CACHE_HOME or ~/.cache
    if sys.platform.startswith("linux"):
        monkeypatch.setenv("HOME", str(tmp_path))
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
        assert cache_dir({}) == tmp_path / ".cache" / "gacost"
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
        assert cache_dir({}) == tmp_path / "x" / "gacost"


def test_default_cache_follows_the_environment(cache: PriceCache, tmp_path: Path) -> None:
    assert PriceCache().root == tmp_path / "cache" / "prices"


# --- files -----------------------------------------------------------------------------


def test_round_trip_keeps_source_and_fetched_at(cache: PriceCache) -> None:
    offers = [_offer("aws", "us-east-1", "g4dn.xlarge", 0.526, "live")]
    path = cache.write("skypilot-aws", offers)
    cached = cache.read("skypilot-aws")
    assert cached is not None and list(cached.offers) == offers
    assert cached.fetched_at == parse_timestamp(STAMP) and cached.age(NOW) == timedelta(hours=2)
    assert read_offers_csv(path) == offers  # also a valid --prices file
    assert cache.read("azure") is None


def test_failed_write_keeps_the_old_file(cache: PriceCache) -> None:
    path = cache.write("azure", [_offer("azure", "eastus", "Standard_NC4as_T4_v3", 0.5, "a")])
    before = path.read_bytes()
    broken = replace(_offer("azure", "eastus", "x", 0.5, "a"), gpu_count=object())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        cache.write("azure", [broken])
    assert path.read_bytes() == before
    names = sorted(p.name for p in path.parent.iterdir())
    assert names == ["azure.csv", "azure.rejected.csv"]  # no temp file left


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "empty"),
        ("garbage,\x00\n", "bad header"),
        ("provider,region\naws\n", "bad header"),
    ],
)
def test_corrupt_file_is_a_data_error_naming_the_fix(
    cache: PriceCache, content: str, message: str
) -> None:
    path = cache.path("vast")
    path.parent.mkdir(parents=True)
    path.write_text(content)
    with pytest.raises(DataError, match=message) as err:
        cache.read("vast")
    text = str(err.value)
    assert "corrupt price cache" in text and f"delete {path}" in text
    assert "build_snapshot" not in text


def test_mixed_or_bad_timestamps_are_corrupt(cache: PriceCache) -> None:
    a = _offer("aws", "us-east-1", "g4dn.xlarge", 0.5, "s")
    cache.write("skypilot-aws", [a, replace(a, region="us-west-2", fetched_at="2026-12-01")])
    with pytest.raises(DataError, match="several fetches"):
        cache.read("skypilot-aws")
    cache.write("skypilot-aws", [replace(a, fetched_at="yesterday")])
    with pytest.raises(DataError, match="not an ISO time|is not a date"):
        cache.read("skypilot-aws")


def test_source_names_are_checked(cache: PriceCache) -> None:
    with pytest.raises(ValueError):
        cache.path("../etc")


# --- ages ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("30m", 1800), ("24h", 86400), ("6", 21600), ("2d", 172800), ("1w", 604800),
     ("0", 0), ("1.5h", 5400)],
)  # fmt: skip
def test_parse_age(text: str, seconds: float) -> None:
    assert parse_age(text).total_seconds() == seconds


@pytest.mark.parametrize("text", ["", "-1h", "soon", "3y"])
def test_parse_age_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="expected a duration"):
        parse_age(text)


def test_max_age_from_env() -> None:
    assert max_age_from_env({}) == DEFAULT_MAX_AGE == timedelta(hours=24)
    assert max_age_from_env({"GACOST_PRICE_MAX_AGE": "6h"}) == timedelta(hours=6)
    with pytest.raises(DataError, match=r"\$GACOST_PRICE_MAX_AGE"):
        max_age_from_env({"GACOST_PRICE_MAX_AGE": "often"})


def test_format_age() -> None:
    assert format_age(timedelta(seconds=5)) == "under a minute"
    assert format_age(timedelta(minutes=12)) == "12 min"
    assert format_age(timedelta(hours=30)) == "30 h"
    assert format_age(timedelta(days=9)) == "9 days"
    assert format_age(timedelta(hours=-1)) == "under a minute"


# --- the freshest data -----------------------------------------------------------------


def _load(
    cache: PriceCache, max_age: timedelta = timedelta(days=365)
) -> tuple[PriceTable, list[str]]:
    warnings: list[str] = []
    table = combine.load_freshest(
        cache=cache, snapshot=SNAPSHOT, now=NOW, max_age=max_age, warn=warnings.append
    )
    return table, warnings


def test_only_the_snapshot_is_returned_unchanged(cache: PriceCache) -> None:
    table, warnings = _load(cache)
    assert table is SNAPSHOT and warnings == []


def test_a_cached_provider_replaces_its_snapshot_rows(cache: PriceCache) -> None:
    cache.write("skypilot-aws", [_offer("aws", "us-east-1", "g4dn.xlarge", 0.52, "sky")])
    table, warnings = _load(cache)
    aws = [o for o in table.offers if o.provider == "aws"]
    assert [(o.region, o.price_hour) for o in aws] == [("us-east-1", 0.52)]
    assert {o.provider for o in table.offers} == {"aws", "gcp", "vast"}
    assert table.as_of == "2026-11-20"  # the oldest part used
    assert "skypilot-catalog v8 aws (aws; 2 h old)" in table.source
    assert "embedded snapshot as of 2026-11-20 (gcp, vast)" in table.source
    assert warnings == []


def test_first_party_wins_per_instance_and_catalog_fills_the_rest(cache: PriceCache) -> None:
    cache.write("skypilot-azure", [
        _offer("azure", "eastus", "Standard_NC4as_T4_v3", 0.60, "sky"),
        _offer("azure", "eastus", "Standard_NC8as_T4_v3", 0.80, "sky"),
    ])  # fmt: skip
    cache.write("azure", [_offer("azure", "eastus", "Standard_NC4as_T4_v3", 0.526, "api")])
    table, _ = _load(cache)
    got = {o.instance_type: (o.price_hour, o.source) for o in table.offers if o.provider == "azure"}
    assert got == {"Standard_NC4as_T4_v3": (0.526, "api"), "Standard_NC8as_T4_v3": (0.8, "sky")}


def test_live_vast_supersedes_the_vast_catalog(cache: PriceCache) -> None:
    cache.write("skypilot-vast", [_offer("vast", "Texas, US, NA", "1x-T4-32-65536", 0.2, "sky")])
    cache.write("vast", [_offer("vast", "US", "1x-T4", 0.25, "api")])
    table, _ = _load(cache)
    assert [o.source for o in table.offers if o.provider == "vast"] == ["api"]


def test_partial_aws_bulk_keeps_other_snapshot_regions(cache: PriceCache) -> None:
    cache.write("aws-bulk", [_offer("aws", "us-east-1", "g4dn.xlarge", 0.526, "bulk")])
    table, _ = _load(cache)
    aws = {o.region: o.source for o in table.offers if o.provider == "aws"}
    assert aws == {"us-east-1": "bulk", "eu-west-1": "snap"}


def test_cache_older_than_the_snapshot_is_ignored(cache: PriceCache) -> None:
    old = replace(_offer("gcp", "us-east1", "g2-standard-4", 9.0, "sky"), fetched_at="2026-10-01")
    cache.write("skypilot-gcp", [old])
    table, _ = _load(cache)
    assert table is SNAPSHOT


def test_corrupt_cache_warns_once_and_uses_the_snapshot(cache: PriceCache) -> None:
    path = cache.path("skypilot-gcp")
    path.parent.mkdir(parents=True)
    path.write_text("provider,region\n")
    table, warnings = _load(cache)
    assert table is SNAPSHOT
    (line,) = warnings
    assert line.startswith("skypilot-gcp: corrupt price cache") and "\n" not in line
    assert "using the embedded snapshot (read 2026-11-20, 12 days ago) instead" in line
    assert path.read_text() == "provider,region\n"  # left for the user to inspect


def test_shipped_data_warns_only_past_a_month(cache: PriceCache) -> None:
    """Shipped prices are always older than the 24 h max age; the footer names their date,
    and stderr says more only once they are older than SHIPPED_MAX_AGE (30 days)."""
    _, warnings = _load(cache, max_age=timedelta(hours=24))  # 12 days old
    assert warnings == []
    warnings = []
    combine.load_freshest(cache=cache, snapshot=SNAPSHOT, now=NOW + timedelta(days=30),
                          max_age=timedelta(hours=24), warn=warnings.append)  # fmt: skip
    assert warnings == [
        "prices: the embedded snapshot (read 2026-11-20, 42 days ago) is over 30 days old; "
        "`gacost prices --refresh` fetches current rates (a newer gacost ships newer ones)"
    ]


def test_a_stale_cache_gets_one_warning_naming_it(cache: PriceCache) -> None:
    cache.write("skypilot-aws", [_offer("aws", "us-east-1", "g4dn.xlarge", 0.52, "sky")])
    cache.write("skypilot-gcp", [_offer("gcp", "us-east1", "g2-standard-4", 0.7, "sky")])
    _, warnings = _load(cache, max_age=timedelta(hours=1))  # both caches are 2 h old
    (line,) = warnings
    assert line.startswith("prices: skypilot-catalog v8 ")
    assert "prices cached 2 h ago (and 1 more source(s)), past the max age (1 h); " in line
    _, warnings = _load(cache, max_age=timedelta(0))
    assert "past the max age (0)" in warnings[0]
    assert _load(cache, max_age=timedelta(hours=3))[1] == []


def test_a_clock_behind_the_snapshot_tells_no_age(cache: PriceCache) -> None:
    warnings: list[str] = []
    before = datetime(2026, 11, 19, tzinfo=timezone.utc)
    path = cache.path("skypilot-gcp")
    path.parent.mkdir(parents=True)
    path.write_text("provider,region\n")
    combine.load_freshest(cache=cache, snapshot=SNAPSHOT, now=before,
                          max_age=timedelta(hours=24), warn=warnings.append)  # fmt: skip
    (line,) = warnings  # the corrupt cache alone; no staleness warning
    assert line.endswith("using the embedded snapshot (read 2026-11-20) instead")


def test_a_cache_stamped_in_the_future_is_stale_and_unused(cache: PriceCache) -> None:
    future = format_timestamp(NOW + timedelta(days=3))
    offer = replace(_offer("azure", "eastus", "Standard_NC4as_T4_v3", 0.1, "azure"),
                    fetched_at=future)  # fmt: skip
    cache.write("azure", [offer])
    cached = cache.read("azure")
    assert cached is not None and cached.in_future(NOW)
    assert cached.age(NOW) > timedelta(days=10_000)  # always older than any max age
    table, warnings = _load(cache)
    assert table is SNAPSHOT  # the snapshot serves azure instead
    (line,) = warnings
    assert "is in the future; ignored" in line and "azure" in line
    # a few seconds ahead (clock skew) is still fine
    near = replace(offer, fetched_at=format_timestamp(NOW + timedelta(seconds=30)))
    cache.write("azure", [near])
    cached = cache.read("azure")
    assert cached is not None and not cached.in_future(NOW)
    assert cached.age(NOW) == timedelta(0)
