"""The sweep reconciles the status table with Airflow: a record still live (TRIGGERED,
RUNNING) whose DAG run ended in Airflow more than the grace period ago (its `finish` never
recorded it: a lost worker, a run failed by hand, a cancel whose retries ran out) is finished
from the run's state, its claims are released and what waited behind it starts; a failure is
paged once, whoever is killed between the page and the record (the sweep, or the DAG's failure
callback that Airflow never runs again). Each sweep checks a bounded number of records, oldest
first."""

from __future__ import annotations

import dataclasses
import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from backfill_orchestrator.contracts import BackfillReport
from backfill_orchestrator.status import BackfillState, StatusStore
from backfill_orchestrator.trigger.reconcile import finish_ended_runs
from backfill_orchestrator.trigger.wiring import TriggerWiring
from tests.faults.harness import FaultHarness
from tests.support.trigger import fast_session, second_config

GRACE = timedelta(seconds=900)  # SWEEP_GRACE_SECONDS' default


def later(after: timedelta) -> datetime:
    return datetime.now(UTC) + after


def run_gets(harness: FaultHarness) -> int:
    return len(harness.airflow_proxy.requests("GET", r"/dags/backfill/dagRuns/"))


def test_a_live_record_whose_run_failed_is_finished_after_the_grace_period_and_what_waited_starts(
    control_harness: FaultHarness,
) -> None:
    harness = control_harness
    first = harness.submit().backfill_id
    second = harness.submit(second_config(), key="incoming/second.yaml").backfill_id
    harness.airflow.set_state("backfill", first, "running")
    harness.status.transition(first, BackfillState.RUNNING, detail="1 of 6 steps")
    # The run fails in Airflow and its `finish` never records it (the worker was lost).
    harness.airflow.set_state("backfill", first, "failed")

    early = harness.wiring.sweep(now=later(GRACE / 3))  # within the grace period: left alone

    assert early.finished == [] and early.started == []
    assert harness.status.get(first).state is BackfillState.RUNNING

    swept = harness.wiring.sweep(now=later(GRACE + timedelta(minutes=1)))

    assert swept.finished == [first] and swept.started == [second]
    record = harness.status.get(first)
    assert record.state is BackfillState.FAILED and not record.retryable
    assert "ended failed in Airflow" in record.reason and "found by the sweep" in record.reason
    assert harness.claims_held() == {"active": [], "queued": [second]}
    (start,) = harness.start_documents(second)
    assert any(f"{first}" in m["text"] and "FAILED" in m["text"] for m in harness.slack.messages)
    assert harness.pagerduty.actions(first) == ["trigger"] and harness.status.get(first).pagerduty_open
    body = harness.s3.get_object(Bucket=harness.bucket, Key=start)["Body"].read()
    (started,) = harness.invoke(harness.upload(body, key=start))
    assert started.disposition == "accepted" and harness.status.get(second).state is BackfillState.TRIGGERED
    # Done once: the next sweep finds nothing to finish and pages nobody.
    assert harness.wiring.sweep(now=later(GRACE * 2)).finished == []
    assert harness.pagerduty.actions(first) == ["trigger"]


class Crash(BaseException):
    pass


class CrashOnTransition(StatusStore):
    """The process dies as it writes the record's end (what a dag-processor killed there does)."""

    def transition(self, *args: Any, **kwargs: Any) -> Any:
        raise Crash("killed while recording the end")


def run_failed_unrecorded(harness: FaultHarness) -> str:
    """A backfill RUNNING whose DAG run failed in Airflow, its `finish` never having recorded it."""
    backfill_id = harness.submit().backfill_id
    harness.airflow.set_state("backfill", backfill_id, "running")
    harness.status.transition(backfill_id, BackfillState.RUNNING, detail="1 of 6 steps")
    harness.airflow.set_state("backfill", backfill_id, "failed")
    return backfill_id


