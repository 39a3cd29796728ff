"""Issue 12, class 1: an attempt that dies, or cannot record its outcome, is never dropped.

Lambda retries a failed async invocation twice (about 1 and then 2 minutes later) with the
same request id, and only after the previous attempt ended; S3 may also deliver an event
twice, as another invocation (another request id) that may run concurrently. So a record
whose lease our own request id holds belongs to a dead attempt and is taken over at once; a
lease held by another request id is respected until it runs out."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from backfill_orchestrator.airflow_api import DagRun, TriggerResult
from backfill_orchestrator.status import BackfillState, TransitionRejectedError
from backfill_orchestrator.trigger import TriggerFailedError
from backfill_orchestrator.trigger.runs import record_triggered
from tests.faults.harness import FaultHarness
from tests.faults.toolkit import TRANSITION_WRITES, AwsFaults, SimulatedCrash, to_state
from tests.support.trigger import VALID

REQUEST = "8f5c1a2e-0000-4000-8000-000000000001"


def dag_runs(harness: FaultHarness) -> list[tuple[str, str]]:
    return list(harness.airflow.runs)


def plan_versions(harness: FaultHarness, backfill_id: str) -> list[tuple[str, str]]:
    """Every stored version of the backfill's plan.json (the bucket is versioned): (version, ETag)."""
    listed = harness.s3.list_object_versions(
        Bucket=harness.bucket, Prefix=f"backfills/{backfill_id}/plan.json"
    )
    return [(v["VersionId"], v["ETag"]) for v in listed.get("Versions", [])]


def test_killed_after_airflow_accepted_the_run_the_lambda_retry_records_it(
    trigger_harness: FaultHarness, aws_faults: AwsFaults
) -> None:
    harness = trigger_harness
    event = harness.upload(VALID)
    aws_faults.crash(harness.dynamodb, TRANSITION_WRITES, when=to_state("TRIGGERED"))  # e.g. out of memory

    started = time.time()
    with pytest.raises(SimulatedCrash):
        harness.invoke_lambda(event, request_id=REQUEST, remaining_seconds=300)

    backfill_id = harness.only_record_id()
    record = harness.status.get(backfill_id)
    # Nothing past the claim was recorded (no PLANNED: TRIGGERED carries the plan).
    assert (
        record.state is BackfillState.RECEIVED and record.lease_holder == REQUEST and record.plan_uri is None
    )
    assert started + 300 + 5 - 2 <= record.lease_until <= time.time() + 300 + 5  # remaining time + 5 s
    assert dag_runs(harness) == [("backfill", backfill_id)]  # Airflow accepted it
    # The result file went out beside the TRIGGERED write and landed: it names the run, which exists.
    reported = harness.result_file()
    assert (reported["outcome"], reported["state"], reported["dag_run_id"]) == (
        "accepted",
        "TRIGGERED",
        backfill_id,
    )
    assert harness.pagerduty.events == []
    stored_plan = plan_versions(harness, backfill_id)
    assert len(stored_plan) == 1  # at its fixed key, where the run's conf points
    # Slack went out before the TRIGGERED write that was to store its thread.
    assert len(harness.slack.messages) == 1 and record.slack_thread_ts is None

    # S3 delivers the event again as another invocation while the lease lasts: a duplicate.
    duplicate = harness.invoke_lambda(event, request_id="another-request-id")
    assert [r["disposition"] for r in duplicate["results"]] == ["duplicate"]
    assert harness.status.get(backfill_id).version == record.version

    # Lambda's retry (same request id) takes the dead attempt over at once and asks Airflow for
    # the run by its id before anything else: found, so nothing is planned, stored or posted.
    answer = harness.invoke_lambda(event, request_id=REQUEST)

    assert [r["disposition"] for r in answer["results"]] == ["accepted"]
    assert dag_runs(harness) == [("backfill", backfill_id)]  # found by its run id, not triggered twice
    assert [p["status"] for p in harness.airflow.trigger_posts()] == [200]
    assert [r["method"] for r in harness.airflow.requests if r["method"] == "GET"] == ["GET"]  # read back
    assert plan_versions(harness, backfill_id) == stored_plan  # plan.json untouched
    record = harness.status.get(backfill_id)
    assert record.state is BackfillState.TRIGGERED and record.attempts == 2
    assert record.dag_run_id == backfill_id and record.dag_run_url.endswith(
        f"/dags/backfill/runs/{backfill_id}"
    )
    conf = harness.airflow.runs[("backfill", backfill_id)]["conf"]
    assert (record.plan_uri, record.config_uri) == (conf["plan_uri"], conf["config_uri"])
    assert record.plan_summary and record.plan_summary["steps"] >= 1
    assert [h["state"] for h in record.history] == ["RECEIVED", "RECEIVED", "TRIGGERED"]
    assert "existed already" in record.history[-1]["detail"]
    result = harness.result_file()
    assert result["outcome"] == "accepted" and result["dag_run_id"] == backfill_id
    assert result["plan_uri"] == conf["plan_uri"] and result["plan"]["steps"] == record.plan_summary["steps"]
    # Posted by the dead attempt only: the retry cannot know it went out, so it posts nothing
    # (never the same message twice); with no thread recorded, the DAG's start opens one.
    assert (
        harness.pagerduty.events == [] and len(harness.slack.messages) == 1 and record.slack_thread_ts is None
    )
    # The DAG's own updates apply from here.
    harness.status.transition(backfill_id, BackfillState.RUNNING, detail="wave 1 of 2")
    # Every later delivery is a duplicate.
    assert harness.invoke_lambda(event, request_id="third")["results"][0]["disposition"] == "duplicate"


