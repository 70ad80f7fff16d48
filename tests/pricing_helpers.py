"""Helpers for the price-fetch tests: mock routes, a loopback HTTP server, instant retries.

Nothing here reaches the network: :class:`Router` answers through ``httpx.MockTransport``
and :class:`LoopbackServer` listens on 127.0.0.1 only; :class:`LoopbackTransport` sends the
fetchers' real ``https://`` requests to it as plain HTTP over a real socket.
"""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import trustme

from gacost.pricing.fetch.fetcher import FetchContext, Fetcher, FetchResult
from gacost.pricing.fetch.http import HttpPolicy, make_client

FIXTURES = Path(__file__).parent / "fixtures" / "pricing"
HTTP_FIXTURES = FIXTURES / "http"
NOW = datetime(2026, 12, 2, 12, 0, tzinfo=timezone.utc)
PRICE_ENV_VARS = (
    "GACOST_CACHE_DIR", "GACOST_PRICE_MAX_AGE", "GACOST_AZURE_REGIONS", "GACOST_AWS_REGIONS",
    "GACOST_SKYPILOT_CATALOG_URL", "XDG_CACHE_HOME", "GACOST_OCI_URL",
    "GACOST_PRICE_DATE_MAX_AGE",
)  # fmt: skip

Reply = httpx.Response | Exception | Callable[[httpx.Request], httpx.Response]


def isolate(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Point the price cache at ``tmp_path/cache`` and clear every pricing variable."""
    for var in PRICE_ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    cache = tmp_path / "cache"
    monkeypatch.setenv("GACOST_CACHE_DIR", str(cache))
    return cache


class Sleeps(list[float]):
    """A ``sleep`` that records the waits instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def fast_policy(**overrides: Any) -> tuple[HttpPolicy, Sleeps]:
    """A policy whose sleeps are recorded, not slept."""
    sleeps = Sleeps()
    return HttpPolicy(sleep=sleeps, **overrides), sleeps


def context(env: dict[str, str] | None = None, **policy: Any) -> tuple[FetchContext, Sleeps]:
    """A fetch context at :data:`NOW` with an instant policy."""
    pol, sleeps = fast_policy(**policy)
    return FetchContext(now=NOW, env=env or {}, policy=pol), sleeps


def fetch_with(fetcher: Fetcher, router: Router, env: dict[str, str] | None = None
               ) -> FetchResult:
    """``fetcher`` run once against ``router`` with :func:`context`'s instant policy."""
    ctx, _ = context(env)
    with router.client() as client:
        return fetcher(client, ctx)


def fixture_text(name: str) -> str:
    """A file of ``tests/fixtures/pricing/http``."""
    return (HTTP_FIXTURES / name).read_text(encoding="utf-8")


def catalog_text(cloud: str) -> str:
    """A real trimmed SkyPilot catalog of ``tests/fixtures/pricing``."""
    return (FIXTURES / f"skypilot_{cloud}" / "vms_v8_gpu_sample.csv").read_text(encoding="utf-8")


def full_catalog_text(cloud: str) -> str:
    """Every GPU row of one cloud's SkyPilot v8 catalog (``fixtures/pricing/full``), with
    GCP's host rows appended, as the snapshot builder reads them."""
    from gacost.pricing.build_snapshot import read_catalog

    return read_catalog(FIXTURES / "full" / cloud / "vms.csv")


def json_reply(name_or_data: str | object, status: int = 200) -> httpx.Response:
    """A JSON response from a fixture file name or from data."""
    if isinstance(name_or_data, str):
        return httpx.Response(status, text=fixture_text(name_or_data),
                              headers={"Content-Type": "application/json"})  # fmt: skip
    return httpx.Response(status, json=name_or_data)


class Router:
    """A MockTransport handler: ``host/path`` -> replies in order (the last one repeats)."""

    def __init__(self) -> None:
        self.routes: dict[str, list[Reply]] = {}
        self.requests: list[httpx.Request] = []
        self.default: Exception | None = None  # raised for an unrouted URL instead of a 404

    def add(self, url: str, *replies: Reply) -> Router:
        """Answer requests to ``url`` (query ignored) with ``replies``."""
        parsed = httpx.URL(url)
        self.routes[f"{parsed.host}{parsed.path}"] = list(replies)
        return self

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        queue = self.routes.get(f"{request.url.host}{request.url.path}")
        if not queue and self.default is not None:
            raise self.default
        if not queue:
            return httpx.Response(404, text="no route")
        reply = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, httpx.Response):
            return httpx.Response(reply.status_code, headers=reply.headers, content=reply.content)
        return reply(request)

    def client(self) -> httpx.Client:
        """A client answered by this router."""
        return httpx.Client(transport=httpx.MockTransport(self))

    def hits(self, host: str) -> list[httpx.Request]:
        """The requests sent to ``host``."""
        return [r for r in self.requests if r.url.host == host]


