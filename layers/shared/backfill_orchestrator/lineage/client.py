"""Marquez lineage client: `GET {base}/api/v1/lineage?nodeId=job:<ns>:<name>&depth=<n>`, a
job's runs, `GET {base}/api/v1/namespaces/<ns>/jobs/<name>/runs?limit=&offset=` (lineage/runs.py),
and a namespace's job names, `GET {base}/api/v1/namespaces/<ns>/jobs` (for "did you mean").

Retries (connection errors, 429, 5xx, honouring Retry-After) and timeouts come from the
shared `retrying_session`; this module turns each outcome into a lineage graph or one named
error."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from urllib.parse import quote, urlsplit

from backfill_orchestrator.config.model import JobRef
from backfill_orchestrator.http import (
    HttpConnectionError,
    HttpError,
    HttpResponse,
    HttpSession,
    HttpTimeoutError,
    OutOfTimeError,
    retrying_session,
)
from backfill_orchestrator.lineage.errors import (
    InvalidMarquezUrlError,
    MarquezResponseError,
    MarquezTimeoutError,
    MarquezUnavailableError,
    UnknownJobError,
)
from backfill_orchestrator.lineage.gcpause import paused_gc
from backfill_orchestrator.lineage.graph import (
    LineageGraph,
    MalformedLineageError,
    parse_lineage_response,
)
from backfill_orchestrator.lineage.runs import (
    MAX_PAGE_SIZE,
    MalformedRunsError,
    RunPage,
    parse_runs_response,
    upstream_producers,
)
from backfill_orchestrator.lineage.source import API_KEY_ENV, URL_ENV, lookup_node_id

log = logging.getLogger(__name__)

LINEAGE_PATH = "/api/v1/lineage"
JOBS_PAGE = 100  # Marquez's default page of `GET /namespaces/<ns>/jobs`
MAX_LISTED_JOBS = 1000  # names read for a suggestion: enough for a namespace people type by hand
NAMESPACES_PATH = "/api/v1/namespaces/"
# Marquez (Dropwizard) answers an unknown *path* with this message; an unknown node has another.
_PATH_NOT_FOUND = "HTTP 404 Not Found"


def _check_base_url(base_url: str) -> str:
    parts = urlsplit(base_url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InvalidMarquezUrlError(f"Marquez URL must be http(s)://host[:port][/path], got {base_url!r}")
    return base_url.strip().rstrip("/")


class MarquezClient:
    """Implements `LineageSource` against a Marquez server."""

    def __init__(self, base_url: str, *, api_key: str | None = None, session: HttpSession | None = None):
        self.base_url = _check_base_url(base_url)
        self._session = session or retrying_session()
        self._headers = {"Accept": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"

    @classmethod
    def from_env(
        cls, *, base_url: str | None = None, environ: Mapping[str, str] = os.environ
    ) -> MarquezClient:
        """`base_url` or $MARQUEZ_URL; the API key from $MARQUEZ_API_KEY. InvalidMarquezUrlError if neither URL."""
        url = base_url or environ.get(URL_ENV, "")
        if not url:
            raise InvalidMarquezUrlError(f"no Marquez URL: pass one or set {URL_ENV}")
        return cls(url, api_key=environ.get(API_KEY_ENV) or None)

    def lineage(self, job: JobRef, *, depth: int) -> LineageGraph:
        params = {"nodeId": lookup_node_id(job), "depth": str(depth)}
        payload = self._get_json(LINEAGE_PATH, params, job=job, what="lineage")
        try:
            return parse_lineage_response(payload, start=job.key, depth=depth)
        except MalformedLineageError as error:
            raise MarquezResponseError(self.base_url, f"malformed lineage graph: {error}") from None

    def job_runs(self, job: JobRef, *, limit: int, offset: int) -> RunPage:
        """`GET /api/v1/namespaces/{ns}/jobs/{job}/runs`: one page, newest first (`RunHistory`)."""
        if not 1 <= limit <= MAX_PAGE_SIZE or offset < 0:
            raise ValueError(f"limit must be 1..{MAX_PAGE_SIZE} and offset >= 0, got {limit}, {offset}")
        path = f"{NAMESPACES_PATH}{quote(job.namespace, safe='')}/jobs/{quote(job.name, safe='')}/runs"
        payload = self._get_json(path, {"limit": str(limit), "offset": str(offset)}, job=job, what="runs")
        try:
            return parse_runs_response(payload)
        except MalformedRunsError as error:
            raise MarquezResponseError(self.base_url, f"malformed run list: {error}") from None

    def job_names(self, namespace: str, *, limit: int = MAX_LISTED_JOBS) -> list[str]:
        """The names of up to `limit` jobs of `namespace` (`GET /api/v1/namespaces/<ns>/jobs`,
        a page of 100 at a time), for "did you mean" (`JobDirectory`); none for an unknown one."""
        path = f"{NAMESPACES_PATH}{quote(namespace, safe='')}/jobs"
        asking = JobRef(namespace=namespace, name="*")
        names: list[str] = []
        while len(names) < limit:
            params = {"limit": str(min(JOBS_PAGE, limit - len(names))), "offset": str(len(names))}
            try:
                payload = self._get_json(path, params, job=asking, what="job list")
            except UnknownJobError:  # no such namespace
                return names
            jobs = payload.get("jobs") if isinstance(payload, dict) else None
            if not isinstance(jobs, list):
                raise MarquezResponseError(self.base_url, "malformed job list: no `jobs` list")
            names += [
                job["name"] for job in jobs if isinstance(job, dict) and isinstance(job.get("name"), str)
            ]
            if len(jobs) < int(params["limit"]):
                return names
        return names

    def producers(self, job: JobRef) -> list[JobRef]:
        """The jobs writing what `job` reads: its lineage one hop deep (`RunHistory`)."""
        payload = self._get_json(
            LINEAGE_PATH, {"nodeId": lookup_node_id(job), "depth": "1"}, job=job, what="lineage"
        )
        try:
            return upstream_producers(payload, job)
        except MalformedRunsError as error:
            raise MarquezResponseError(self.base_url, f"malformed lineage graph: {error}") from None

    def _get_json(self, path: str, params: dict[str, str], *, job: JobRef, what: str) -> object:
        """GET a JSON answer about `job`, each failure turned into one named error."""
        url = self.base_url + path
        log.debug("GET %s %s", url, params)
        try:
            response = self._session.get(url, params=params, headers=self._headers)
        except OutOfTimeError as error:
            raise MarquezTimeoutError(self.base_url, error.budget, error.doing) from None
        except (HttpConnectionError, HttpTimeoutError) as error:
            raise MarquezUnavailableError(self.base_url, f"cannot connect ({error})") from None
        except HttpError as error:
            raise MarquezUnavailableError(self.base_url, str(error)) from None

        status = response.status_code
        if status == 404:
            if _message(response) in (None, _PATH_NOT_FOUND):
                raise MarquezResponseError(
                    self.base_url, f"404 for {path}: is this the Marquez API's base URL?"
                )
            raise UnknownJobError([job])
        if status == 429 or status >= 500:
            raise MarquezUnavailableError(self.base_url, f"answered {status} after retries")
        if status in (401, 403):
            raise MarquezResponseError(
                self.base_url, f"{status} {response.reason}: check the API key (${API_KEY_ENV})"
            )
        if status != 200:
            raise MarquezResponseError(self.base_url, f"{status} {response.reason}: {response.text[:200]}")
        try:
            with paused_gc():  # a large answer is hundreds of thousands of dicts: see gcpause
                return response.json()
        except ValueError:
            raise MarquezResponseError(self.base_url, f"the {what} response is not JSON") from None


def _message(response: HttpResponse) -> str | None:
    """The `message` of a Marquez JSON error body, or None when the body is not one."""
    try:
        body = response.json()
    except ValueError:
        return None
    message = body.get("message") if isinstance(body, dict) else None
    return message if isinstance(message, str) else None
