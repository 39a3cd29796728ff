"""What every way of reaching Airflow shares: the trigger body, the 409 rule, the errors.

Implementations (REST, MWAA) only say how one request travels: `_request(call)` returns
(HTTP status, decoded JSON) for any answer from Airflow and raises AirflowUnavailableError
when none arrived after retries."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal
from urllib.parse import quote

from backfill_orchestrator._compat import UTC
from backfill_orchestrator.errors import ServiceError

ApiVersion = Literal["v2", "v1"]


class AirflowApiError(ServiceError, RuntimeError):
    """Any failure to get what we asked from Airflow. `status` is Airflow's HTTP status when
    it answered."""

    def __init__(self, message: str, *, status: int | None = None):
        self.status = status
        super().__init__(message)


class AirflowUnavailableError(AirflowApiError):
    """No usable answer after retries: connection errors, timeouts, 429 and 5xx."""


class AirflowTimeoutError(AirflowUnavailableError):
    """The invocation's time budget ran out before Airflow answered (slow rather than down)."""

    def __init__(self, where: str, budget: float):
        self.budget = budget
        super().__init__(
            f"Airflow did not answer within {budget:.1f} s, the time this attempt allowed ({where})"
        )


class AirflowAuthError(AirflowApiError):
    """401/403: the credentials (or the IAM role, for MWAA) are not accepted."""


class DagNotFoundError(AirflowApiError):
    """404 on trigger: the DAG does not exist (or is not parsed yet) in this Airflow."""


class AirflowRequestError(AirflowApiError):
    """Airflow refused the request itself (400/422: import errors, params, body shape;
    MWAA's ValidationException)."""


class DagRunCollisionError(AirflowApiError):
    """409 and the run id does not exist, or exists with another backfill's conf: a real
    collision, not a retried trigger."""


@dataclass(frozen=True)
class ApiCall:
    """One request to Airflow's REST API. `path` leaves the version prefix out
    (`/dags/x/dagRuns`), as MWAA wants it."""

    method: str
    path: str
    body: dict[str, Any] | None = None
    query: Mapping[str, Any] | None = None

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


@dataclass(frozen=True)
class DagRun:
    dag_id: str
    run_id: str
    state: str | None
    conf: dict[str, Any] = field(default_factory=dict)
    end_date: datetime | None = None  # when it ended (success, failed); None while it runs

    @classmethod
    def from_api(cls, body: dict[str, Any], *, dag_id: str, run_id: str) -> DagRun:
        return cls(
            dag_id=body.get("dag_id") or dag_id,
            run_id=body.get("dag_run_id") or run_id,
            state=body.get("state"),
            conf=body.get("conf") or {},
            end_date=_moment(body.get("end_date")),
        )


@dataclass(frozen=True)
class TriggerResult:
    run: DagRun
    created: bool  # False: the run existed already (a retried or duplicate trigger)


def trigger_body(api_version: ApiVersion, *, run_id: str, conf: dict[str, Any]) -> dict[str, Any]:
    """The strict trigger body. Airflow 3 requires the `logical_date` key; null means "no
    logical date", so runs of one DAG never collide on it. Airflow 2 has no null logical
    date: the key is left out and Airflow uses the trigger time."""
    body: dict[str, Any] = {"dag_run_id": run_id, "conf": conf}
    if api_version == "v2":
        body["logical_date"] = None
    return body


LIST_PAGE_SIZE = 100


def dag_run_path(dag_id: str, run_id: str | None = None) -> str:
    path = f"/dags/{quote(dag_id, safe='')}/dagRuns"
    return path if run_id is None else f"{path}/{quote(run_id, safe='')}"


