"""One way to talk HTTP: a `requests` session with urllib3's retry policy (backoff on
connection errors, 429 and 5xx, honouring `Retry-After`) and a default timeout.

Every client of an outside service (Marquez, Airflow, Slack, PagerDuty) uses this, so
retry behaviour is the same everywhere and tested once.

Inside a `deadline_scope` (backfill_orchestrator.deadline) every call also draws on the
invocation's budget: connect and read timeouts are cut to the time left (at each attempt),
a retry wait (backoff or Retry-After) that would pass the deadline is not waited, and a call
made with no time left is not sent. All three raise `OutOfTimeError`, a `Timeout`, so
callers that handle timeouts keep working and callers that care name the service."""

from __future__ import annotations

from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry
from urllib3.util.timeout import Timeout

from backfill_orchestrator.deadline import Deadline, current_deadline
from backfill_orchestrator.errors import ServiceError

RETRY_STATUSES = (429, 500, 502, 503, 504)
RETRY_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH"})  # POST: `retry_posts`
DEFAULT_TIMEOUT = (3.05, 10.0)  # (connect, read) seconds
_SHORTEST_TIMEOUT = 0.01  # a socket timeout of 0 would mean non-blocking
_SHORTEST_ATTEMPT = 0.1  # with less left than this, another attempt is not worth sending


class OutOfTimeError(ServiceError, requests.exceptions.Timeout):
    """The invocation's deadline came before an answer; `budget` is the seconds it allowed.
    A ServiceError (the next delivery has a new budget) that stays a requests `Timeout`, so
    callers that handle requests' timeouts handle it too."""

    def __init__(self, deadline: Deadline, doing: str):
        self.budget = deadline.budget
        self.doing = doing
        super().__init__(f"no answer within the {deadline.budget:.1f} s this invocation allowed ({doing})")


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


class _TimeoutAdapter(HTTPAdapter):
    def __init__(self, *args: Any, timeout: float | tuple[float, float], **kwargs: Any):
        self._timeout = timeout
        super().__init__(*args, **kwargs)

    def send(self, request: Any, **kwargs: Any) -> Any:  # type: ignore[override]  # requests' own signature, passed on whole
        if kwargs.get("timeout") is None:
            kwargs["timeout"] = self._timeout
        deadline = current_deadline()
        if deadline is None:
            return super().send(request, **kwargs)
        doing = f"{request.method} {request.url.split('?', 1)[0]}"
        if deadline.expired:
            raise OutOfTimeError(deadline, f"{doing} not sent")
        timeout = kwargs["timeout"]
        connect, read = timeout if isinstance(timeout, tuple) else (timeout, timeout)
        kwargs["timeout"] = _DeadlineTimeout(connect=connect, read=read, deadline=deadline)
        try:
            return super().send(request, **kwargs)
        except OutOfTimeError:
            raise
        except requests.RequestException as error:
            inner = error.args[0] if error.args else None
            if isinstance(inner, OutOfTimeError):  # raised by DeadlineRetry, wrapped by requests
                raise OutOfTimeError(deadline, f"{doing}: {inner.doing}") from None
            if (
                deadline.remaining() < _SHORTEST_ATTEMPT
            ):  # the last attempt ran out of the time the deadline left it
                raise OutOfTimeError(deadline, doing) from None
            raise


def retrying_session(
    *,
    retries: int = 4,
    backoff_factor: float = 0.5,
    backoff_max: float = 20.0,
    timeout: float | tuple[float, float] = DEFAULT_TIMEOUT,
    statuses: tuple[int, ...] = RETRY_STATUSES,
    retry_posts: bool = True,
) -> requests.Session:
    """A session that retries `retries` times with exponential backoff (0.5 s, 1 s, 2 s, ...).

    After the last retry of a retryable status, the final response is returned (not raised),
    so callers can read the status and body and raise their own named error."""
    policy = DeadlineRetry(
        total=retries,  # bounds every kind of retry: connection errors, reads and statuses alike
        backoff_factor=backoff_factor,
        backoff_max=backoff_max,
        status_forcelist=statuses,
        allowed_methods=RETRY_METHODS | ({"POST"} if retry_posts else set()),
        respect_retry_after_header=True,
        raise_on_status=False,
    )
    session = requests.Session()
    adapter = _TimeoutAdapter(max_retries=policy, timeout=timeout)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session
