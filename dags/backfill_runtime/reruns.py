"""Rerun one DAG for one date: trigger it, or clear the run that already exists for that
logical date, then wait for it to finish.

Airflow's dag_run table is unique on (dag_id, run_id) and on (dag_id, logical_date). The
standard TriggerDagRunOperator's `reset_dag_run` only resolves a run-id collision (409 ->
clear that run id); a scheduled or manual run for the same date under another run id would
make the trigger fail. So before triggering we look the date up and, when a run exists, take
its run id: the trigger then answers 409 and the existing run is cleared and rerun, never
duplicated. On retries the same happens again (clear, rerun)."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator


def logical_date_of(day: date | str) -> datetime:
    """A step date D reruns the DAG's run whose logical date is D at 00:00 UTC."""
    value = date.fromisoformat(day) if isinstance(day, str) else day
    return datetime.combine(value, time(0), tzinfo=UTC)


def new_run_id(*, backfill_id: str, day: date | str) -> str:
    return f"backfill__{backfill_id}__{day if isinstance(day, str) else day.isoformat()}"


def existing_run_id(ti: Any, *, dag_id: str, logical_date: datetime) -> str | None:
    """The run id of `dag_id`'s run at exactly `logical_date`, or None.

    Tasks cannot query the metadata DB in Airflow 3: this goes through the Task SDK's
    execution API (count by logical date; then the latest run before logical_date + 1 µs)."""
    if ti.get_dr_count(dag_id=dag_id, logical_dates=[logical_date]) == 0:
        return None
    from airflow.sdk.execution_time.comms import GetPreviousDagRun
    from airflow.sdk.execution_time.task_runner import SUPERVISOR_COMMS

    answer = SUPERVISOR_COMMS.send(
        GetPreviousDagRun(dag_id=dag_id, logical_date=logical_date + timedelta(microseconds=1))
    )
    run = getattr(answer, "dag_run", None)
    if run is None or run.logical_date is None or run.logical_date != logical_date:
        return None
    return run.run_id


class RerunDagOperator(TriggerDagRunOperator):
    """TriggerDagRunOperator that reruns the existing run of its logical date, if any.

    Expects `logical_date` as an ISO date or datetime and `trigger_run_id` as the run id to
    use when no run exists yet."""

    def execute(self, context: Any) -> Any:
        logical_date = logical_date_of(str(self.logical_date)[:10])
        existing = existing_run_id(context["ti"], dag_id=self.trigger_dag_id, logical_date=logical_date)
        if existing is not None:
            self.log.info("%s has run %s for %s: clearing and rerunning it", self.trigger_dag_id, existing, logical_date)
            self.trigger_run_id = existing
        self.logical_date = logical_date.isoformat()
        return super().execute(context)