def test_the_failure_callback_pages_before_it_records_so_a_crash_between_loses_no_page(
    control_harness: FaultHarness,
) -> None:
    """The DAG's failure callback runs once (the dag-processor never retries it). Killed after
    its page and before its record, the record stays live; the sweep then records FAILED and
    does not page the incident a second time."""
    from backfill_runtime.reporting import Reporting

    harness = control_harness
    first = run_failed_unrecorded(harness)
    run_id = harness.status.get(first).dag_run_id
    store = CrashOnTransition(table_name=harness.status.table_name, dynamodb_client=harness.dynamodb)
    reporting = Reporting(
        store=store, notifier=harness.wiring.notifier(status=store, metrics=None), airflow_ui_url=None
    )

    with pytest.raises(Crash):
        reporting.unreported_failure(backfill_id=first, dag_run_id=run_id, reason="failed", run_url=None)

    assert harness.pagerduty.actions(first) == ["trigger"]
    record = harness.status.get(first)
    assert record.state is BackfillState.RUNNING and record.pagerduty_open

    swept = harness.wiring.sweep(now=later(GRACE + timedelta(minutes=1)))

    assert swept.finished == [first] and harness.status.get(first).state is BackfillState.FAILED
    assert harness.pagerduty.actions(first) == ["trigger"]  # the callback's page, not a second one
    assert any(first in m["text"] and "FAILED" in m["text"] for m in harness.slack.messages)


def test_a_sweep_killed_after_its_page_pages_once_when_the_next_sweep_records_it(
    control_harness: FaultHarness,
) -> None:
    harness = control_harness
    first = run_failed_unrecorded(harness)
    now = later(GRACE + timedelta(minutes=1))
    services, notifier = harness.wiring.mode_services(metrics=None, logger=logging.getLogger(__name__))
    crashing = CrashOnTransition(table_name=harness.status.table_name, dynamodb_client=harness.dynamodb)
    services = dataclasses.replace(services, status=crashing)

    with pytest.raises(Crash):
        finish_ended_runs(services, notifier, now=now)

    assert (
        harness.pagerduty.actions(first) == ["trigger"]
        and harness.status.get(first).state is BackfillState.RUNNING
    )

    assert harness.wiring.sweep(now=now + timedelta(minutes=5)).finished == [first]
    assert harness.status.get(first).state is BackfillState.FAILED
    assert harness.pagerduty.actions(first) == ["trigger"]


def test_a_run_that_succeeded_is_finished_from_its_backfill_report(control_harness: FaultHarness) -> None:
    harness = control_harness
    backfill_id = harness.submit().backfill_id
    record = harness.status.get(backfill_id)
    steps = [step for wave in record.plan_summary["waves"] for step in wave]
    report = BackfillReport.model_validate(
        {
            "backfill_id": backfill_id,
            "dag_run_id": backfill_id,
            "status": "succeeded",
            "counts": {"pending": 0, "succeeded": len(steps), "failed": 0, "blocked": 0},
            "figures": {},
            "steps": {
                step: {"status": "succeeded", "kind": "spark", "round": 0, "dag_id": "etl"} for step in steps
            },
            "written_at": datetime.now(UTC).isoformat(),
        }
    )
    harness.s3.put_object(
        Bucket=harness.bucket,
        Key=f"backfills/{backfill_id}/backfill_report.json",
        Body=report.to_json().encode(),
    )
    harness.airflow.set_state("backfill", backfill_id, "success")

    swept = harness.wiring.sweep(now=later(GRACE + timedelta(minutes=1)))

    assert swept.finished == [backfill_id]
    record = harness.status.get(backfill_id)
    assert record.state is BackfillState.SUCCEEDED
    assert (
        f"report s3://{harness.bucket}/backfills/{backfill_id}/backfill_report.json"
        in record.history[-1]["detail"]
    )
    assert harness.claims_held()["active"] == []


