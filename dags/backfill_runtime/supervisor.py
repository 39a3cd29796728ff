"""The one door to Airflow's task supervisor: skip tasks, trigger or clear DAG runs, count and
look up DAG runs. Nothing else in the DAGs folder imports `airflow.sdk.execution_time`.

Why private API: in Airflow 3 a task cannot reach the metadata database; everything it asks of
Airflow goes through its supervisor process, over `task_runner.SUPERVISOR_COMMS`, as the message
classes of `airflow.sdk.execution_time.comms`. Airflow's own operators use exactly these
messages (TriggerDagRunOperator: `TriggerDagRun`, `GetDagRunState`; ShortCircuitOperator and
branching: `SkipDownstreamTasks`), but there is no public API that triggers, clears and polls
many DAG runs from one task, nor one that skips chosen tasks of the run. The module and its
messages are not a documented interface, so they may change in any Airflow release.

Checked on: Airflow 3.3.2 (apache-airflow-task-sdk 1.3.2), which the tests run. The message
classes and the fields sent here, `SUPERVISOR_COMMS` and `ErrorType.DAGRUN_ALREADY_EXISTS` are
the same in task-sdk 1.1.0 and 1.1.8 (Airflow 3.1) and 1.2.2 (Airflow 3.2), read from their
wheels; `TriggerDagRun.run_after`, which only 1.3 has, is not sent (the API server takes "now").
`DagRun.clear_number` (how often a run was cleared, in the answer to `GetPreviousDagRun`) is
read when present; without it a rerun whose trigger may have been lost is cleared again.
After an upgrade, run tests/airflow/test_depth_units.py, test_backfill_dag.py,
test_deep_plans.py and tests/faults/test_airflow_restarts.py.

When the API server cannot be reached, the supervisor retries each request
(`[workers] execution_api_retries`, about 30 s with Airflow's defaults) and then answers the
task with an `API_SERVER_ERROR` without a status code (or with a 5xx one): that answer is
raised here as `AirflowApiUnavailableError`, so callers can tell an outage from a refusal."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from backfill_orchestrator.errors import ServiceError


class Comms(Protocol):
    """The Task SDK's channel to the supervisor (`task_runner.SUPERVISOR_COMMS`)."""

    def send(self, msg: Any) -> Any: ...


class TriggerRefusedError(ServiceError, RuntimeError):
    """Airflow refused to create or clear a DAG run (other than "that run exists already")."""

    def __init__(self, *, dag_id: str, run_id: str, error: Any, detail: Any):
        self.dag_id, self.run_id, self.error, self.detail = dag_id, run_id, error, detail
        super().__init__(f"{dag_id} run {run_id}: the trigger was refused: {error} {detail}")


class AirflowApiUnavailableError(ServiceError, RuntimeError):
    """The supervisor could not reach Airflow's API server for this request (after its own
    retries): the request may or may not have taken effect."""


@dataclass(frozen=True)
class RunAtDate:
    """The DAG run at one logical date: its id and how many times it was cleared."""

    run_id: str
    clear_number: int


class SupervisorClient:
    """A task's requests to its supervisor, answered as plain values. `comms` is the task's
    channel; tests pass a double that answers the same message classes."""

    def __init__(self, comms: Comms):
        self.comms = comms

    @classmethod
    def of_this_task(cls) -> SupervisorClient:
        from airflow.sdk.execution_time.task_runner import SUPERVISOR_COMMS

        return cls(SUPERVISOR_COMMS)

    def _send(self, msg: Any) -> Any:
        """The supervisor's answer; an unreachable API server raises AirflowApiUnavailableError."""
        from airflow.sdk.exceptions import AirflowRuntimeError, ErrorType

        try:
            return self.comms.send(msg)
        except AirflowRuntimeError as error:
            answer = error.error
            status = (answer.detail or {}).get("status_code")
            if answer.error == ErrorType.API_SERVER_ERROR and (status is None or int(status) >= 500):
                raise AirflowApiUnavailableError(
                    f"{type(msg).__name__}: Airflow's API server did not answer: {answer.detail}"
                ) from error
            raise

    def skip_tasks(self, task_ids: Iterable[str]) -> None:
        """Mark tasks of this run skipped from now on: no process is started for them."""
        from airflow.sdk.execution_time.comms import SkipDownstreamTasks

        tasks: list[str | tuple[str, int]] = list(task_ids)
        if tasks:
            self._send(SkipDownstreamTasks(tasks=tasks))

    def trigger_dag_run(
        self,
        *,
        dag_id: str,
        run_id: str,
        logical_date: datetime | None,
        conf: Mapping[str, Any],
        reset_dag_run: bool = False,
    ) -> bool:
        """Create the run (with `reset_dag_run`, a run of that id is cleared to run again).
        False: a run of that id exists already (Airflow's 409). Raises TriggerRefusedError for
        any other refusal. Without a logical date the run is due now."""
        from airflow.sdk.exceptions import ErrorType
        from airflow.sdk.execution_time.comms import ErrorResponse, TriggerDagRun

        answer = self._send(
            TriggerDagRun(
                dag_id=dag_id,
                run_id=run_id,
                logical_date=logical_date,
                conf=dict(conf),
                reset_dag_run=reset_dag_run,
            )
        )
        if isinstance(answer, ErrorResponse):
            if answer.error == ErrorType.DAGRUN_ALREADY_EXISTS:
                return False
            raise TriggerRefusedError(dag_id=dag_id, run_id=run_id, error=answer.error, detail=answer.detail)
        return True

    def count_runs(
        self,
        dag_id: str,
        *,
        logical_dates: list[datetime] | None = None,
        run_ids: list[str] | None = None,
        states: list[str] | None = None,
    ) -> int:
        """How many of `dag_id`'s runs are at `logical_dates`, or among `run_ids` (in `states`)."""
        from airflow.sdk.execution_time.comms import GetDRCount

        return self._send(
            GetDRCount(dag_id=dag_id, logical_dates=logical_dates, run_ids=run_ids, states=states)
        ).count

    def run_at(self, dag_id: str, logical_date: datetime) -> RunAtDate | None:
        """`dag_id`'s run at exactly `logical_date`, or None (count by logical date; then the
        latest run before logical_date + 1 µs)."""
        from airflow.sdk.execution_time.comms import GetPreviousDagRun

        if self.count_runs(dag_id, logical_dates=[logical_date]) == 0:
            return None
        answer = self._send(
            GetPreviousDagRun(dag_id=dag_id, logical_date=logical_date + timedelta(microseconds=1))
        )
        run = getattr(answer, "dag_run", None)
        if run is None or run.logical_date is None or run.logical_date != logical_date:
            return None
        return RunAtDate(run_id=run.run_id, clear_number=int(getattr(run, "clear_number", 0) or 0))

    def run_state(self, dag_id: str, run_id: str) -> str:
        """The DAG run's state: `queued`, `running`, `success` or `failed`."""
        from airflow.sdk.execution_time.comms import GetDagRunState

        state = self._send(GetDagRunState(dag_id=dag_id, run_id=run_id)).state
        return str(getattr(state, "value", state))
