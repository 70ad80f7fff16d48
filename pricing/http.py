"""HTTP transport shared by the price fetchers: HTTPS only, timeouts, bounded retries.

Every request goes through :func:`request` or :func:`open_stream` with an injected
``httpx.Client``. They set a User-Agent and an explicit timeout on each request, refuse
plain-HTTP URLs (redirects included), retry 429/5xx and transport errors with exponential
backoff (honouring ``Retry-After``), and turn every failure into one :class:`FetchError`.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, TypeVar

import httpx

from gacost import __version__
from gacost.base.errors import PricingError

USER_AGENT = f"gacost/{__version__} (GPU rental price advisor; python-httpx)"
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_MAX_REDIRECTS = 3

T = TypeVar("T")


class FetchError(PricingError):
    """A price source could not be fetched; ``status`` is the HTTP status, if any."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class HttpPolicy:
    """Timeouts (seconds), retry budget and body limit of every request."""

    timeout_s: float = 10.0
    connect_timeout_s: float = 5.0
    tries: int = 3
    backoff_s: float = 0.5
    max_wait_s: float = 30.0
    max_bytes: int = 64 * 2**20
    sleep: Callable[[float], None] = time.sleep

    def __post_init__(self) -> None:
        if self.tries < 1 or self.timeout_s <= 0 or self.max_bytes <= 0:
            raise ValueError("HttpPolicy needs tries >= 1, timeout_s > 0 and max_bytes > 0")

    @property
    def timeout(self) -> httpx.Timeout:
        """The per-request timeout."""
        return httpx.Timeout(self.timeout_s, connect=self.connect_timeout_s)


def make_client(policy: HttpPolicy | None = None) -> httpx.Client:
    """A client with gacost's User-Agent and timeouts; redirects are followed by hand."""
    policy = policy or HttpPolicy()
    return httpx.Client(
        timeout=policy.timeout, headers={"User-Agent": USER_AGENT}, follow_redirects=False
    )


class _Retry(Exception):
    """A failure worth another try (429, 5xx, timeout, connection error)."""

    def __init__(self, reason: str, status: int | None = None, after: float | None = None):
        super().__init__(reason)
        self.reason, self.status, self.after = reason, status, after


def request(
    client: httpx.Client,
    method: str,
    url: str,
    *,
    policy: HttpPolicy,
    params: Mapping[str, str] | None = None,
    json_body: Any = None,
    headers: Mapping[str, str] | None = None,
) -> bytes:
    """Send a request and return the whole body (at most ``policy.max_bytes``), with retries."""

    def attempt() -> bytes:
        response = _send(client, method, url, policy, params, json_body, headers)
        try:
            return _read_bounded(response, policy.max_bytes)
        except httpx.TransportError as exc:
            raise _Retry(f"{_describe(exc)} while reading the body") from None
        finally:
            response.close()

    return _with_retries(attempt, policy, _short(url))


def get_json(
    client: httpx.Client,
    url: str,
    *,
    policy: HttpPolicy,
    method: str = "GET",
    params: Mapping[str, str] | None = None,
    json_body: Any = None,
    headers: Mapping[str, str] | None = None,
) -> object:
    """The decoded JSON body; a truncated or malformed body raises :class:`FetchError`."""
    body = request(
        client, method, url, policy=policy, params=params, json_body=json_body, headers=headers
    )
    try:
        return json.loads(body)
    except ValueError as exc:
        raise FetchError(
            f"{_short(url)}: the body is not valid JSON ({exc}; truncated or malformed?)"
        ) from None


def get_text(client: httpx.Client, url: str, *, policy: HttpPolicy) -> str:
    """The body of a GET as UTF-8 text."""
    body = request(client, "GET", url, policy=policy)
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FetchError(f"{_short(url)}: the body is not UTF-8 text ({exc})") from None


@contextmanager
def open_stream(client: httpx.Client, url: str, *, policy: HttpPolicy) -> Iterator[httpx.Response]:
    """A GET whose body is left unread for streaming; retries cover only the status."""
    response = _with_retries(
        lambda: _send(client, "GET", url, policy, None, None, None), policy, _short(url)
    )
    try:
        yield response
    finally:
        response.close()


