"""HTTP transport shared by the price fetchers: HTTPS only, deadlines, bounded retries.

Every request goes through :func:`request` or :func:`open_stream` with an injected
``httpx.Client``. Redirects are followed by httpx itself (at most three), which drops the
``Authorization`` header when a hop leaves the origin and turns a POST answered by 303
into a body-less GET; a request hook refuses every plain-HTTP hop, the first included.
Retries of 429/5xx and transport errors are tenacity's (exponential backoff, honouring
``Retry-After`` up to ``max_wait_s``). A :class:`Deadline` bounds the whole fetch: every
request's timeout is cut to the time left and the body is read chunk by chunk against
the clock, so a server that drips bytes cannot hold a source past it. Every failure
becomes one :class:`FetchError`.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timezone
from typing import Any, TypeVar

import httpx
import tenacity

from gacost import __version__
from gacost.base.clock import utc_now
from gacost.base.errors import PricingError

USER_AGENT = f"gacost/{__version__} (GPU rental price advisor; python-httpx)"
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_REDIRECTS = 3

T = TypeVar("T")


class FetchError(PricingError):
    """A price source could not be fetched; ``status`` is the HTTP status, if any."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Deadline:
    """A point on the monotonic clock after which no fetch may go on."""

    at: float
    clock: Callable[[], float] = time.monotonic

    @classmethod
    def after(cls, seconds: float, clock: Callable[[], float] = time.monotonic) -> Deadline:
        """The deadline ``seconds`` from now."""
        return cls(clock() + seconds, clock)

    def left(self) -> float:
        """Seconds left (negative once passed)."""
        return self.at - self.clock()

    def check(self, what: str) -> None:
        """Raise :class:`FetchError` once the deadline has passed."""
        if self.left() <= 0:
            raise FetchError(f"{what}: the refresh deadline passed; try again later")


@dataclass(frozen=True)
class HttpPolicy:
    """Timeouts (seconds), retry budget, body limit and deadline of every request."""

    timeout_s: float = 10.0
    connect_timeout_s: float = 5.0
    tries: int = 3
    backoff_s: float = 0.5
    max_wait_s: float = 30.0
    max_bytes: int = 64 * 2**20
    sleep: Callable[[float], None] = time.sleep
    deadline: Deadline | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.tries < 1 or self.timeout_s <= 0 or self.max_bytes <= 0:
            raise ValueError("HttpPolicy needs tries >= 1, timeout_s > 0 and max_bytes > 0")

    @property
    def timeout(self) -> httpx.Timeout:
        """The per-request timeout, cut to the time left before the deadline."""
        read, connect = self.timeout_s, self.connect_timeout_s
        if self.deadline is not None:
            left = max(self.deadline.left(), 0.001)
            read, connect = min(read, left), min(connect, left)
        return httpx.Timeout(read, connect=connect)

    def check(self, what: str) -> None:
        """Raise :class:`FetchError` when the deadline has passed."""
        if self.deadline is not None:
            self.deadline.check(what)


def make_client(policy: HttpPolicy | None = None, *, verify: Any = True) -> httpx.Client:
    """A client with gacost's User-Agent, timeouts, and httpx's own redirect handling."""
    policy = policy or HttpPolicy()
    return httpx.Client(
        timeout=policy.timeout,
        headers={"User-Agent": USER_AGENT},
        follow_redirects=True,
        max_redirects=MAX_REDIRECTS,
        event_hooks={"request": [require_https]},
        verify=verify,
    )


def require_https(request: httpx.Request) -> None:
    """Request hook: refuse a plain-HTTP request (a redirect hop included) before it is sent."""
    if request.url.scheme != "https":
        raise FetchError(f"{_short(str(request.url))}: refusing a non-HTTPS URL; use https://")


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
            return _read_bounded(response, policy)
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


def iter_lines(response: httpx.Response, policy: HttpPolicy | None = None) -> Iterator[str]:
    """The lines of a streamed body, checked against the deadline after each line."""
    what = _short(str(response.url))
    try:
        for line in response.iter_lines():
            if policy is not None:
                policy.check(what)
            yield line
    except httpx.HTTPError as exc:
        raise FetchError(
            f"{what}: {_describe(exc)} while streaming the body (truncated?); try again later"
        ) from None


# --- internals -----------------------------------------------------------------------


