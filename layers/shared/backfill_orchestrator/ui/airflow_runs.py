"""The backfill's live DAG run, read from Airflow's metadata database by the api-server that
serves the page: the run's state and the `run_state` XCom its latest task wrote (the DAG's
ledger of every step's outcome and the round in flight; dags/backfill_dag.py). Read-only, one
short session per call, bounded: one run, its `run_state` values only."""

from __future__ import annotations

import logging
import re
from typing import Any

from backfill_orchestrator.contracts import InvalidDocumentError, RunState
from backfill_orchestrator.ui.progress import RunProgress

log = logging.getLogger(__name__)
RUN_STATE_KEY = "run_state"  # the XCom key of the DAG's RunState (backfill_dag.RUN_STATE)
_PREPARE = re.compile(r"^round_(\d+)\.prepare$")


def _task_order(task_id: str) -> int:
    """`start` before `round_0.prepare` before `round_1.prepare`...: the latest state wins."""
    match = _PREPARE.match(task_id)
    return int(match.group(1)) + 1 if match else 0


class AirflowRuns:
    """A `RunReader` over Airflow's ORM (only the api-server process constructs it)."""

    def progress(self, dag_id: str, run_id: str) -> RunProgress | None:
        from airflow.models.dagrun import DagRun
        from airflow.models.xcom import XComModel
        from airflow.utils.session import create_session
        from sqlalchemy import select

        with create_session() as session:
            run_state = session.scalar(
                select(DagRun.state).where(DagRun.dag_id == dag_id, DagRun.run_id == run_id)
            )
            if run_state is None:
                return None
            rows = session.execute(
                select(XComModel.task_id, XComModel.value).where(
                    XComModel.dag_id == dag_id,
                    XComModel.run_id == run_id,
                    XComModel.key == RUN_STATE_KEY,
                    XComModel.map_index == -1,
                )
            ).all()
        latest = max(rows, key=lambda row: _task_order(row[0]), default=None)
        state = _run_state(latest[1], f"{dag_id}/{run_id}/{latest[0]}") if latest is not None else None
        return RunProgress(run_id=run_id, run_state=str(getattr(run_state, "value", run_state)), state=state)


def _run_state(value: Any, where: str) -> RunState | None:
    from airflow.models.xcom import XComModel

    class _Row:  # XComModel.deserialize_value reads `.value`
        def __init__(self, raw: Any) -> None:
            self.value = raw

    try:
        return RunState.from_json(
            XComModel.deserialize_value(_Row(value)), source=f"XCom run_state of {where}"
        )
    except InvalidDocumentError as error:  # a state of another version: show the record's progress only
        log.warning("%s", error)
        return None