def iter_lines(response: httpx.Response) -> Iterator[str]:
    """The lines of a streamed body; a broken connection raises :class:`FetchError`."""
    try:
        yield from response.iter_lines()
    except httpx.HTTPError as exc:
        raise FetchError(
            f"{_short(str(response.url))}: {_describe(exc)} while streaming the body "
            "(truncated?); try again later"
        ) from None


# --- internals -----------------------------------------------------------------------


def _with_retries(attempt: Callable[[], T], policy: HttpPolicy, what: str) -> T:
    for number in range(1, policy.tries + 1):
        try:
            return attempt()
        except _Retry as exc:
            if number == policy.tries:
                raise FetchError(
                    f"{what}: {exc.reason} after {policy.tries} tries; try again later",
                    exc.status,
                ) from None
            wait = _wait_seconds(policy, number, exc.after)
            if wait is None:
                raise FetchError(
                    f"{what}: {exc.reason}, and the server asks to wait {exc.after:.0f} s; "
                    "try again later",
                    exc.status,
                ) from None
            policy.sleep(wait)
    raise AssertionError("unreachable: HttpPolicy.tries >= 1")


def _wait_seconds(policy: HttpPolicy, number: int, retry_after: float | None) -> float | None:
    """Backoff before try ``number + 1``; None when Retry-After exceeds ``max_wait_s``."""
    backoff = min(policy.backoff_s * 2.0 ** (number - 1), policy.max_wait_s)
    if retry_after is None:
        return backoff
    if retry_after > policy.max_wait_s:
        return None
    return max(backoff, retry_after)


def _send(
    client: httpx.Client,
    method: str,
    url: str,
    policy: HttpPolicy,
    params: Mapping[str, str] | None,
    json_body: Any,
    headers: Mapping[str, str] | None,
) -> httpx.Response:
    """Send with the body unread; follow up to three HTTPS redirects; classify failures."""
    target = httpx.URL(url, params=params) if params else httpx.URL(url)
    for _ in range(_MAX_REDIRECTS + 1):
        _require_https(target)
        built = client.build_request(
            method,
            target,
            json=json_body,
            headers={"User-Agent": USER_AGENT, **(headers or {})},
            timeout=policy.timeout,
        )
        try:
            response = client.send(built, stream=True, follow_redirects=False)
        except httpx.TransportError as exc:
            raise _Retry(_describe(exc)) from None
        if response.status_code not in _REDIRECT_STATUSES:
            return _check_status(response)
        response.close()
        location = response.headers.get("Location")
        if not location:
            raise FetchError(f"{_short(str(target))}: redirect without a Location header")
        target = target.join(location)
    raise FetchError(f"{_short(url)}: more than {_MAX_REDIRECTS} redirects")


def _check_status(response: httpx.Response) -> httpx.Response:
    status = response.status_code
    if status < 400:
        return response
    response.close()
    reason = f"HTTP {status} {response.reason_phrase}".rstrip()
    if status in RETRY_STATUSES:
        raise _Retry(reason, status, _retry_after(response.headers.get("Retry-After")))
    raise FetchError(f"{_short(str(response.request.url))}: {reason}", status)


def _require_https(url: httpx.URL) -> None:
    if url.scheme != "https":
        raise FetchError(f"{_short(str(url))}: refusing a non-HTTPS URL; use https://")


def _read_bounded(response: httpx.Response, max_bytes: int) -> bytes:
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise FetchError(f"{_short(str(response.url))}: body of {declared} bytes is too large")
    chunks, size = [], 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise FetchError(f"{_short(str(response.url))}: body over {max_bytes} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def _describe(exc: httpx.HTTPError) -> str:
    kind = "timed out" if isinstance(exc, httpx.TimeoutException) else "network error"
    detail = str(exc) or type(exc).__name__
    return f"{kind} ({type(exc).__name__}: {detail})"


def _short(url: str) -> str:
    """``host/path`` of a URL, without the query (Azure filters are long)."""
    parsed = httpx.URL(url)
    return f"{parsed.host}{parsed.path}" if parsed.host else url
