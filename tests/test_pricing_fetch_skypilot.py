"""The SkyPilot catalog fetcher: real catalog samples served over MockTransport."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from pricing_helpers import Router, catalog_text, context, full_catalog_text, isolate

from gacost.pricing.fetch.http import FetchError
from gacost.pricing.fetch.registry import FETCHERS
from gacost.pricing.fetch.skypilot import MIRROR_BASE, PRIMARY_BASE, SkyPilotCatalog, catalog_urls
from gacost.pricing.sources import SKYPILOT_CLOUDS, SOURCES

GITHUB = "raw.githubusercontent.com"
S3 = "skypilot-catalog.s3.us-east-1.amazonaws.com"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate(monkeypatch, tmp_path)


def _url(base: str, cloud: str) -> str:
    return f"{base}/v8/{cloud}/vms.csv"


def _fetch(cloud: str, router: Router, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    ctx, sleeps = context(env)
    with router.client() as client:
        return SkyPilotCatalog(cloud)(client, ctx), sleeps


@pytest.mark.parametrize("cloud", SKYPILOT_CLOUDS)
def test_every_cloud_parses_by_header_name(cloud: str) -> None:
    text = full_catalog_text(cloud)
    router = Router().add(_url(PRIMARY_BASE, cloud), httpx.Response(200, text=text))
    result, _ = _fetch(cloud, router)
    assert result.offers and {o.provider for o in result.offers} == {cloud}
    assert all(o.fetched_at == "2026-12-02T12:00:00Z" for o in result.offers)
    assert all(o.source == f"skypilot-catalog v8 {cloud}" for o in result.offers)
    assert router.hits(S3) == []


def test_gcp_host_and_gpu_rows_are_combined() -> None:
    router = Router().add(_url(PRIMARY_BASE, "gcp"), httpx.Response(200, text=catalog_text("gcp")))
    result, _ = _fetch("gcp", router)
    a2 = next(
        o for o in result.offers if o.instance_type == "a2-highgpu-1g" and o.region == "us-central1"
    )
    assert a2.price_hour == pytest.approx(0.73948 + 2.93391) and a2.gpu == "A100-40GB-SXM"


def test_per_instance_price_divides_into_per_gpu() -> None:
    router = Router().add(_url(PRIMARY_BASE, "aws"), httpx.Response(200, text=catalog_text("aws")))
    result, _ = _fetch("aws", router)
    p4d = next(o for o in result.offers if o.instance_type == "p4d.24xlarge")
    assert p4d.gpu_count == 8 and p4d.per_gpu_hour == pytest.approx(p4d.price_hour / 8)


def test_github_rate_limit_falls_back_to_the_s3_mirror() -> None:
    router = Router()
    router.add(_url(PRIMARY_BASE, "vast"), httpx.Response(429, headers={"Retry-After": "1"}))
    router.add(_url(MIRROR_BASE, "vast"), httpx.Response(200, text=catalog_text("vast")))
    result, sleeps = _fetch("vast", router)
    assert len(router.hits(GITHUB)) == 3 and len(router.hits(S3)) == 1
    assert sleeps == [1.0, 1.0]
    assert {o.source for o in result.offers} == {"skypilot-catalog v8 vast (mirror)"}


def test_truncated_catalog_falls_back_then_fails_naming_both() -> None:
    text = catalog_text("aws")
    cut = text[: len(text) // 2].rsplit(",", 1)[0]  # mid-row
    router = Router()
    router.add(_url(PRIMARY_BASE, "aws"), httpx.Response(200, text=cut))
    router.add(_url(MIRROR_BASE, "aws"), httpx.Response(404))
    with pytest.raises(FetchError, match="malformed CSV.* / .*HTTP 404"):
        _fetch("aws", router)


def test_empty_body_is_an_error() -> None:
    router = Router().add(_url(PRIMARY_BASE, "lambda"), httpx.Response(200, text=""))
    router.add(_url(MIRROR_BASE, "lambda"), httpx.Response(200, text="  \n"))
    with pytest.raises(FetchError, match="empty"):
        _fetch("lambda", router)


def test_base_url_override() -> None:
    env = {"GACOST_SKYPILOT_CATALOG_URL": "https://mirror.example.test/catalogs/"}
    assert catalog_urls("aws", env) == ["https://mirror.example.test/catalogs/v8/aws/vms.csv"]
    router = Router().add(env["GACOST_SKYPILOT_CATALOG_URL"] + "v8/runpod/vms.csv",
                          httpx.Response(200, text=catalog_text("runpod")))  # fmt: skip
    result, _ = _fetch("runpod", router, env)
    assert result.offers and router.hits(GITHUB) == []


def test_registry_matches_the_source_list() -> None:
    offers = [name for name, info in SOURCES.items() if info.kind == "offers"]
    assert list(FETCHERS) == offers  # the spot advisor adds risk, not offers
    assert [n for n, i in SOURCES.items() if i.kind != "offers"] == ["aws-spot-advisor"]
    assert all(SOURCES[f"skypilot-{c}"].providers == (c,) for c in SKYPILOT_CLOUDS)
