"""Issue 12, class 5: every external call draws on the invocation's remaining time.

The handler gives Marquez and Airflow calls the Lambda's remaining time minus
FINISH_RESERVE_SECONDS; when that runs out the attempt records FAILED (retryable) with the
reason, writes the result file, pages and raises, well before Lambda would kill it."""

from __future__ import annotations

import time

import pytest

from backfill_orchestrator.status import BackfillState
from backfill_orchestrator.trigger import TriggerFailedError
from backfill_orchestrator.trigger.handler import FINISH_RESERVE_SECONDS
from tests.faults.harness import FaultHarness
from tests.faults.toolkit import FaultRule
from tests.support.trigger import VALID

REQUEST = "5d2e7b90-0000-4000-8000-00000000000d"
LINEAGE = r"^/api/v1/lineage\?"
DAG_RUNS = r"/dagRuns$"


def invoke_with_budget(
    harness: FaultHarness, event: dict, budget: float
) -> tuple[float, BaseException | None]:
    """Invoke with `budget` seconds for external calls (the remaining time the handler sees
    is that plus the reserve); returns the elapsed time and what was raised."""
    started = time.monotonic()
    try:
        harness.invoke_lambda(event, request_id=REQUEST, remaining_seconds=FINISH_RESERVE_SECONDS + budget)
    except TriggerFailedError as error:
        return time.monotonic() - started, error
    return time.monotonic() - started, None


def test_marquez_slower_than_the_budget_fails_within_it_pages_raises_and_the_retry_succeeds(
    trigger_harness: FaultHarness,
) -> None:
    harness = trigger_harness
    event = harness.upload(VALID)
    harness.marquez_proxy.add(FaultRule(method="GET", path=LINEAGE, delay=30))

    elapsed, raised = invoke_with_budget(harness, event, budget=1.5)

    assert isinstance(raised, TriggerFailedError)
    assert 1.4 <= elapsed < 1.5 + 5  # the budget, plus recording and telling; far from Lambda's deadline
    backfill_id = harness.only_record_id()
    record = harness.status.get(backfill_id)
    assert record.state is BackfillState.FAILED and record.retryable
    assert record.reason.startswith("MarquezTimeoutError: Marquez did not answer within 1.5 s")
    result = harness.result_file()
    assert result["outcome"] == "failed" and result["reason"] == record.reason and result["retrying"]
    assert [(e["event_action"], e["dedup_key"]) for e in harness.pagerduty.events] == [
        ("trigger", backfill_id)
    ]
    assert "FAILED" in harness.slack.messages[-1]["text"]
    assert harness.airflow.requests == []
    assert (
        len(harness.marquez_proxy.requests("GET", LINEAGE)) == 1
    )  # no retry after the read timed out at the deadline

    harness.marquez_proxy.clear()  # Marquez is fast again when Lambda retries
    elapsed, raised = invoke_with_budget(harness, event, budget=30)

    assert raised is None
    assert harness.status.get(backfill_id).state is BackfillState.TRIGGERED
    assert list(harness.airflow.runs) == [("backfill", backfill_id)]
    assert harness.pagerduty.incidents == {backfill_id: "resolved"}
    assert harness.result_file()["outcome"] == "accepted"


def test_airflow_slower_than_the_budget_fails_and_the_retry_finds_the_run_it_created_late(
    trigger_harness: FaultHarness,
) -> None:
    harness = trigger_harness
    event = harness.upload(VALID)
    harness.airflow_proxy.add(FaultRule(method="POST", path=DAG_RUNS, delay=7, times=1))  # accepted, but late

    elapsed, raised = invoke_with_budget(harness, event, budget=4)

    assert isinstance(raised, TriggerFailedError) and elapsed < 4 + 5
    backfill_id = harness.only_record_id()
    record = harness.status.get(backfill_id)
    assert record.state is BackfillState.FAILED and record.retryable
    assert record.reason.startswith("AirflowTimeoutError: Airflow did not answer within 4.0 s")
    assert harness.result_file()["outcome"] == "failed"
    assert [e["event_action"] for e in harness.pagerduty.events] == ["trigger"]
    # Airflow creates the run after the trigger gave up on it.
    for _ in range(100):
        if harness.airflow.runs:
            break
        time.sleep(0.1)
    assert list(harness.airflow.runs) == [("backfill", backfill_id)]

    _, raised = invoke_with_budget(harness, event, budget=30)  # Lambda's retry

    assert raised is None
    assert list(harness.airflow.runs) == [("backfill", backfill_id)]  # read back, not triggered twice
    assert [p["status"] for p in harness.airflow.trigger_posts()] == [200]  # the takeover asks for it first
    record = harness.status.get(backfill_id)
    assert record.state is BackfillState.TRIGGERED and "existed already" in record.history[-1]["detail"]
    assert harness.pagerduty.incidents == {backfill_id: "resolved"}


def test_a_retry_after_past_the_budget_is_not_waited_for(trigger_harness: FaultHarness) -> None:
    harness = trigger_harness
    harness.marquez_proxy.add(
        FaultRule(method="GET", path=LINEAGE, status=503, headers={"Retry-After": "120"})
    )

    elapsed, raised = invoke_with_budget(harness, harness.upload(VALID), budget=5)

    assert isinstance(raised, TriggerFailedError) and elapsed < 3
    record = harness.status.get(harness.only_record_id())
    assert record.reason.startswith("MarquezTimeoutError: Marquez did not answer within 5.0 s")
    assert "a retry would wait 120.0 s" in record.reason