@pytest.mark.parametrize(
    ("lost", "reported"),
    [
        ("TRIGGERED", True),  # the result file landed, the TRIGGERED write did not
        ("result", False),  # TRIGGERED landed, the result file did not
        ("both", False),  # killed with both on the wire: neither landed
    ],
)
def test_killed_while_triggered_and_the_result_file_are_sent_side_by_side_the_retry_ends_both(
    trigger_harness: FaultHarness, aws_faults: AwsFaults, lost: str, reported: bool
) -> None:
    """TRIGGERED and the result file are sent side by side, after Airflow accepted the run:
    a crash may leave either without the other. Whichever landed is true (the run exists),
    and Lambda's retry ends with the run recorded and a result file that reports it."""
    harness = trigger_harness
    event = harness.upload(VALID)
    if lost in ("TRIGGERED", "both"):
        aws_faults.crash(harness.dynamodb, TRANSITION_WRITES, when=to_state("TRIGGERED"))
    if lost in ("result", "both"):
        aws_faults.crash(
            harness.s3, "PutObject", when=lambda params: params.get("Key", "").startswith("results/")
        )

    with pytest.raises(SimulatedCrash):
        harness.invoke_lambda(event, request_id=REQUEST)

    backfill_id = harness.only_record_id()
    record = harness.status.get(backfill_id)
    assert record.state is (BackfillState.RECEIVED if lost != "result" else BackfillState.TRIGGERED)
    assert dag_runs(harness) == [("backfill", backfill_id)]
    left = harness.result_or_none()
    assert (left is not None) == reported
    if left is not None:
        assert (left["outcome"], left["state"], left["dag_run_id"]) == ("accepted", "TRIGGERED", backfill_id)

    aws_faults.clear()
    answer = harness.invoke_lambda(event, request_id=REQUEST)

    assert [r["disposition"] for r in answer["results"]] == ["accepted"]
    record = harness.status.get(backfill_id)
    assert record.state is BackfillState.TRIGGERED and record.dag_run_id == backfill_id
    result = harness.result_file()
    assert (result["outcome"], result["state"], result["dag_run_id"]) == (
        "accepted",
        "TRIGGERED",
        backfill_id,
    )
    assert result["plan_uri"] == record.plan_uri and result["dag_run_url"] == record.dag_run_url
    assert len(harness.airflow.trigger_posts()) == 1 and len(harness.slack.messages) == 1
    assert harness.pagerduty.events == []
    # Every later delivery is a duplicate.
    assert harness.invoke_lambda(event, request_id="another")["results"][0]["disposition"] == "duplicate"


