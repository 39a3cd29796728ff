"""The progress the DAG records for `backfill watch`: steps and (step, date) pairs done of
total, and the round (fast; no Airflow, no network)."""

from __future__ import annotations

from datetime import date

from backfill_runtime.reporting import progress_of
from backfill_runtime.step_ledger import DagRunRequest, Ledger

from backfill_orchestrator.contracts import StepStatus
from backfill_orchestrator.status import BackfillState, StatusRecord
from backfill_orchestrator.status.watch import progress_line
from tests.support.airflow import step

from .test_runtime_units import make_plan

D3 = ["2021-06-04", "2021-06-05", "2021-06-06"]


def test_progress_counts_steps_and_dates_done_of_total_including_a_dag_step_under_way() -> None:
    plan = make_plan(
        [
            [step("a", "spark", dates=D3)],
            [
                step("d", "airflow_dag", dates=D3, upstream=["a"]),
                step("b", "spark", dates=D3[:2], upstream=["a"]),
            ],
        ]
    )
    ledger = Ledger.for_plan(plan)
    assert progress_of(ledger, plan=plan, round_index=0, rounds=2) == {
        "steps_total": 3,
        "steps_done": 0,
        "steps_failed": 0,
        "wave": 1,
        "waves": 2,
        "dates_total": 8,
        "dates_done": 0,
    }
    ledger.mark("a", StepStatus.SUCCEEDED)
    ledger.mark("b", StepStatus.FAILED, detail="boom")
    # two of the DAG step's three reruns succeeded, one failed: the step failed, two dates done
    runs = [DagRunRequest("d", "d", date.fromisoformat(day)) for day in D3]
    ledger.record_dag_runs(runs, {0: "success", 1: "failed", 2: "success"})
    progress = progress_of(ledger, plan=plan, round_index=1, rounds=2)
    assert (progress["steps_done"], progress["steps_failed"]) == (1, 2)
    assert (progress["dates_done"], progress["dates_total"]) == (3 + 2, 8)
    assert (progress["wave"], progress["waves"]) == (2, 2)
    # without the plan only steps are counted (what older DAG code recorded)
    assert "dates_total" not in progress_of(ledger, round_index=1, rounds=2)
    # `backfill watch` shows both
    record = StatusRecord(
        backfill_id="unit-0123abcd",
        state=BackfillState.RUNNING,
        version=3,
        created_at="2021-06-14T09:00:00+00:00",
        updated_at="2021-06-14T09:00:00+00:00",
        progress=progress,
    )
    line = progress_line(record)
    assert "steps 1/3" in line and "dates 5/8" in line and "wave 2/2" in line and "2 failed" in line
