"""The transport every fetcher uses: retries, backoff, Retry-After, HTTPS, timeouts, bodies."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import pytest
from pricing_helpers import (
    LoopbackServer,
    Router,
    fast_policy,
    isolate,
    json_bytes,
    send_body,
    stall,
)

from gacost.pricing.fetch import http
from gacost.pricing.fetch.http import FetchError, get_json, get_text, request

URL = "https://api.example.test/prices"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate(monkeypatch, tmp_path)


def test_429_then_success_honours_retry_after() -> None:
    router = Router().add(
        URL, httpx.Response(429, headers={"Retry-After": "2"}), httpx.Response(200, json={"ok": 1})
    )
    policy, sleeps = fast_policy()
    with router.client() as client:
        assert get_json(client, URL, policy=policy) == {"ok": 1}
    assert len(router.requests) == 2
    assert sleeps == [2.0]  # Retry-After beats the 0.5 s backoff


def test_5xx_backs_off_exponentially_then_gives_up() -> None:
    router = Router().add(URL, httpx.Response(503))
    policy, sleeps = fast_policy(tries=4, backoff_s=0.5)
    with router.client() as client, pytest.raises(FetchError, match="HTTP 503.*after 4 tries"):
        request(client, "GET", URL, policy=policy)
    assert sleeps == [0.5, 1.0, 2.0]
    assert len(router.requests) == 4


def test_retry_after_longer_than_the_limit_is_not_waited() -> None:
    router = Router().add(URL, httpx.Response(429, headers={"Retry-After": "3600"}))
    policy, sleeps = fast_policy(max_wait_s=30)
    with router.client() as client, pytest.raises(FetchError, match="asks to wait 3600 s") as err:
        request(client, "GET", URL, policy=policy)
    assert sleeps == [] and len(router.requests) == 1 and err.value.status == 429


def test_retry_after_as_http_date() -> None:
    router = Router().add(
        URL,
        httpx.Response(503, headers={"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}),
        httpx.Response(200, text="fine"),
    )
    policy, sleeps = fast_policy(backoff_s=0.25)
    with router.client() as client:
        assert get_text(client, URL, policy=policy) == "fine"
    assert sleeps == [0.25]  # a date in the past: only the backoff


def test_4xx_is_not_retried_and_keeps_the_status() -> None:
    router = Router().add(URL, httpx.Response(403, text="denied"))
    policy, sleeps = fast_policy()
    with router.client() as client, pytest.raises(FetchError, match="HTTP 403") as err:
        request(client, "GET", URL, policy=policy)
    assert err.value.status == 403 and len(router.requests) == 1 and sleeps == []


def test_transport_errors_are_retried() -> None:
    router = Router().add(URL, httpx.ConnectError("refused"), httpx.Response(200, text="up"))
    policy, _ = fast_policy()
    with router.client() as client:
        assert get_text(client, URL, policy=policy) == "up"


def test_every_request_has_user_agent_and_explicit_timeout() -> None:
    router = Router().add(URL, httpx.Response(200, text="x"))
    policy, _ = fast_policy(timeout_s=7.0, connect_timeout_s=3.0)
    with httpx.Client(transport=httpx.MockTransport(router)) as client:  # no defaults set
        get_text(client, URL, policy=policy)
    sent = router.requests[0]
    assert sent.headers["User-Agent"].startswith("gacost/")
    assert sent.extensions["timeout"] == {"connect": 3.0, "read": 7.0, "write": 7.0, "pool": 7.0}


def test_plain_http_is_refused_before_sending() -> None:
    router = Router().add("http://api.example.test/prices", httpx.Response(200))
    policy, _ = fast_policy()
    with router.client() as client, pytest.raises(FetchError, match="non-HTTPS"):
        request(client, "GET", "http://api.example.test/prices", policy=policy)
    assert router.requests == []


def test_redirects_are_followed_only_to_https() -> None:
    good = Router()
    good.add(URL, httpx.Response(302, headers={"Location": "https://cdn.example.test/p.json"}))
    good.add("https://cdn.example.test/p.json", httpx.Response(200, json=[1]))
    policy, _ = fast_policy()
    with good.client() as client:
        assert get_json(client, URL, policy=policy) == [1]
    bad = Router().add(URL, httpx.Response(301, headers={"Location": "http://cdn.example.test/"}))
    with bad.client() as client, pytest.raises(FetchError, match="non-HTTPS"):
        request(client, "GET", URL, policy=policy)
    assert len(bad.requests) == 1


def test_malformed_json_is_a_fetch_error() -> None:
    router = Router().add(URL, httpx.Response(200, text='{"Items": [{"a": 1}'))
    policy, _ = fast_policy()
    with router.client() as client, pytest.raises(FetchError, match="not valid JSON"):
        get_json(client, URL, policy=policy)


def test_body_over_the_limit_is_refused() -> None:
    router = Router().add(URL, httpx.Response(200, content=b"x" * 2000))
    policy, _ = fast_policy(max_bytes=1000)
    with router.client() as client, pytest.raises(FetchError, match="too large|over 1000"):
        request(client, "GET", URL, policy=policy)


def test_make_client_defaults() -> None:
    with http.make_client() as client:
        assert client.headers["User-Agent"] == http.USER_AGENT
        assert client.timeout.read == 10.0 and client.follow_redirects is True
        assert client.max_redirects == http.MAX_REDIRECTS


# --- over a real loopback socket ---------------------------------------------------------


def test_loopback_timeout_is_retried_then_reported() -> None:
    release = threading.Event()
    with LoopbackServer({"/prices": stall(5.0, release)}) as server, server.client() as client:
        policy, sleeps = fast_policy(timeout_s=0.2, tries=2)
        try:
            with pytest.raises(FetchError, match="timed out.*after 2 tries"):
                get_json(client, URL, policy=policy)
        finally:
            release.set()
    assert sleeps == [0.5]


def test_loopback_truncated_body_is_reported() -> None:
    body = json_bytes({"Items": [1, 2, 3]})
    with LoopbackServer({"/prices": send_body(body[:10], declared=len(body))}) as server:
        policy, _ = fast_policy(tries=2)
        with server.client() as client, pytest.raises(FetchError, match="reading the body"):
            get_json(client, URL, policy=policy)


def test_loopback_success() -> None:
    with LoopbackServer({"/prices": send_body(json_bytes({"ok": True}))}) as server:
        policy, _ = fast_policy()
        with server.client() as client:
            assert get_json(client, URL, policy=policy) == {"ok": True}


def test_backoff_never_sleeps_past_the_deadline() -> None:
    clock = [0.0]
    deadline = http.Deadline(at=1.0, clock=lambda: clock[0])

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        clock[0] += seconds

    sleeps: list[float] = []
    router = Router().add(URL, httpx.Response(503, headers={"Retry-After": "20"}))
    policy = http.HttpPolicy(tries=5, sleep=sleep, deadline=deadline)
    with router.client() as client, pytest.raises(FetchError, match="deadline"):
        request(client, "GET", URL, policy=policy)
    assert sleeps == [1.0] and len(router.requests) == 1  # waited only what was left
