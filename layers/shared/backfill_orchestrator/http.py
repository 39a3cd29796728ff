"""One way to talk HTTP: urllib3's connection pools with its retry policy (backoff on
connection errors, 429 and 5xx, honouring `Retry-After`) and a default timeout.

Every client of an outside service that is not AWS or Slack (Marquez, Airflow, PagerDuty) uses
this, so retry behaviour is the same everywhere and tested once. urllib3 itself, not `requests`
on top of it: botocore already brings it, so the client install reads Marquez with nothing
more, and a call costs about half the CPU (cookies, environment proxies and hooks are work
these clients never need; docs/performance.md, the trigger's figures).

Inside a `deadline_scope` (backfill_orchestrator.deadline) every call also draws on the
invocation's budget: connect and read timeouts are cut to the time left (at each attempt),
a retry wait (backoff or Retry-After) that would pass the deadline is not waited, and a call
made with no time left is not sent. All three raise `OutOfTimeError`, an `HttpTimeoutError`,
so callers that handle timeouts keep working and callers that care name the service."""

from __future__ import annotations

import json as jsonlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import urllib3
from urllib3.exceptions import HTTPError, MaxRetryError, NewConnectionError, ResponseError
from urllib3.exceptions import TimeoutError as Urllib3TimeoutError
from urllib3.util.retry import Retry
from urllib3.util.timeout import Timeout

from backfill_orchestrator.deadline import Deadline, current_deadline
from backfill_orchestrator.errors import ServiceError

RETRY_STATUSES = (429, 500, 502, 503, 504)
RETRY_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH"})  # POST: `retry_posts`
DEFAULT_TIMEOUT = (3.05, 10.0)  # (connect, read) seconds
POOL_SIZE = 10  # connections kept per host: the trigger's read-ahead and its own thread share a session
_SHORTEST_TIMEOUT = 0.01  # a socket timeout of 0 would mean non-blocking
_SHORTEST_ATTEMPT = 0.1  # with less left than this, another attempt is not worth sending
_DEFAULT_HEADERS = {"Accept-Encoding": "gzip, deflate", "User-Agent": "backfill-orchestrator"}


class HttpError(ServiceError):
    """A call that got no answer: the service is unreachable, too slow, or kept failing
    after the retries. The message says what happened without the request's body or headers."""


class HttpConnectionError(HttpError):
    """No connection, or it broke before an answer (refused, unresolvable, reset)."""


class HttpTimeoutError(HttpError):
    """Connecting or reading took longer than the call's timeout."""


class HttpRetriesExhaustedError(HttpError):
    """The service kept answering with errors (or redirects) through every retry."""


class OutOfTimeError(HttpTimeoutError):
    """The invocation's deadline came before an answer; `budget` is the seconds it allowed.
    A ServiceError (the next delivery has a new budget) and a timeout, so callers that handle
    timeouts handle it too."""

    def __init__(self, deadline: Deadline, doing: str):
        self.budget = deadline.budget
        self.doing = doing
        super().__init__(f"no answer within the {deadline.budget:.1f} s this invocation allowed ({doing})")


@dataclass(frozen=True)
class HttpResponse:
    """A whole answer: its status, reason, headers (case-insensitive) and body."""

    status_code: int
    reason: str
    headers: Mapping[str, str]
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The body as JSON; ValueError when it is not."""
        return jsonlib.loads(self.content)


class _DeadlineTimeout(Timeout):
    """urllib3 reads `connect_timeout`/`read_timeout` at every attempt (retries included),
    so computing them here keeps each attempt inside what is left of the deadline."""

    def __init__(self, *, connect: float | None, read: float | None, deadline: Deadline):
        super().__init__(connect=connect, read=read)
        self._deadline = deadline

    def clone(self) -> _DeadlineTimeout:
        return _DeadlineTimeout(connect=self._connect, read=self._read, deadline=self._deadline)  # type: ignore[arg-type]

    def _cut(self, value: Any) -> Any:
        left = max(self._deadline.remaining(), _SHORTEST_TIMEOUT)
        return left if not isinstance(value, int | float) else min(value, left)

    @property
    def connect_timeout(self) -> Any:
        return self._cut(super().connect_timeout)

    @property
    def read_timeout(self) -> Any:
        return self._cut(super().read_timeout)


class DeadlineRetry(Retry):
    """urllib3's Retry, except that a wait that would pass the current deadline raises."""

    def sleep(self, response: Any = None) -> None:
        deadline = current_deadline()
        if deadline is not None:
            wait = self.get_retry_after(response) if (self.respect_retry_after_header and response) else None
            wait = wait if wait else self.get_backoff_time()
            if wait + _SHORTEST_ATTEMPT >= deadline.remaining():
                raise OutOfTimeError(
                    deadline, f"a retry would wait {wait:.1f} s, with {deadline.remaining():.1f} s left"
                )
        super().sleep(response)