def test_killed_between_the_runs_creation_and_its_slack_message_the_retry_records_it_and_the_dag_tells(
    trigger_harness: FaultHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other side of posting Slack before TRIGGERED: an attempt that dies right after
    Airflow accepted the run, before its message. The retry records the run without posting
    (it cannot tell this case from a post that went out); the DAG's start finds no thread on
    the record and opens it with the whole picture, so the backfill is announced once."""
    from backfill_orchestrator.notify import Notifier

    harness = trigger_harness
    event = harness.upload(VALID)

    def crash(self: Notifier, *args: object, **kwargs: object) -> None:
        raise SimulatedCrash("killed before Slack")

    with monkeypatch.context() as patched:
        patched.setattr(Notifier, "open_thread", crash)
        with pytest.raises(SimulatedCrash):
            harness.invoke_lambda(event, request_id=REQUEST)
    backfill_id = harness.only_record_id()
    assert dag_runs(harness) == [("backfill", backfill_id)] and harness.slack.messages == []

    answer = harness.invoke_lambda(event, request_id=REQUEST)

    assert [r["disposition"] for r in answer["results"]] == ["accepted"]
    assert dag_runs(harness) == [("backfill", backfill_id)] and len(harness.airflow.trigger_posts()) == 1
    record = harness.status.get(backfill_id)
    assert record.state is BackfillState.TRIGGERED and record.slack_thread_ts is None
    assert (
        harness.slack.messages == []
    )  # left to the DAG's start (reporting.started: no thread -> full message)


def test_the_dag_starting_before_the_retry_keeps_its_state_and_gets_the_run_recorded(
    trigger_harness: FaultHarness, aws_faults: AwsFaults
) -> None:
    harness = trigger_harness
    event = harness.upload(VALID)
    aws_faults.crash(harness.dynamodb, TRANSITION_WRITES, when=to_state("TRIGGERED"))
    with pytest.raises(SimulatedCrash):
        harness.invoke_lambda(event, request_id=REQUEST)
    backfill_id = harness.only_record_id()
    stored_plan = plan_versions(harness, backfill_id)
    # The generic DAG starts meanwhile: RUNNING is accepted from RECEIVED.
    harness.status.transition(backfill_id, BackfillState.RUNNING, detail="wave 1 of 2")

    answer = harness.invoke_lambda(event, request_id=REQUEST)

    assert [r["disposition"] for r in answer["results"]] == ["accepted"]
    assert dag_runs(harness) == [("backfill", backfill_id)] and len(harness.airflow.trigger_posts()) == 1
    assert plan_versions(harness, backfill_id) == stored_plan
    record = harness.status.get(backfill_id)  # never moved back to TRIGGERED; the run is on the record
    assert record.state is BackfillState.RUNNING and record.dag_run_id == backfill_id and record.dag_run_url
    assert (
        record.plan_uri == f"s3://{harness.bucket}/backfills/{backfill_id}/plan.json" and record.plan_summary
    )
    assert harness.result_file()["state"] == "RUNNING"


@pytest.mark.parametrize("ahead", [BackfillState.RUNNING, BackfillState.SUCCEEDED, BackfillState.FAILED])
def test_a_first_trigger_never_moves_the_dags_state_back(
    trigger_harness: FaultHarness, ahead: BackfillState
) -> None:
    status = trigger_harness.status
    status.create("orders-fix-1a2b3c4d", detail="test")
    status.transition("orders-fix-1a2b3c4d", ahead, detail="the DAG, before the trigger recorded its run")
    run = TriggerResult(DagRun("backfill", "orders-fix-1a2b3c4d", "running"), created=True)
    planned = {
        "plan_uri": "s3://b/backfills/orders-fix-1a2b3c4d/plan.json",
        "config_uri": "s3://b/incoming/x.yaml?versionId=v1",
    }

    record_triggered(
        SimpleNamespace(status=status),
        backfill_id="orders-fix-1a2b3c4d",
        dag_id="backfill",
        run=run,
        run_url="http://airflow/run",
        attempt=1,
        attributes=planned,
    )

    record = status.get("orders-fix-1a2b3c4d")
    assert record.state is ahead and [h["state"] for h in record.history] == ["RECEIVED", str(ahead)]
    assert (record.dag_run_id, record.dag_run_url, record.plan_uri) == (
        "orders-fix-1a2b3c4d",
        "http://airflow/run",
        planned["plan_uri"],
    )
    # A record the trigger itself left moves on; anything else is refused.
    status.create("orders-new-1a2b3c4d", detail="test")
    record_triggered(
        SimpleNamespace(status=status),
        backfill_id="orders-new-1a2b3c4d",
        dag_id="backfill",
        run=run,
        run_url=None,
        attempt=1,
        attributes=planned,
    )
    assert status.get("orders-new-1a2b3c4d").state is BackfillState.TRIGGERED
    with pytest.raises(TransitionRejectedError):
        record_triggered(
            SimpleNamespace(status=status),
            backfill_id="orders-new-1a2b3c4d",
            dag_id="backfill",
            run=run,
            run_url=None,
            attempt=1,
            attributes=planned,
        )


def test_throttled_triggered_write_records_failed_pages_raises_and_the_retry_records_the_run(
    trigger_harness: FaultHarness, aws_faults: AwsFaults
) -> None:
    harness = trigger_harness
    event = harness.upload(VALID)
    aws_faults.throttle(harness.dynamodb, TRANSITION_WRITES, when=to_state("TRIGGERED"))

    with pytest.raises(TriggerFailedError) as raised:
        harness.invoke_lambda(event, request_id=REQUEST)

    backfill_id = raised.value.failures[0].backfill_id
    # botocore's standard mode sent the TRIGGERED write 1 + 8 times first (AWS_CLIENT_CONFIG: max_attempts 8 retries).
    assert aws_faults.attempts(TRANSITION_WRITES, faulted=True) == 9
    record = harness.status.get(backfill_id)
    assert record.state is BackfillState.FAILED and record.retryable
    assert "StatusStoreError" in record.reason and "ProvisionedThroughputExceeded" in record.reason
    assert dag_runs(harness) == [("backfill", backfill_id)]
    assert harness.result_file()["outcome"] == "failed" and harness.result_file()["retrying"]
    assert [(e["event_action"], e["dedup_key"]) for e in harness.pagerduty.events] == [
        ("trigger", backfill_id)
    ]

    aws_faults.clear()  # DynamoDB recovers; Lambda retries a minute later
    answer = harness.invoke_lambda(event, request_id=REQUEST)

    assert [r["disposition"] for r in answer["results"]] == ["accepted"]
    assert dag_runs(harness) == [("backfill", backfill_id)]
    record = harness.status.get(backfill_id)
    assert (
        record.state is BackfillState.TRIGGERED and record.dag_run_id == backfill_id and not record.retryable
    )
    assert harness.result_file()["outcome"] == "accepted"
    assert harness.pagerduty.incidents == {backfill_id: "resolved"}


def test_throttled_failed_write_too_the_attempt_raises_and_its_retry_takes_over(
    trigger_harness: FaultHarness, aws_faults: AwsFaults
) -> None:
    harness = trigger_harness
    event = harness.upload(VALID)
    aws_faults.throttle(harness.dynamodb, TRANSITION_WRITES, when=to_state("TRIGGERED", "FAILED"))

    with pytest.raises(TriggerFailedError):
        harness.invoke_lambda(event, request_id=REQUEST)

    backfill_id = harness.only_record_id()
    record = harness.status.get(backfill_id)
    assert (
        record.state is BackfillState.RECEIVED and record.lease_holder == REQUEST
    )  # nothing recorded the failure
    result = harness.result_file()
    assert (
        result["outcome"] == "failed" and result["retrying"]
    )  # ... but the user is told, and it is retried:
    (page,) = harness.pagerduty.events
    assert page["event_action"] == "trigger" and "status_write_error" in page["payload"]["custom_details"]

    aws_faults.clear()
    answer = harness.invoke_lambda(
        event, request_id=REQUEST
    )  # inside the lease: only the same request id may take over

    assert [r["disposition"] for r in answer["results"]] == ["accepted"]
    assert dag_runs(harness) == [("backfill", backfill_id)]
    record = harness.status.get(backfill_id)
    assert record.state is BackfillState.TRIGGERED and record.attempts == 2
    assert harness.result_file()["outcome"] == "accepted"
    assert harness.pagerduty.incidents == {backfill_id: "resolved"}


def test_the_dag_finishing_before_the_retry_still_gets_the_user_a_result_file(
    trigger_harness: FaultHarness, aws_faults: AwsFaults
) -> None:
    harness = trigger_harness
    event = harness.upload(VALID)
    aws_faults.crash(harness.dynamodb, TRANSITION_WRITES, when=to_state("TRIGGERED"))
    with pytest.raises(SimulatedCrash):
        harness.invoke_lambda(event, request_id=REQUEST)
    backfill_id = harness.only_record_id()
    harness.status.transition(
        backfill_id, BackfillState.SUCCEEDED, detail="2 steps succeeded"
    )  # the DAG, from RECEIVED

    answer = harness.invoke_lambda(event, request_id=REQUEST)

    assert [r["disposition"] for r in answer["results"]] == ["accepted"]
    result = harness.result_file()
    assert result["outcome"] == "accepted" and result["state"] == "SUCCEEDED"
    assert dag_runs(harness) == [("backfill", backfill_id)] and len(harness.airflow.trigger_posts()) == 1
    record = harness.status.get(backfill_id)  # the run, read back by its id, is on the record
    assert record.state is BackfillState.SUCCEEDED and record.dag_run_id == backfill_id and record.dag_run_url
    assert result["dag_run_url"] == record.dag_run_url
    # Once written, the same retry again is a plain duplicate.
    assert harness.invoke_lambda(event, request_id=REQUEST)["results"][0]["disposition"] == "duplicate"


def test_a_result_file_that_cannot_be_written_raises_and_the_retry_writes_it(
    trigger_harness: FaultHarness, aws_faults: AwsFaults
) -> None:
    harness = trigger_harness
    event = harness.upload(VALID)
    results_key = lambda params: params.get("Key", "").startswith("results/")  # noqa: E731
    aws_faults.throttle(harness.s3, "PutObject", when=results_key)

    with pytest.raises(TriggerFailedError):
        harness.invoke_lambda(event, request_id=REQUEST)

    backfill_id = harness.only_record_id()
    assert harness.status.get(backfill_id).state is BackfillState.TRIGGERED
    assert harness.result_or_none() is None
    assert dag_runs(harness) == [("backfill", backfill_id)]

    aws_faults.clear()
    answer = harness.invoke_lambda(event, request_id=REQUEST)

    assert [r["disposition"] for r in answer["results"]] == ["accepted"]
    result = harness.result_file()
    assert (
        result["outcome"] == "accepted"
        and result["state"] == "TRIGGERED"
        and result["dag_run_id"] == backfill_id
    )
    assert len(harness.airflow.trigger_posts()) == 1 and len(harness.slack.messages) == 1


def test_a_claim_that_cannot_be_written_raises_with_a_result_file_and_the_retry_starts_afresh(
    trigger_harness: FaultHarness, aws_faults: AwsFaults
) -> None:
    harness = trigger_harness
    event = harness.upload(VALID)
    aws_faults.throttle(harness.dynamodb, "PutItem")

    with pytest.raises(TriggerFailedError):
        harness.invoke_lambda(event, request_id=REQUEST)

    assert harness.dynamodb.scan(TableName="backfill-status-test")["Items"] == []
    result = harness.result_file()
    assert result["outcome"] == "failed" and result["state"] is None and result["retrying"]
    assert "ProvisionedThroughputExceeded" in result["reason"] and "status_command" not in result
    (page,) = harness.pagerduty.events
    assert page["event_action"] == "trigger" and page["dedup_key"].startswith("upload-")
    assert harness.airflow.requests == []

    aws_faults.clear()
    answer = harness.invoke_lambda(event, request_id=REQUEST)

    assert [r["disposition"] for r in answer["results"]] == ["accepted"]
    assert len(harness.airflow.runs) == 1 and harness.result_file()["outcome"] == "accepted"