def test_dropped_connections_within_the_budget_are_retried(trigger_harness: FaultHarness) -> None:
    harness = trigger_harness
    harness.marquez_proxy.add(FaultRule(method="GET", path=LINEAGE, drop=True, times=2))  # then it recovers

    elapsed, raised = invoke_with_budget(harness, harness.upload(VALID), budget=30)

    assert raised is None
    assert [r["rule"] for r in harness.marquez_proxy.requests("GET", LINEAGE)][:3] == ["drop", "drop", None]
    assert harness.status.get(harness.only_record_id()).state is BackfillState.TRIGGERED
    assert harness.pagerduty.events == []


def test_no_budget_left_sends_nothing_and_still_records_the_failure(trigger_harness: FaultHarness) -> None:
    harness = trigger_harness

    _, raised = invoke_with_budget(harness, harness.upload(VALID), budget=0)

    assert isinstance(raised, TriggerFailedError)
    assert harness.marquez_proxy.requests() == [] and harness.airflow.requests == []
    record = harness.status.get(harness.only_record_id())
    assert record.state is BackfillState.FAILED and record.retryable and "not sent" in record.reason
    assert harness.result_file()["outcome"] == "failed"
    assert [e["event_action"] for e in harness.pagerduty.events] == ["trigger"]


def test_mwaa_backoff_that_would_pass_the_deadline_is_not_waited_for() -> None:
    """MWAA's retry loop (botocore Stubber: RestApiServerException, then nothing) stops at the
    budget: after the first failure, a 0.5 s backoff does not fit in 0.3 s."""
    import boto3
    from botocore.stub import Stubber

    from backfill_orchestrator.airflow_api import AirflowTimeoutError, MwaaAirflowClient
    from backfill_orchestrator.deadline import Deadline, deadline_scope

    client = boto3.client("mwaa", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    sleeps: list[float] = []
    with Stubber(client) as stubber:
        stubber.add_client_error(
            "invoke_rest_api",
            service_error_code="RestApiServerException",
            http_status_code=400,
            modeled_fields={"RestApiStatusCode": 503, "RestApiResponse": {"detail": "busy"}},
        )
        mwaa = MwaaAirflowClient("data-prod", mwaa_client=client, sleep=sleeps.append)
        with (
            deadline_scope(Deadline.after(0.3)),
            pytest.raises(AirflowTimeoutError, match="did not answer within 0.3 s"),
        ):
            mwaa.trigger_dag_run("backfill", run_id="b-1", conf={"backfill_id": "b-1"})
        stubber.assert_no_pending_responses()
    assert sleeps == []


def test_telling_people_never_outlasts_the_invocation(trigger_harness: FaultHarness) -> None:
    """With 4 s left: no budget for Marquez (the reserve is 20 s), and a PagerDuty that hangs;
    the page is cut at the end margin, and the attempt still records, writes and raises."""
    harness = trigger_harness
    harness.pagerduty_proxy.add(FaultRule(method="POST", delay=30))
    started = time.monotonic()

    with pytest.raises(TriggerFailedError):
        harness.invoke_lambda(harness.upload(VALID), request_id=REQUEST, remaining_seconds=4)

    assert time.monotonic() - started < 4  # Lambda would have killed it at 4 s
    record = harness.status.get(harness.only_record_id())
    assert record.state is BackfillState.FAILED and record.retryable and not record.pagerduty_open
    assert harness.result_file()["outcome"] == "failed"
    assert len(harness.pagerduty_proxy.requests("POST")) == 1 and harness.pagerduty.events == []


def test_a_run_airflow_accepted_late_and_already_running_is_recorded_by_the_retry(
    trigger_harness: FaultHarness,
) -> None:
    """As above, but the late run starts before Lambda's retry: the DAG posts RUNNING (allowed
    from FAILED: a cleared run). The retry reads the run back, records its id and link, tells
    the user it was accepted and resolves the page."""
    harness = trigger_harness
    event = harness.upload(VALID)
    harness.airflow_proxy.add(FaultRule(method="POST", path=DAG_RUNS, delay=7, times=1))
    _, raised = invoke_with_budget(harness, event, budget=4)
    assert isinstance(raised, TriggerFailedError)
    backfill_id = harness.only_record_id()
    for _ in range(100):
        if harness.airflow.runs:
            break
        time.sleep(0.1)
    harness.status.transition(backfill_id, BackfillState.RUNNING, detail="wave 1 of 5")  # the DAG

    _, raised = invoke_with_budget(harness, event, budget=30)

    assert raised is None
    record = harness.status.get(backfill_id)
    assert record.state is BackfillState.RUNNING and not record.retryable
    assert record.dag_run_id == backfill_id and record.dag_run_url.endswith(f"/runs/{backfill_id}")
    result = harness.result_file()
    assert (
        result["outcome"] == "accepted"
        and result["state"] == "RUNNING"
        and result["dag_run_url"] == record.dag_run_url
    )
    assert (
        list(harness.airflow.runs) == [("backfill", backfill_id)]
        and len(harness.airflow.trigger_posts()) == 1
    )
    assert harness.pagerduty.incidents == {backfill_id: "resolved"}
