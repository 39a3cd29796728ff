"""Issue 12, class 2: a status record never outgrows DynamoDB's 400 KB item limit.

The record keeps counts and the first errors/steps; the full lists are in the result file and
the plan document in S3. A size problem that cannot go away on retry is the user's refusal
(REJECTED, located), never a retryable failure or a page."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from backfill_local.marquez_double import MarquezDouble, run_events
from backfill_orchestrator.status import BackfillState
from backfill_orchestrator.status.limits import MAX_RECORD_ERRORS, MAX_SUMMARY_STEPS
from tests.faults.harness import FaultHarness
from tests.faults.toolkit import TRANSITION_WRITES, AwsFaults, to_state
from tests.support.trigger import BUCKET, VALID

ITEM_LIMIT = 400_000
WIDE_JOBS = 10_000


def many_bad_dates(count: int) -> bytes:
    dates = ", ".join(["2021-06-31"] * count)  # 31 June does not exist
    return (
        b'version: 1\nname: many-bad-dates\nowner: "@jane"\nmode: batch\n'
        b"jobs: [{namespace: food_delivery, name: etl_orders}]\n" + f"dates: [{dates}]\n".encode()
    )


def test_ten_thousand_invalid_dates_are_rejected_with_a_bounded_record_and_every_error_in_the_result(
    trigger_harness: FaultHarness,
) -> None:
    harness = trigger_harness
    event = harness.upload(many_bad_dates(10_000), key="incoming/bad-dates.yaml")

    answer = harness.invoke_lambda(event, request_id="req-bad-dates")  # returns: no retry

    (result,) = answer["results"]
    assert result["disposition"] == "rejected" and not result["retry"]
    document = harness.result_file("incoming/bad-dates.yaml")
    assert document["outcome"] == "rejected" and len(document["errors"]) == 10_000
    assert document["errors"][9_999] == {
        "location": "dates[9999]",
        "message": "not a real calendar date: 2021-06-31",
    }
    record = harness.status.get(document["status_id"])
    assert record.state is BackfillState.REJECTED
    assert len(record.errors) == MAX_RECORD_ERRORS and record.errors_total == 10_000
    assert record.errors[0] == {"location": "dates[0]", "message": "not a real calendar date: 2021-06-31"}
    assert harness.item_size(document["status_id"]) < 20_000
    assert harness.pagerduty.events == [] and harness.airflow.requests == []
    (message,) = harness.slack.messages
    assert "10000 errors" in message["text"]


@pytest.fixture
def wide_lineage_harness(mocked_aws: None, fast_aws_retries: None) -> Iterator[FaultHarness]:
    """Marquez knows one root job whose output 10,000 jobs read, with realistic long names."""
    events = run_events("warehouse", "ingest_orders_raw", outputs=["orders_raw"])
    for i in range(WIDE_JOBS):
        events += run_events(
            "warehouse",
            f"reporting_downstream_consumer_of_orders_{i:05d}",
            inputs=["orders_raw"],
            outputs=[f"report_{i:05d}"],
        )
    with ExitStack() as stack:
        # A deployment whose Airflow maps more than 10,000 reruns per round (the preflight refuses
        # plans over AIRFLOW_MAX_MAP_LENGTH, 1024 by default).
        harness = FaultHarness(stack, marquez_up=False, env={"AIRFLOW_MAX_MAP_LENGTH": "20000"})
        harness.marquez = stack.enter_context(MarquezDouble(events=events, port=harness.marquez_port))
        yield harness


def test_a_ten_thousand_job_plan_is_triggered_with_a_bounded_record_and_the_full_plan_in_s3(
    wide_lineage_harness: FaultHarness,
) -> None:
    harness = wide_lineage_harness
    body = VALID.replace(
        b"{namespace: food_delivery, name: etl_orders}", b"{namespace: warehouse, name: ingest_orders_raw}"
    )
    answer = harness.invoke_lambda(harness.upload(body), request_id="req-wide")

    (result,) = answer["results"]
    assert result["disposition"] == "accepted" and not result["retry"]
    backfill_id = result["backfill_id"]
    record = harness.status.get(backfill_id)
    assert record.state is BackfillState.TRIGGERED
    summary = record.plan_summary
    assert summary["steps"] == WIDE_JOBS + 1 and summary["truncated"] is True and summary["waves_total"] == 2
    assert sum(len(wave) for wave in summary["waves"]) == MAX_SUMMARY_STEPS
    assert harness.item_size(backfill_id) < 30_000
    # The result file and the plan document have every step.
    document = harness.result_file()
    assert sum(len(wave) for wave in document["plan"]["waves"]) == WIDE_JOBS + 1
    plan = json.loads(
        harness.s3.get_object(Bucket=BUCKET, Key=f"backfills/{backfill_id}/plan.json")["Body"].read()
    )
    assert sum(len(wave["steps"]) for wave in plan["waves"]) == WIDE_JOBS + 1
    assert list(harness.airflow.runs) == [("backfill", backfill_id)]
    assert harness.pagerduty.events == []


def test_a_record_dynamodb_refuses_as_too_large_is_a_located_refusal_not_a_retry(
    trigger_harness: FaultHarness, aws_faults: AwsFaults
) -> None:
    harness = trigger_harness
    aws_faults.fail(
        harness.dynamodb,
        "UpdateItem",
        code="ValidationException",
        message="Item size has exceeded the maximum allowed size",
        when=to_state("PLANNED"),
    )

    # A dry run records its plan with PLANNED (a backfill that is triggered, with TRIGGERED: below).
    answer = harness.invoke_lambda(harness.upload(VALID + b"dry_run: true\n"), request_id="req-too-large")

    (result,) = answer["results"]
    assert result["disposition"] == "rejected" and not result["retry"]
    assert (
        aws_faults.attempts("UpdateItem", faulted=True) == 1
    )  # deterministic: botocore does not retry it either
    record = harness.status.get(result["backfill_id"])
    assert record.state is BackfillState.REJECTED and not record.retryable
    (error,) = record.errors
    assert error["location"] == "<root>" and "400 KB" in error["message"]
    document = harness.result_file()
    assert document["outcome"] == "rejected" and document["errors"] == record.errors
    assert harness.pagerduty.events == [] and harness.airflow.requests == []


def test_a_triggered_record_too_large_with_its_plan_summary_is_recorded_without_it(
    trigger_harness: FaultHarness, aws_faults: AwsFaults
) -> None:
    """The run exists once TRIGGERED is written, so a refusal there must not leave the record
    behind the run: TRIGGERED is written again without the plan's summary (plan.json has it)."""
    harness = trigger_harness
    aws_faults.fail(  # the whole-item put, then the update it falls back to (the same item)
        harness.dynamodb,
        TRANSITION_WRITES,
        code="ValidationException",
        times=2,
        message="Item size has exceeded the maximum allowed size",
        when=to_state("TRIGGERED"),
    )

    answer = harness.invoke_lambda(harness.upload(VALID), request_id="req-too-large")

    (result,) = answer["results"]
    assert result["disposition"] == "accepted" and not result["retry"]
    record = harness.status.get(result["backfill_id"])
    assert record.state is BackfillState.TRIGGERED and record.dag_run_id == result["backfill_id"]
    assert record.plan_summary is None and record.plan_uri and record.config_uri
    assert len(harness.airflow.runs) == 1 and harness.pagerduty.events == []
