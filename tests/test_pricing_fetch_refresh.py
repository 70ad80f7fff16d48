"""Refreshing sources into the cache: staleness, failures that keep the cache, export."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from pricing_helpers import NOW, Router, fast_policy, full_catalog_text, isolate, json_reply

from gacost.base.errors import PricingError, UnknownNameError
from gacost.pricing.cache import PriceCache
from gacost.pricing.fetch.azure import API_URL as AZURE_URL
from gacost.pricing.fetch.refresh import FAILED, FETCHED, FRESH, SKIPPED, Refresher, select_sources
from gacost.pricing.fetch.skypilot import MIRROR_BASE, PRIMARY_BASE
from gacost.pricing.fetch.vast import API_URL as VAST_URL
from gacost.pricing.snapshot import PriceTable, load_snapshot

DAY = timedelta(hours=24)


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> PriceCache:
    return PriceCache(isolate(monkeypatch, tmp_path))


@pytest.fixture
def snapshot() -> PriceTable:
    return load_snapshot()


class Lines(list[str]):
    def __call__(self, line: str) -> None:
        assert "\n" not in line
        self.append(line)


def _refresher(cache: PriceCache, snapshot: PriceTable, router: Router, now=NOW, env=None):  # type: ignore[no-untyped-def]
    policy, _ = fast_policy()
    warns, notes = Lines(), Lines()
    refresher = Refresher(
        cache=cache, snapshot=snapshot, now=now, env=env or {}, warn=warns, note=notes,
        policy=policy, client=router.client(),
    )  # fmt: skip
    return refresher, warns, notes


def _catalog(cloud: str, router: Router | None = None) -> Router:
    router = router or Router()
    return router.add(f"{PRIMARY_BASE}/v8/{cloud}/vms.csv",
                      httpx.Response(200, text=full_catalog_text(cloud)))  # fmt: skip


def _azure_pages(router: Router) -> Router:
    return router.add(AZURE_URL, json_reply("azure_retail_page1.json"),
                      json_reply("azure_retail_page2.json"))  # fmt: skip


def test_select_sources() -> None:
    defaults = select_sources()
    assert "aws-bulk" not in defaults and "azure" in defaults and "skypilot-gcp" in defaults
    assert select_sources(providers=["Azure"]) == ["skypilot-azure", "azure"]
    assert select_sources(["aws-bulk", "aws-bulk"]) == ["aws-bulk"]
    with pytest.raises(UnknownNameError, match="did you mean 'azure'"):
        select_sources(["azur"])


def test_fetch_writes_quality_checked_offers(cache: PriceCache, snapshot: PriceTable) -> None:
    refresher, warns, notes = _refresher(cache, snapshot, _azure_pages(Router()))
    (outcome,) = refresher.refresh(["azure"], DAY)
    assert outcome.status == FETCHED and warns == []
    cached = cache.read("azure")
    assert cached is not None and cached.fetched_at == NOW
    assert len(cached.offers) == outcome.offers == 6  # the zero-price T4 is dropped
    h100 = next(o for o in cached.offers if o.instance_type == "Standard_NC40ads_H100_v5")
    assert h100.spot_hour is None  # spot above on-demand: cleared
    assert outcome.dropped["on-demand price zero or negative"] == 1
    assert outcome.dropped["spot above on-demand (spot cleared)"] == 1
    (line,) = notes
    assert line.startswith("azure: 6 offers from Azure Retail Prices API; 8 rows dropped or ")


def test_fresh_cache_is_not_refetched(cache: PriceCache, snapshot: PriceTable) -> None:
    router = _catalog("lambda")
    refresher, _, _ = _refresher(cache, snapshot, router)
    assert refresher.refresh(["skypilot-lambda"], DAY)[0].status == FETCHED
    later, _, notes = _refresher(cache, snapshot, router, now=NOW + timedelta(hours=3))
    assert later.refresh(["skypilot-lambda"], DAY)[0].status == FRESH
    assert len(router.requests) == 1 and "3 h old (max age 24 h); not fetched" in notes[0]
    assert later.refresh(["skypilot-lambda"], timedelta(0))[0].status == FETCHED
    assert len(router.requests) == 2


def test_failed_refresh_keeps_the_cache_byte_for_byte(
    cache: PriceCache, snapshot: PriceTable
) -> None:
    good, _, _ = _refresher(cache, snapshot, _catalog("vast"))
    good.refresh(["skypilot-vast"], DAY)
    before = cache.path("skypilot-vast").read_bytes()
    broken = Router()
    broken.add(f"{PRIMARY_BASE}/v8/vast/vms.csv", httpx.Response(503))
    broken.add(f"{MIRROR_BASE}/v8/vast/vms.csv", httpx.Response(200, text="InstanceType,Price\n"))
    refresher, warns, _ = _refresher(cache, snapshot, broken, now=NOW + timedelta(days=2))
    (outcome,) = refresher.refresh(["skypilot-vast"], DAY)
    assert outcome.status == FAILED
    assert cache.path("skypilot-vast").read_bytes() == before
    (line,) = warns
    assert line.startswith("skypilot-vast: refresh failed (")
    assert "HTTP 503" in line and "missing column" in line
    assert line.endswith("using the prices cached 2 days ago")


@pytest.mark.parametrize(
    "reply",
    [
        json_reply("azure_retail_empty.json"),
        httpx.Response(200, text='{"Items": [{"currencyCode": "USD", '),
        json_reply({"Items": {"not": "a list"}}),
        httpx.ReadTimeout("timed out"),
    ],
    ids=["empty", "truncated", "wrong-shape", "timeout"],
)
def test_without_cache_a_failure_falls_back_to_the_snapshot(
    cache: PriceCache, snapshot: PriceTable, reply: httpx.Response | Exception
) -> None:
    refresher, warns, _ = _refresher(cache, snapshot, Router().add(AZURE_URL, reply))
    assert refresher.refresh(["azure"], DAY)[0].status == FAILED
    (line,) = warns
    assert line.startswith("azure: refresh failed (")
    assert line.endswith(f"using the embedded snapshot (read {snapshot.as_of}, 12 h ago)")
    assert not cache.path("azure").exists()


def test_corrupt_cache_is_replaced_by_a_good_fetch(cache: PriceCache, snapshot: PriceTable) -> None:
    path = cache.path("skypilot-runpod")
    path.parent.mkdir(parents=True)
    path.write_text("not,a,cache\n")
    refresher, warns, _ = _refresher(cache, snapshot, _catalog("runpod"))
    assert refresher.refresh(["skypilot-runpod"], DAY)[0].status == FETCHED
    assert warns == [] and cache.read("skypilot-runpod") is not None


def test_corrupt_cache_survives_a_failed_fetch(cache: PriceCache, snapshot: PriceTable) -> None:
    path = cache.path("skypilot-runpod")
    path.parent.mkdir(parents=True)
    path.write_text("not,a,cache\n")
    refresher, warns, _ = _refresher(cache, snapshot, Router())  # every URL: 404
    assert refresher.refresh(["skypilot-runpod"], DAY)[0].status == FAILED
    assert path.read_text() == "not,a,cache\n"
    assert "embedded snapshot" in warns[0]


def test_keyed_source_is_skipped_with_a_note(cache: PriceCache, snapshot: PriceTable) -> None:
    router = Router()
    refresher, warns, notes = _refresher(cache, snapshot, router)
    assert refresher.refresh(["lambda"], DAY)[0].status == SKIPPED
    assert router.requests == [] and warns == []
    assert notes == ["lambda: skipped, $LAMBDA_API_KEY is not set (export it to use this source)"]


def test_one_failure_does_not_stop_the_others(cache: PriceCache, snapshot: PriceTable) -> None:
    router = _catalog("gcp", Router().add(VAST_URL, httpx.Response(500)))
    refresher, warns, _ = _refresher(cache, snapshot, router)
    statuses = [o.status for o in refresher.refresh(["vast", "skypilot-gcp"], DAY)]
    assert statuses == [FAILED, FETCHED] and len(warns) == 1 and warns[0].startswith("vast:")


def test_export_writes_a_dated_snapshot(
    cache: PriceCache, snapshot: PriceTable, tmp_path: Path
) -> None:
    router = _azure_pages(_catalog("azure", _catalog("gcp")))
    refresher, _, _ = _refresher(cache, snapshot, router)
    lines = refresher.export(tmp_path / "out", ["skypilot-gcp", "skypilot-azure", "azure"])
    assert lines[-1].startswith("wrote ") and lines[-1].endswith("as of 2026-12-02")
    exported = load_snapshot(tmp_path / "out")
    assert exported.as_of == "2026-12-02"
    assert {o.provider for o in exported.offers} == {"gcp", "azure"}
    meta = json.loads((tmp_path / "out" / "snapshot.json").read_text())
    assert meta["sources"][0] == "Azure Retail Prices API fetched 2026-12-02T12:00:00Z"
    t4 = {o.region: o.source for o in exported.offers if o.instance_type == "Standard_NC4as_T4_v3"}
    assert t4["eastus"] == "Azure Retail Prices API"  # first party wins where both have it
    assert "skypilot-catalog v8 azure" in t4.values()  # the catalog fills other regions
    assert not cache.root.exists()  # export leaves the cache alone


def test_export_failure_writes_nothing(
    cache: PriceCache, snapshot: PriceTable, tmp_path: Path
) -> None:
    refresher, _, _ = _refresher(cache, snapshot, _catalog("gcp"))
    with pytest.raises(PricingError, match="nothing written: azure: .*HTTP 404"):
        refresher.export(tmp_path / "out", ["skypilot-gcp", "azure"])
    assert not (tmp_path / "out").exists()
