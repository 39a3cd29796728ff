"""A cancel fails the backfill's DAG run, then watches it for CANCEL_CONFIRM_SECONDS: a
scheduler that loaded the run before the PATCH may still write "success" over it (seen on the
test Airflow, SQLite), and such a run is failed again."""

from __future__ import annotations

from backfill_orchestrator.airflow_api import DagRun
from backfill_orchestrator.trigger.control_actions import keep_failed


class RacingAirflow:
    """Answers the state a racing scheduler leaves: success once after the first PATCH."""

    def __init__(self, states: list[str]) -> None:
        self.states = states
        self.patches = 0

    def get_dag_run(self, dag_id: str, run_id: str) -> DagRun:
        return DagRun(dag_id, run_id, self.states.pop(0) if self.states else "failed")

    def fail_dag_run(self, dag_id: str, run_id: str) -> DagRun:
        self.patches += 1
        return DagRun(dag_id, run_id, "failed")


def test_a_run_the_scheduler_marked_successful_after_the_cancel_is_failed_again() -> None:
    slept: list[float] = []
    airflow = RacingAirflow(["failed", "success", "failed"])
    keep_failed(airflow, "backfill", "b-1", seconds=3, sleep=slept.append)
    assert airflow.patches == 1 and slept == [1.0, 1.0, 1.0]


def test_a_run_that_stays_failed_is_left_alone_and_zero_seconds_reads_nothing() -> None:
    slept: list[float] = []
    airflow = RacingAirflow(["failed", "failed", "failed"])
    keep_failed(airflow, "backfill", "b-1", seconds=3, sleep=slept.append)
    assert airflow.patches == 0 and len(slept) == 3
    quiet = RacingAirflow(["success"])
    keep_failed(quiet, "backfill", "b-1", seconds=0, sleep=(slept := []).append)
    assert quiet.patches == 0 and slept == [] and quiet.states == ["success"]


def test_an_airflow_that_cannot_be_read_ends_the_watch_without_raising() -> None:
    class Unreachable(RacingAirflow):
        def get_dag_run(self, dag_id: str, run_id: str) -> DagRun:
            raise ConnectionError("refused")

    slept: list[float] = []
    keep_failed(Unreachable([]), "backfill", "b-1", seconds=3, sleep=slept.append)
    assert slept == [1.0]