def test_records_whose_run_is_still_going_or_unknown_are_left_alone(control_harness: FaultHarness) -> None:
    harness = control_harness
    running = harness.submit().backfill_id
    harness.airflow.set_state("backfill", running, "running")
    harness.status.create("replay-orders-0a0b0c0d", detail="test", attributes={"mode": "replay"})
    harness.status.transition(
        "replay-orders-0a0b0c0d", BackfillState.TRIGGERED, detail="12 replay tasks queued"
    )
    harness.status.create("gone-run-0a0b0c0d", detail="test", attributes={"mode": "batch"})
    harness.status.transition(
        "gone-run-0a0b0c0d",
        BackfillState.TRIGGERED,
        detail="DAG run backfill/gone-run-0a0b0c0d",
        attributes={"dag_id": "backfill", "dag_run_id": "gone-run-0a0b0c0d"},
    )

    swept = harness.wiring.sweep(now=later(GRACE * 4))

    assert swept.finished == []
    assert harness.status.get(running).state is BackfillState.TRIGGERED
    assert harness.status.get("replay-orders-0a0b0c0d").state is BackfillState.TRIGGERED
    assert harness.status.get("gone-run-0a0b0c0d").state is BackfillState.TRIGGERED
    assert harness.claims_held()["active"] == [running]


def test_each_sweep_checks_a_bounded_number_of_records_oldest_first(control_harness: FaultHarness) -> None:
    harness = control_harness
    harness.rewire(SWEEP_MAX_RECORDS="3")
    harness.wiring = TriggerWiring(
        harness.settings,
        s3_client=harness.s3,
        dynamodb_client=harness.dynamodb,
        secrets_client=harness.secrets,
        session_factory=fast_session,
    )
    airflow = harness.wiring.airflow()
    ids = [f"ended-{index}-0a0b0c0d" for index in range(7)]
    for backfill_id in ids:  # created (and so updated) in this order
        airflow.trigger_dag_run("backfill", run_id=backfill_id, conf={"backfill_id": backfill_id})
        harness.airflow.set_state("backfill", backfill_id, "failed")
        harness.status.create(backfill_id, detail="test", attributes={"mode": "batch"})
        harness.status.transition(
            backfill_id,
            BackfillState.TRIGGERED,
            detail=f"DAG run backfill/{backfill_id}",
            attributes={"dag_id": "backfill", "dag_run_id": backfill_id},
        )
    moment = later(GRACE + timedelta(minutes=1))

    first = harness.wiring.sweep(now=moment)
    assert first.finished == ids[:3] and run_gets(harness) == 3
    second = harness.wiring.sweep(now=moment)
    assert second.finished == ids[3:6] and run_gets(harness) == 6
    third = harness.wiring.sweep(now=moment)
    assert third.finished == ids[6:] and run_gets(harness) == 7
    assert {harness.status.get(backfill_id).state for backfill_id in ids} == {BackfillState.FAILED}


def test_the_lambda_handler_answers_the_sweep_with_what_it_finished_and_started(
    control_harness: FaultHarness,
) -> None:
    harness = control_harness
    answer = harness.invoke_lambda({"source": "backfill.sweep"}, request_id="sweep-request")
    assert json.loads(json.dumps(answer)) == {"sweep": {"finished": [], "started": []}}


def test_the_template_lets_the_trigger_read_live_records_and_expires_remembered_uploads() -> None:
    from tests.support.aws import template

    resources = template()["Resources"]
    statements = [
        statement
        for policy in resources["TriggerFunction"]["Properties"]["Policies"]
        if isinstance(policy, dict) and "Statement" in policy
        for statement in policy["Statement"]
    ]
    (query,) = [s for s in statements if s.get("Sid") == "StatusTableLiveRecords"]
    assert query["Action"] == "dynamodb:Query" and query["Resource"] == {
        "Sub": "${StatusTable.Arn}/index/by_state"
    }
    ttl = resources["StatusTable"]["Properties"]["TimeToLiveSpecification"]
    assert ttl == {"AttributeName": "expires_at", "Enabled": True}