# --- a real socket on 127.0.0.1 --------------------------------------------------------

Behaviour = Callable[[BaseHTTPRequestHandler], None]


class LoopbackServer:
    """A threaded HTTP server on 127.0.0.1; ``routes`` maps a path to a behaviour."""

    def __init__(self, routes: dict[str, Behaviour]) -> None:
        routes_ = routes

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                behaviour = routes_.get(self.path.split("?")[0])
                if behaviour is None:
                    self.send_error(404)
                else:
                    behaviour(self)

            do_POST = do_GET

            def log_message(self, *args: object) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> LoopbackServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def client(self) -> httpx.Client:
        """A client whose requests, whatever their URL, go to this server."""
        return httpx.Client(transport=LoopbackTransport(self.port))


class LoopbackTransport(httpx.BaseTransport):
    """Send every request to 127.0.0.1:port over plain HTTP (the test server)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.inner = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.url = request.url.copy_with(scheme="http", host="127.0.0.1", port=self.port)
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


def send_body(body: bytes, *, status: int = 200, declared: int | None = None) -> Behaviour:
    """Reply with ``body``; a ``declared`` length above it makes a truncated body."""

    def behaviour(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(status)
        handler.send_header("Content-Length", str(declared if declared is not None else len(body)))
        handler.end_headers()
        handler.wfile.write(body)
        handler.wfile.flush()
        handler.close_connection = True

    return behaviour


def stall(seconds: float, event: threading.Event) -> Behaviour:
    """Send headers, then hang for ``seconds`` (or until ``event``) before the body."""

    def behaviour(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", "2")
        handler.end_headers()
        handler.wfile.flush()
        event.wait(seconds)
        try:
            handler.wfile.write(b"{}")
        except OSError:
            pass

    return behaviour


def json_bytes(data: object) -> bytes:
    """``data`` as UTF-8 JSON."""
    return json.dumps(data).encode("utf-8")


def forbid_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail any attempt to open a real connection (a guard for CLI tests)."""

    def refuse(self: httpx.HTTPTransport, request: httpx.Request) -> httpx.Response:
        raise AssertionError(f"network access attempted: {request.url}")

    monkeypatch.setattr(httpx.HTTPTransport, "handle_request", refuse)


# --- real HTTPS on 127.0.0.1 (trustme's throwaway CA) -----------------------------------


@dataclass
class Seen:
    """One request a :class:`TlsServer` received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class TlsServer:
    """An HTTPS server on 127.0.0.1 with a certificate from ``ca``; it records every request.

    ``routes`` maps a path to a behaviour (``handler`` -> None). Two servers are two
    origins (their ports differ), so cross-origin redirects are real.
    """

    def __init__(self, ca: trustme.CA, routes: dict[str, Behaviour]) -> None:
        self.seen: list[Seen] = []
        seen, routes_ = self.seen, routes

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                seen.append(Seen(self.command, self.path, dict(self.headers.items()), body))
                behaviour = routes_.get(self.path.split("?")[0])
                if behaviour is None:
                    self.send_error(404)
                else:
                    behaviour(self)

            do_GET = do_POST = _any  # noqa: N815 - http.server's naming

            def log_message(self, *args: object) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.url = f"https://127.0.0.1:{self.port}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> TlsServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def client_trusting(ca: trustme.CA, policy: HttpPolicy | None = None) -> httpx.Client:
    """gacost's own client (:func:`make_client`), trusting only ``ca``."""
    context = ssl.create_default_context()
    ca.configure_trust(context)
    return make_client(policy, verify=context)


def redirect_to(location: str, status: int = 302) -> Behaviour:
    """Answer with a redirect to ``location``."""

    def behaviour(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(status)
        handler.send_header("Location", location)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    return behaviour


def drip(byte_every_s: float, total: int, stop: threading.Event) -> Behaviour:
    """Promise ``total`` bytes, then send one every ``byte_every_s`` until ``stop``."""

    def behaviour(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", str(total))
        handler.end_headers()
        for _ in range(total):
            if stop.wait(byte_every_s):
                return
            try:
                handler.wfile.write(b" ")
                handler.wfile.flush()
            except OSError:
                return

    return behaviour
