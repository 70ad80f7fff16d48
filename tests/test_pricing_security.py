"""The transport over real HTTPS on 127.0.0.1: credentials, redirects, deadlines, cut-off data.

Each test runs the real fetchers against :class:`TlsServer` (a throwaway CA from trustme),
pointed there by the fetchers' URL variables, so nothing leaves the machine.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
import trustme
from pricing_helpers import (
    NOW,
    TlsServer,
    client_trusting,
    drip,
    fast_policy,
    fixture_text,
    full_catalog_text,
    isolate,
    redirect_to,
    send_body,
)

from gacost.pricing.cache import PriceCache
from gacost.pricing.fetch import lambda_cloud, oci, vast
from gacost.pricing.fetch.fetcher import FetchContext
from gacost.pricing.fetch.http import Deadline, FetchError, get_text
from gacost.pricing.fetch.refresh import FAILED, FETCHED, REJECTED, Refresher
from gacost.pricing.fetch.skypilot import BASE_URL_ENV
from gacost.pricing.snapshot import load_snapshot

SECRET = "sk-test-not-a-real-key"


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate(monkeypatch, tmp_path)


@pytest.fixture
def stop() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def _json(name: str) -> send_body:  # type: ignore[valid-type]
    return send_body(fixture_text(name).encode("utf-8"))


def test_bearer_key_does_not_follow_a_redirect_to_another_origin(ca: trustme.CA) -> None:
    with TlsServer(ca, {"/types": _json("lambda_instance_types.json")}) as other:
        with TlsServer(ca, {"/api": redirect_to(f"{other.url}/types", 302)}) as api:
            env = {"LAMBDA_API_KEY": SECRET, lambda_cloud.URL_ENV: f"{api.url}/api"}
            policy, _ = fast_policy()
            with client_trusting(ca) as client:
                result = lambda_cloud.fetch(client, FetchContext(NOW, env, policy))
    assert result.offers  # the redirect was followed to the end
    assert api.seen[0].headers.get("Authorization") == f"Bearer {SECRET}"
    assert [s.path for s in other.seen] == ["/types"]
    assert "Authorization" not in other.seen[0].headers
    assert all(SECRET not in str(s.headers) for s in other.seen)


def test_303_after_the_vast_post_is_a_get_without_the_body(ca: trustme.CA) -> None:
    with TlsServer(ca, {"/search": _json("vast_bundles.json")}) as other:
        with TlsServer(ca, {"/bundles/": redirect_to(f"{other.url}/search", 303)}) as api:
            env = {"VAST_API_KEY": SECRET, vast.URL_ENV: f"{api.url}/bundles/"}
            policy, _ = fast_policy()
            with client_trusting(ca) as client:
                result = vast.fetch(client, FetchContext(NOW, env, policy))
    assert result.offers
    posted = api.seen[0]
    assert posted.method == "POST" and b'"rented"' in posted.body and b'"external"' in posted.body
    (followed,) = other.seen
    assert followed.method == "GET" and followed.body == b""
    assert "Authorization" not in followed.headers and "Content-Length" not in followed.headers


def test_redirect_to_plain_http_is_refused_before_it_is_sent(ca: trustme.CA) -> None:
    with TlsServer(ca, {}) as target:
        plain = target.url.replace("https://", "http://")
        with TlsServer(ca, {"/p": redirect_to(f"{plain}/p", 301)}) as api:
            policy, _ = fast_policy()
            with client_trusting(ca) as client, pytest.raises(FetchError, match="non-HTTPS"):
                get_text(client, f"{api.url}/p", policy=policy)
    assert target.seen == []  # nothing reached it, not even a TLS-less request line


def test_retry_after_is_honoured_up_to_the_cap(ca: trustme.CA) -> None:
    calls: list[int] = []

    def busy_then_ok(handler: BaseHTTPRequestHandler) -> None:
        calls.append(1)
        if len(calls) == 1:
            handler.send_response(503)
            handler.send_header("Retry-After", "7")
            handler.send_header("Content-Length", "0")
            handler.end_headers()
        else:
            send_body(b"fine")(handler)

    def long_wait(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(429)
        handler.send_header("Retry-After", "3600")
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    with TlsServer(ca, {"/busy": busy_then_ok, "/slow": long_wait}) as api:
        policy, sleeps = fast_policy(max_wait_s=30)
        with client_trusting(ca) as client:
            assert get_text(client, f"{api.url}/busy", policy=policy) == "fine"
            assert sleeps == [7.0]
            with pytest.raises(FetchError, match="asks to wait 3600 s"):
                get_text(client, f"{api.url}/slow", policy=policy)
    assert sleeps == [7.0]  # 3600 s is over the 30 s cap: given up, not slept
    assert [s.path for s in api.seen].count("/slow") == 1


def test_a_dripping_server_cannot_hold_a_fetch_past_its_deadline(
    ca: trustme.CA, stop: threading.Event
) -> None:
    # one byte every 0.2 s never trips the 10 s read timeout; only the deadline stops it
    with TlsServer(ca, {"/drip": drip(0.2, 10_000, stop)}) as api:
        policy, _ = fast_policy(deadline=Deadline.after(1.0))
        start = time.monotonic()
        with client_trusting(ca) as client, pytest.raises(FetchError, match="deadline"):
            get_text(client, f"{api.url}/drip", policy=policy)
        elapsed = time.monotonic() - start
    assert 0.9 < elapsed < 8  # the deadline (1 s), not the 10 s read timeout nor 2000 s


def _refresher(
    ca: trustme.CA, env: dict[str, str], deadline_s: float, hours: int = 0, **kw: object
) -> Refresher:
    policy, _ = fast_policy()
    return Refresher(
        cache=PriceCache(), snapshot=load_snapshot(), now=NOW + timedelta(hours=hours), env=env,
        warn=lambda _: None, note=lambda _: None, policy=policy,
        client=client_trusting(ca), deadline_s=deadline_s, **kw,  # type: ignore[arg-type]
    )  # fmt: skip


def test_one_deadline_bounds_a_whole_refresh_when_every_source_hangs(
    ca: trustme.CA, stop: threading.Event
) -> None:
    hang = drip(0.3, 10_000, stop)
    routes = {"/vast": hang, "/azure": hang, "/v8/gcp/vms.csv": hang, "/v8/aws/vms.csv": hang}
    with TlsServer(ca, routes) as api:
        env = {
            vast.URL_ENV: f"{api.url}/vast",
            "GACOST_AZURE_URL": f"{api.url}/azure",
            BASE_URL_ENV: api.url,
        }
        names = ["vast", "azure", "skypilot-gcp", "skypilot-aws"]
        start = time.monotonic()
        outcomes = _refresher(ca, env, 1.5).refresh(names, timedelta(0))
        elapsed = time.monotonic() - start
    assert [o.status for o in outcomes] == [FAILED] * 4
    assert elapsed < 5  # one shared 1.5 s deadline, not 4 x 1.5 s (slower CI machines)
    assert not PriceCache().root.exists() or not any(PriceCache().root.iterdir())


def _aws_catalog() -> str:
    return (Path(__file__).parent / "fixtures/pricing/full/aws/vms.csv").read_text()


def test_a_catalog_cut_at_a_line_boundary_does_not_replace_the_cache(ca: trustme.CA) -> None:
    full = _aws_catalog()
    lines = full.splitlines(keepends=True)
    cut = "".join(lines[: len(lines) // 5])  # a clean line boundary: it parses
    served = {"body": full}

    def catalog(handler: BaseHTTPRequestHandler) -> None:
        send_body(served["body"].encode())(handler)

    with TlsServer(ca, {"/v8/aws/vms.csv": catalog}) as api:
        env = {BASE_URL_ENV: api.url}
        (first,) = _refresher(ca, env, 30).refresh(["skypilot-aws"], timedelta(0))
        assert first.status == FETCHED
        before = PriceCache().path("skypilot-aws").read_bytes()
        served["body"] = cut
        (second,) = _refresher(ca, env, 30, 1).refresh(["skypilot-aws"], timedelta(0))
        assert second.status == REJECTED and second.offers < first.offers / 2
        assert PriceCache().path("skypilot-aws").read_bytes() == before
        (forced,) = _refresher(ca, env, 30, 2, force=True).refresh(["skypilot-aws"], timedelta(0))
    assert forced.status == FETCHED and forced.offers == second.offers
    assert PriceCache().path("skypilot-aws").read_bytes() != before


def test_every_source_runs_end_to_end_against_a_local_https_server(ca: trustme.CA) -> None:
    """Each fetcher's URL variable points it at 127.0.0.1; real-shaped payloads, real TLS."""
    pages: dict[str, str] = {}

    def azure(handler: BaseHTTPRequestHandler) -> None:
        page = "2" if "skip=1000" in handler.path else "1"
        send_body(pages[page].encode("utf-8"))(handler)

    routes = {
        "/v8/lambda/vms.csv": send_body(full_catalog_text("lambda").encode("utf-8")),
        "/v8/nebius/vms.csv": send_body(full_catalog_text("nebius").encode("utf-8")),
        "/vast": _json("vast_bundles.json"),
        "/azure": azure,
        "/lambda": _json("lambda_instance_types.json"),
        "/aws/us-east-1/index.csv": send_body(fixture_text("aws_bulk_us-east-1.csv").encode()),
        "/advisor.json": _json("aws_spot_advisor.json"),
        "/oci/shapes.json": _json("oci_shapes.json"),
        "/oci/products.json": _json("oci_products.json"),
    }
    with TlsServer(ca, routes) as server:
        first = fixture_text("azure_retail_page1.json")
        link = "https://prices.azure.com:443/api/retail/prices"
        pages["1"] = first.replace(link, f"{server.url}/azure")
        pages["2"] = fixture_text("azure_retail_page2.json")
        env = {
            BASE_URL_ENV: server.url,
            vast.URL_ENV: f"{server.url}/vast",
            "GACOST_AZURE_URL": f"{server.url}/azure",
            lambda_cloud.URL_ENV: f"{server.url}/lambda",
            "LAMBDA_API_KEY": SECRET,
            "GACOST_AWS_BULK_URL": server.url + "/aws/{region}/index.csv",
            "GACOST_AWS_SPOT_ADVISOR_URL": f"{server.url}/advisor.json",
            oci.URL_ENV: f"{server.url}/oci",
        }
        names = ["skypilot-lambda", "skypilot-nebius", "vast", "azure", "lambda", "aws-bulk",
                 "aws-spot-advisor", "oci"]  # fmt: skip
        outcomes = _refresher(ca, env, 30).refresh(names, timedelta(0))
    assert {o.name: o.status for o in outcomes} == dict.fromkeys(names, FETCHED)
    assert all(o.offers > 0 for o in outcomes)
    paths = {s.path.split("?")[0] for s in server.seen}
    assert paths == set(routes)  # every source went to the local server, nowhere else
