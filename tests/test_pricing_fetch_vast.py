"""The Vast.ai bundles fetcher: POST query, GET fallback, medians per GPU/count/country."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs

import httpx
import pytest
from pricing_helpers import Router, fetch_with, isolate, json_reply

from gacost.base.errors import PricingError
from gacost.pricing.fetch import vast
from gacost.pricing.fetch.http import FetchError
from gacost.pricing.fetch.vast import API_URL, BAD_OFFER, MERGED, UNRELIABLE


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate(monkeypatch, tmp_path)


def _fetch(router: Router, env: dict[str, str] | None = None) -> vast.FetchResult:
    return fetch_with(vast.fetch, router, env)


def test_posts_the_query_and_reduces_offers_to_medians() -> None:
    router = Router().add(API_URL, json_reply("vast_bundles.json"))
    result = _fetch(router)
    (sent,) = router.requests
    assert sent.method == "POST" and "Authorization" not in sent.headers
    body = json.loads(sent.content)
    assert body["rentable"] == {"eq": True} and body["type"] == "on-demand"
    offers = {(o.gpu, o.gpu_count, o.region): o for o in result.offers}
    us_4090 = offers[("RTX-4090", 1, "US")]
    assert us_4090.price_hour == 0.35 and us_4090.spot_hour == 0.20  # medians of 3
    assert us_4090.instance_type == "1x-RTX-4090" and us_4090.gpu_memory_gib == 23.99
    assert offers[("RTX-4090", 1, "CA")].price_hour == 0.38
    two = offers[("RTX-4090", 2, "US")]
    assert two.per_gpu_hour == pytest.approx(0.35)  # per-GPU from the bundle price
    assert offers[("A100-40GB-SXM", 1, "US")].price_hour == 0.80
    assert offers[("A100-80GB-SXM", 1, "US")].price_hour == 1.10
    assert offers[("H100-SXM", 8, "IS")].per_gpu_hour == pytest.approx(2.3)
    assert ("L40S", 1, "unknown") in offers
    assert result.dropped == {UNRELIABLE: 1, BAD_OFFER: 1}
    assert result.adjusted == {MERGED: 2}


def test_api_key_is_sent_when_set() -> None:
    router = Router().add(API_URL, json_reply({"offers": []}))
    _fetch(router, {"VAST_API_KEY": "k-123"})
    assert router.requests[0].headers["Authorization"] == "Bearer k-123"


def test_post_refused_falls_back_to_get_with_q() -> None:
    router = Router().add(API_URL, httpx.Response(400, text="bad"), json_reply("vast_bundles.json"))
    result = _fetch(router)
    post, get = router.requests
    assert (post.method, get.method) == ("POST", "GET")
    query = json.loads(parse_qs(get.url.query.decode())["q"][0])
    assert query["verified"] == {"eq": True}
    assert len(result.offers) == 8


def test_server_errors_are_not_turned_into_a_get() -> None:
    router = Router().add(API_URL, httpx.Response(500))
    with pytest.raises(FetchError, match="HTTP 500.*after 3 tries"):
        _fetch(router)
    assert {r.method for r in router.requests} == {"POST"}


@pytest.mark.parametrize("payload", [{"offer": []}, {"offers": {}}, ["offers"]])
def test_wrong_shapes_are_pricing_errors(payload: object) -> None:
    with pytest.raises(PricingError, match="'offers' list"):
        _fetch(Router().add(API_URL, json_reply(payload)))


def test_truncated_body_is_an_error() -> None:
    router = Router().add(API_URL, httpx.Response(200, text='{"offers": [{"id": 1, "gpu_n'))
    with pytest.raises(FetchError, match="not valid JSON"):
        _fetch(router)


def test_bad_offers_are_counted_not_fatal() -> None:
    raw = [
        "not an object",
        {"gpu_name": "RTX 4090", "num_gpus": 0, "dph_total": 0.3},
        {"gpu_name": "RTX 4090", "num_gpus": 1, "dph_total": "0.3"},
        {"gpu_name": "RTX 4090", "num_gpus": True, "dph_total": 0.3},
        {"gpu_name": "RTX 4090", "num_gpus": 1, "dph_total": 0.3},
    ]
    result = vast.parse_offers(raw, "t")
    assert result.dropped == {BAD_OFFER: 4} and len(result.offers) == 1
    assert result.offers[0].region == "unknown" and result.offers[0].spot_hour is None