def _moment(value: Any) -> datetime | None:
    """An ISO 8601 time as Airflow writes it (with an offset or `Z`); None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _detail(body: Any) -> str:
    if isinstance(body, dict):
        detail = body.get("detail", body.get("title", body))
        return str(detail)[:500]
    return str(body)[:500]


class AirflowClient(ABC):
    """Trigger and read DAG runs. Subclasses implement `_request`."""

    def __init__(self, *, api_version: ApiVersion = "v2", ui_url: str | None = None):
        if api_version not in ("v2", "v1"):
            raise ValueError(f"api_version must be v2 or v1, got {api_version!r}")
        self.api_version = api_version
        self._ui_url = ui_url.rstrip("/") if ui_url else None

    def sign_in(self) -> None:
        """Get what the client's requests carry (a REST client's token) now rather than on its
        first request; raises as that request would. Nothing to do for most clients."""
        return None

    @abstractmethod
    def _request(self, call: ApiCall) -> tuple[int, Any]:
        """Send one request; (status, JSON body) for any answer, AirflowUnavailableError for none."""

    def trigger_dag_run(self, dag_id: str, *, run_id: str, conf: dict[str, Any]) -> TriggerResult:
        """Create run `run_id` of `dag_id` with `conf`, exactly once.

        A 409 is resolved by reading the run back: it exists with the same conf
        `backfill_id` -> already triggered (created=False); otherwise DagRunCollisionError."""
        status, body = self._request(
            ApiCall("POST", dag_run_path(dag_id), trigger_body(self.api_version, run_id=run_id, conf=conf))
        )
        if status in (200, 201):
            return TriggerResult(DagRun.from_api(body or {}, dag_id=dag_id, run_id=run_id), created=True)
        if status == 409:
            existing = self.get_dag_run(dag_id, run_id)
            if existing is None:
                raise DagRunCollisionError(
                    f"Airflow answered 409 for run {run_id} of {dag_id}, but no such run exists: "
                    f"a logical-date collision ({_detail(body)})",
                    status=409,
                )
            if existing.conf.get("backfill_id") not in (None, conf.get("backfill_id")):
                raise DagRunCollisionError(
                    f"run {run_id} of {dag_id} exists for another backfill "
                    f"({existing.conf.get('backfill_id')})",
                    status=409,
                )
            return TriggerResult(existing, created=False)
        raise self._error(status, body, f"triggering {dag_id} run {run_id}")

    def get_dag_run(self, dag_id: str, run_id: str) -> DagRun | None:
        """The run, or None when Airflow answers 404."""
        status, body = self._request(ApiCall("GET", dag_run_path(dag_id, run_id)))
        if status == 200:
            return DagRun.from_api(body or {}, dag_id=dag_id, run_id=run_id)
        if status == 404:
            return None
        raise self._error(status, body, f"reading {dag_id} run {run_id}")

    def fail_dag_run(self, dag_id: str, run_id: str) -> DagRun | None:
        """Mark the run failed: Airflow stops its running tasks (their `on_kill` runs) and
        skips those not started. None when there is no such run; a run that has already
        ended is left as it is (Airflow answers with its state)."""
        status, body = self._request(ApiCall("PATCH", dag_run_path(dag_id, run_id), {"state": "failed"}))
        if status == 200:
            return DagRun.from_api(body or {}, dag_id=dag_id, run_id=run_id)
        if status == 404:
            return None
        raise self._error(status, body, f"failing {dag_id} run {run_id}")

    def list_dag_runs(
        self, dag_id: str, *, logical_date_gte: datetime, logical_date_lte: datetime, states: Sequence[str]
    ) -> list[DagRun]:
        """Runs of `dag_id` with a logical date in [gte, lte] and one of `states`, every page."""
        runs: list[DagRun] = []
        offset = 0
        while True:
            query = {
                "logical_date_gte": logical_date_gte.isoformat(),
                "logical_date_lte": logical_date_lte.isoformat(),
                "state": list(states),
                "limit": LIST_PAGE_SIZE,
                "offset": offset,
            }
            status, body = self._request(ApiCall("GET", dag_run_path(dag_id), query=query))
            if status != 200:
                raise self._error(status, body, f"listing {dag_id} runs")
            page = (body or {}).get("dag_runs") or []
            runs += [DagRun.from_api(item, dag_id=dag_id, run_id=item.get("dag_run_id", "")) for item in page]
            offset += len(page)
            if not page or offset >= int((body or {}).get("total_entries") or 0):
                return runs

    def run_url(self, dag_id: str, run_id: str) -> str | None:
        """The run's page in the Airflow UI, when the UI's URL is known."""
        if not self._ui_url:
            return None
        if self.api_version == "v2":
            return f"{self._ui_url}/dags/{quote(dag_id, safe='')}/runs/{quote(run_id, safe='')}"
        return f"{self._ui_url}/dags/{quote(dag_id, safe='')}/grid?dag_run_id={quote(run_id, safe='')}"

    @staticmethod
    def _error(status: int, body: Any, doing: str) -> AirflowApiError:
        message = f"{doing}: Airflow answered {status}: {_detail(body)}"
        if status in (401, 403):
            return AirflowAuthError(message, status=status)
        if status == 404:
            return DagNotFoundError(message, status=status)
        if status == 429 or status >= 500:
            return AirflowUnavailableError(message, status=status)
        return AirflowRequestError(message, status=status)
