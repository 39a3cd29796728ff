"""A backfill's documents are stored before anything is triggered (for a run: `plan.json` alone;
the config is named by its uploaded version, not copied, and the run writes `plan.html`; a
dry run, an approval or an unversioned upload adds a picture or a copy, sent side by side).
One failing past botocore's retries fails the attempt before anything is triggered, and
Lambda's retry stores it and triggers exactly once."""

from __future__ import annotations

import pytest

from backfill_orchestrator.status import BackfillState
from backfill_orchestrator.trigger import TriggerFailedError
from tests.faults.harness import FaultHarness
from tests.faults.toolkit import AwsFaults
from tests.support.trigger import VALID

REQUEST = "8f5c1a2e-0000-4000-8000-000000000002"


def test_a_document_that_cannot_be_stored_fails_the_attempt_and_the_retry_triggers_once(
    trigger_harness: FaultHarness, aws_faults: AwsFaults
) -> None:
    harness = trigger_harness
    event = harness.upload(VALID)
    aws_faults.throttle(
        harness.s3, "PutObject", when=lambda params: params.get("Key", "").endswith("/plan.json")
    )

    with pytest.raises(TriggerFailedError):
        harness.invoke_lambda(event, request_id=REQUEST)

    backfill_id = harness.only_record_id()
    record = harness.status.get(backfill_id)
    assert record.state is BackfillState.FAILED and record.retryable and "plan.json" in record.reason
    assert record.plan_uri is None  # PLANNED was never recorded
    assert aws_faults.attempts("PutObject", faulted=True) == 9  # plan.json, 1 + 8 botocore attempts
    assert harness.airflow.requests == [] and harness.result_file()["outcome"] == "failed"

    aws_faults.clear()
    answer = harness.invoke_lambda(event, request_id=REQUEST)

    assert [r["disposition"] for r in answer["results"]] == ["accepted"]
    record = harness.status.get(backfill_id)
    assert record.state is BackfillState.TRIGGERED and len(harness.airflow.runs) == 1
    harness.s3.head_object(Bucket=harness.bucket, Key=f"backfills/{backfill_id}/plan.json")
    assert len(harness.slack.messages) == 2  # the failure, then the run, in its thread
    assert harness.slack.messages[1]["thread_ts"] == harness.slack.messages[0]["ts"]
    assert (
        record.config_uri.startswith(f"s3://{harness.bucket}/incoming/")
        and "?versionId=" in record.config_uri
    )