def _with_retries(attempt: Callable[[], T], policy: HttpPolicy, what: str) -> T:
    """Run ``attempt`` under tenacity; a last :class:`_Retry` becomes a :class:`FetchError`."""

    def worth_retrying(exc: BaseException) -> bool:
        if not isinstance(exc, _Retry):
            return False
        if exc.after is not None and exc.after > policy.max_wait_s:
            return False
        return policy.deadline is None or policy.deadline.left() > 0

    def wait(state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        after = exc.after if isinstance(exc, _Retry) else None
        seconds = _backoff(policy, state.attempt_number, after)
        if policy.deadline is not None:  # never sleep past the deadline
            seconds = min(seconds, max(policy.deadline.left(), 0.0))
        return seconds

    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(policy.tries),
        wait=wait,
        retry=tenacity.retry_if_exception(worth_retrying),
        sleep=policy.sleep,
        reraise=True,
    )
    policy.check(what)
    try:
        return retrying(attempt)
    except _Retry as exc:
        tries = retrying.statistics.get("attempt_number", 1)
        if exc.after is not None and exc.after > policy.max_wait_s:
            reason = f"{exc.reason}, and the server asks to wait {exc.after:.0f} s"
        elif tries < policy.tries:
            reason = f"{exc.reason}; no time left before the refresh deadline"
        else:
            reason = f"{exc.reason} after {tries} tries"
        raise FetchError(f"{what}: {reason}; try again later", exc.status) from None


def _backoff(policy: HttpPolicy, number: int, retry_after: float | None) -> float:
    """Wait before try ``number + 1``: exponential, at least ``Retry-After``, capped."""
    backoff = min(policy.backoff_s * 2.0 ** (number - 1), policy.max_wait_s)
    return backoff if retry_after is None else min(max(backoff, retry_after), policy.max_wait_s)


def _send(
    client: httpx.Client,
    method: str,
    url: str,
    policy: HttpPolicy,
    params: Mapping[str, str] | None,
    json_body: Any,
    headers: Mapping[str, str] | None,
) -> httpx.Response:
    """Send with the body unread; httpx follows redirects; classify failures."""
    _guard(client)
    policy.check(_short(url))
    target = httpx.URL(url, params=params) if params else httpx.URL(url)
    built = client.build_request(
        method,
        target,
        json=json_body,
        headers={"User-Agent": USER_AGENT, **(headers or {})},
        timeout=policy.timeout,
    )
    try:
        response = client.send(built, stream=True, follow_redirects=True)
    except httpx.TooManyRedirects:
        raise FetchError(f"{_short(url)}: more than {MAX_REDIRECTS} redirects") from None
    except httpx.TransportError as exc:
        raise _Retry(_describe(exc)) from None
    return _check_status(response)


def _guard(client: httpx.Client) -> None:
    """Give an injected client the HTTPS hook and the redirect limit of :func:`make_client`."""
    hooks = client.event_hooks
    if require_https not in hooks.get("request", []):
        client.event_hooks = {**hooks, "request": [require_https, *hooks.get("request", [])]}
    client.max_redirects = min(client.max_redirects, MAX_REDIRECTS)


def _check_status(response: httpx.Response) -> httpx.Response:
    status = response.status_code
    if status < 300:
        return response
    response.close()
    reason = f"HTTP {status} {response.reason_phrase}".rstrip()
    if status in RETRY_STATUSES:
        raise _Retry(reason, status, _retry_after(response.headers.get("Retry-After")))
    if 300 <= status < 400:
        reason += " (a redirect without a usable Location)"
    raise FetchError(f"{_short(str(response.request.url))}: {reason}", status)


def _read_bounded(response: httpx.Response, policy: HttpPolicy) -> bytes:
    what = _short(str(response.url))
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > policy.max_bytes:
        raise FetchError(f"{what}: body of {declared} bytes is too large")
    chunks, size = [], 0
    for chunk in response.iter_bytes():
        policy.check(what)
        size += len(chunk)
        if size > policy.max_bytes:
            raise FetchError(f"{what}: body over {policy.max_bytes} bytes")
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
    return max(0.0, (when - utc_now()).total_seconds())


def _describe(exc: httpx.HTTPError) -> str:
    kind = "timed out" if isinstance(exc, httpx.TimeoutException) else "network error"
    detail = str(exc) or type(exc).__name__
    return f"{kind} ({type(exc).__name__}: {detail})"


def _short(url: str) -> str:
    """``host/path`` of a URL, without the query (Azure filters are long)."""
    parsed = httpx.URL(url)
    return f"{parsed.host}{parsed.path}" if parsed.host else url