class HttpSession:
    """Calls to one service: pooled keep-alive connections, the retry policy, the timeout.
    Thread-safe. After the last retry of a retryable status the final response is returned
    (not raised), so callers can read the status and body and raise their own named error."""

    def __init__(
        self,
        *,
        retry: Retry,
        timeout: float | tuple[float, float],
        pool: urllib3.PoolManager | None = None,
    ):
        """`pool`: where requests go (tests pass a fake one); default, urllib3's pools."""
        self._connect, self._read = timeout if isinstance(timeout, tuple) else (timeout, timeout)
        self._retry = retry
        self._pool = pool or urllib3.PoolManager(num_pools=4, maxsize=POOL_SIZE)

    def close(self) -> None:
        """Close the pooled connections (a later call opens new ones)."""
        self._pool.clear()

    def get(
        self, url: str, *, params: Mapping[str, Any] | None = None, headers: Mapping[str, str] | None = None
    ) -> HttpResponse:
        return self.request("GET", url, params=params, headers=headers)

    def post(self, url: str, *, json: Any = None, headers: Mapping[str, str] | None = None) -> HttpResponse:
        return self.request("POST", url, json=json, headers=headers)

    def request(
        self,
        method: str,
        url: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        auth: tuple[str, str] | None = None,
    ) -> HttpResponse:
        """`json`: the body, encoded (not NaN: not JSON); `params`: the query (None values
        left out, a list repeats its key); `auth`: HTTP basic credentials."""
        sent = {**_DEFAULT_HEADERS, **(headers or {})}
        body = None
        if json is not None:
            body = jsonlib.dumps(json, allow_nan=False).encode()
            sent["Content-Type"] = "application/json"
        if auth is not None:
            sent.update(urllib3.make_headers(basic_auth=f"{auth[0]}:{auth[1]}"))
        query = urlencode({k: v for k, v in (params or {}).items() if v is not None}, doseq=True)
        if query:
            url = f"{url}{'&' if '?' in url else '?'}{query}"
        doing = f"{method} {url.split('?', 1)[0]}"
        deadline = current_deadline()
        timeout: Timeout = Timeout(connect=self._connect, read=self._read)
        if deadline is not None:
            if deadline.expired:
                raise OutOfTimeError(deadline, f"{doing} not sent")
            timeout = _DeadlineTimeout(connect=self._connect, read=self._read, deadline=deadline)
        try:
            answer = self._pool.request(
                method, url, body=body, headers=sent, timeout=timeout, retries=self._retry
            )
        except OutOfTimeError as error:  # raised by DeadlineRetry rather than waiting
            if deadline is None:
                raise
            raise OutOfTimeError(deadline, f"{doing}: {error.doing}") from None
        except HTTPError as error:
            if deadline is not None and deadline.remaining() < _SHORTEST_ATTEMPT:
                raise OutOfTimeError(deadline, doing) from None  # the last attempt ran out of the time left
            raise _named(error) from None
        return HttpResponse(answer.status, answer.reason or "", answer.headers, answer.data)


def _named(error: HTTPError) -> HttpError:
    """urllib3's failure (after its retries) as one of ours, with what happened in words."""
    cause = error.reason if isinstance(error, MaxRetryError) and error.reason is not None else error
    if isinstance(cause, ResponseError):
        return HttpRetriesExhaustedError(f"still failing after retries: {_text(cause)}")
    if isinstance(cause, NewConnectionError):  # a ConnectTimeoutError too, for urllib3's own history
        return HttpConnectionError(_text(cause).removeprefix("Failed to establish a new connection: "))
    if isinstance(cause, Urllib3TimeoutError):
        return HttpTimeoutError(_text(cause))
    return HttpConnectionError(_text(cause))


# urllib3's messages start with the pool or connection object ("HTTPConnectionPool(host=..,
# port=..): ", "HTTPConnection(host=.., port=..): "): the caller names the service already.
_OBJECT_PREFIX = re.compile(r"^(?:\w+\(host=[^)]*\)|<[^>]+>): ")


def _text(error: BaseException) -> str:
    last = error.args[-1] if error.args else None
    text = last if isinstance(last, str) else str(error)
    return _OBJECT_PREFIX.sub("", text)[:300] or type(error).__name__


def retrying_session(
    *,
    retries: int = 4,
    backoff_factor: float = 0.5,
    backoff_max: float = 20.0,
    timeout: float | tuple[float, float] = DEFAULT_TIMEOUT,
    statuses: tuple[int, ...] = RETRY_STATUSES,
    retry_posts: bool = True,
) -> HttpSession:
    """A session that retries `retries` times with exponential backoff (0.5 s, 1 s, 2 s, ...)."""
    policy = DeadlineRetry(
        total=retries,  # bounds every kind of retry: connection errors, reads and statuses alike
        backoff_factor=backoff_factor,
        backoff_max=backoff_max,
        status_forcelist=statuses,
        allowed_methods=RETRY_METHODS | ({"POST"} if retry_posts else set()),
        respect_retry_after_header=True,
        raise_on_status=False,
    )
    return HttpSession(retry=policy, timeout=timeout)
