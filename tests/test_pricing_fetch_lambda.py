"""The Lambda Cloud fetcher: a keyed source (the key comes from the environment only)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from pricing_helpers import Router, context, isolate, json_reply

from gacost.pricing.fetch import lambda_cloud
from gacost.pricing.fetch.http import FetchError
from gacost.pricing.fetch.lambda_cloud import API_URL, NO_CAPACITY


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate(monkeypatch, tmp_path)


def test_bearer_key_and_offers_per_region_with_capacity() -> None:
    router = Router().add(API_URL, json_reply("lambda_instance_types.json"))
    ctx, _ = context({"LAMBDA_API_KEY": "secret"})
    with router.client() as client:
        result = lambda_cloud.fetch(client, ctx)
    assert router.requests[0].headers["Authorization"] == "Bearer secret"
    got = {(o.instance_type, o.region): o for o in result.offers}
    assert sorted(got) == [
        ("gpu_1x_a10", "us-east-1"), ("gpu_1x_a10", "us-west-1"),
        ("gpu_8x_h100_sxm5", "us-south-2"),
    ]  # fmt: skip
    h100 = got[("gpu_8x_h100_sxm5", "us-south-2")]
    assert (h100.gpu, h100.gpu_count, h100.price_hour, h100.gpu_memory_gib) == (
        "H100-SXM",
        8,
        23.92,
        80,
    )
    assert got[("gpu_1x_a10", "us-east-1")].gpu == "A10"
    assert result.dropped == {NO_CAPACITY: 1}


def test_without_a_key_nothing_is_sent() -> None:
    router = Router().add(API_URL, json_reply("lambda_instance_types.json"))
    ctx, _ = context({})
    with router.client() as client, pytest.raises(FetchError, match=r"\$LAMBDA_API_KEY"):
        lambda_cloud.fetch(client, ctx)
    assert router.requests == []


def test_unauthorised_is_not_retried() -> None:
    router = Router().add(API_URL, httpx.Response(401, json={"error": "bad key"}))
    ctx, sleeps = context({"LAMBDA_API_KEY": "wrong"})
    with router.client() as client, pytest.raises(FetchError, match="HTTP 401"):
        lambda_cloud.fetch(client, ctx)
    assert sleeps == [] and len(router.requests) == 1
