"""One way to talk HTTP: a `requests` session with urllib3's retry policy (backoff on
connection errors, 429 and 5xx, honouring `Retry-After`) and a default timeout.

Every client of an outside service (Marquez, Airflow, Slack, PagerDuty) uses this, so
retry behaviour is the same everywhere and tested once."""

from __future__ import annotations

from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

RETRY_STATUSES = (429, 500, 502, 503, 504)
DEFAULT_TIMEOUT = (3.05, 10.0)  # (connect, read) seconds


class _TimeoutAdapter(HTTPAdapter):
    def __init__(self, *args: Any, timeout: float | tuple[float, float], **kwargs: Any):
        self._timeout = timeout
        super().__init__(*args, **kwargs)

    def send(self, request, **kwargs):  # noqa: ANN001 - requests' signature
        if kwargs.get("timeout") is None:
            kwargs["timeout"] = self._timeout
        return super().send(request, **kwargs)


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
    methods = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH"} | ({"POST"} if retry_posts else set()))
    policy = Retry(
        total=retries,
        connect=retries,
        read=retries,
        status=retries,
        backoff_factor=backoff_factor,
        backoff_max=backoff_max,
        status_forcelist=statuses,
        allowed_methods=methods,
        respect_retry_after_header=True,
        raise_on_status=False,
    )
    session = requests.Session()
    adapter = _TimeoutAdapter(max_retries=policy, timeout=timeout)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session
