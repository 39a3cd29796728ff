"""Issue 12, class 6: an S3 -> EventBridge "Object Created" event is handled exactly like the S3
notification of the same upload, and an event that announces no upload raises (so Lambda sends
it to the on-failure queue) and is counted as `MalformedEvents` (which has an alarm)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from backfill_orchestrator.status import BackfillState
from backfill_orchestrator.trigger import Disposition, MalformedEventError, TriggerFailedError
from tests.support.lambda_context import FakeLambdaContext
from tests.support.trigger import VALID, TriggerHarness

KEY = "incoming/team a/minimal-batch.yaml"


def eventbridge_event(harness: TriggerHarness, notification: dict[str, Any]) -> dict[str, Any]:
    """The EventBridge event S3 sends for the upload `notification` announces (same object
    version, etag and sequencer; the key is URL-encoded in both)."""
    obj = notification["Records"][0]["s3"]["object"]
    detail_object = {
        "key": obj["key"],
        "size": obj["size"],
        "etag": obj["eTag"],
        "sequencer": obj["sequencer"],
    }
    if "versionId" in obj:
        detail_object["version-id"] = obj["versionId"]
    return {
        "version": "0",
        "id": "0f1e2d3c-0000-4000-8000-000000000001",
        "detail-type": "Object Created",
        "source": "aws.s3",
        "account": "123456789012",
        "time": "2021-06-14T09:30:00Z",
        "region": "us-east-1",
        "resources": [f"arn:aws:s3:::{harness.bucket}"],
        "detail": {
            "version": "0",
            "bucket": {"name": harness.bucket},
            "object": detail_object,
            "request-id": "N4N7GDK58NMKJ12R",
            "requester": "123456789012",
            "source-ip-address": "127.0.0.1",
            "reason": "PutObject",
        },
    }


@pytest.fixture
def harness(mocked_aws: None) -> Iterator[TriggerHarness]:
    with ExitStack() as stack:
        yield TriggerHarness(stack)


def test_an_eventbridge_object_created_event_triggers_like_the_s3_notification(
    harness: TriggerHarness,
) -> None:
    notification = harness.upload(VALID, key=KEY)
    event = eventbridge_event(harness, notification)

    (result,) = harness.invoke(event)

    assert result.disposition is Disposition.ACCEPTED and result.state == "TRIGGERED"
    assert result.source_uri == f"s3://{harness.bucket}/{KEY}"  # '+' decoded to a space
    record = harness.status.get(result.backfill_id)
    assert record.state is BackfillState.TRIGGERED
    assert list(harness.airflow.runs) == [("backfill", result.backfill_id)]
    assert harness.result_file(KEY)["outcome"] == "accepted"
    assert harness.counted("Triggered") == 1 and harness.counted("MalformedEvents") == 0
    # The S3 notification of the same upload is the same upload (redelivery): nothing more.
    (again,) = harness.invoke(notification)
    assert again.disposition is Disposition.DUPLICATE and again.backfill_id == result.backfill_id
    assert len(harness.airflow.runs) == 1
    # And redriven from the on-failure queue (a Lambda destination record) it is the same too.
    (redriven,) = harness.invoke({"requestPayload": event, "responsePayload": {}})
    assert redriven.disposition is Disposition.DUPLICATE and len(harness.airflow.runs) == 1


@pytest.mark.parametrize(
    "event",
    [
        {"detail-type": "Scheduled Event", "source": "aws.events", "detail": {}},
        {"hello": "world"},
        {"Records": [{"eventSource": "aws:sqs", "body": "{}"}]},
        "not even an object",
    ],
    ids=["scheduled-event", "unknown-shape", "sqs-record", "a-string"],
)
def test_an_event_announcing_no_upload_raises_and_is_counted(harness: TriggerHarness, event: Any) -> None:
    with pytest.raises(MalformedEventError):
        harness.invoke(event)
    assert harness.counted("MalformedEvents") == 1
    assert harness.airflow.runs == {} and harness.slack.messages == []


def test_a_malformed_record_beside_a_valid_one_does_not_stop_it_but_still_fails_the_event(
    harness: TriggerHarness,
) -> None:
    notification = harness.upload(VALID)
    notification["Records"].append({"eventSource": "aws:s3", "eventName": "ObjectRemoved:Delete", "s3": {}})

    with pytest.raises(MalformedEventError, match=r"record 1: not an ObjectCreated event"):
        harness.invoke(notification)

    assert len(harness.airflow.runs) == 1  # the valid upload was handled first
    assert harness.counted("MalformedEvents") == 1


def test_a_system_failure_wins_over_a_malformed_record_so_the_retry_is_for_the_failure(
    mocked_aws: None,
) -> None:
    with ExitStack() as stack:
        harness = TriggerHarness(stack, marquez_up=False)
        notification = harness.upload(VALID)
        notification["Records"].append({"eventSource": "aws:sqs"})
        with pytest.raises(TriggerFailedError):
            harness.invoke(notification)
        assert harness.counted("MalformedEvents") == 1 and harness.counted("Failed") == 1


def test_the_lambda_handler_raises_on_an_unknown_event_and_publishes_the_metric(
    mocked_aws: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from backfill_orchestrator.trigger import handler as handler_module

    with ExitStack() as stack:
        harness = TriggerHarness(stack)
        for name, value in harness.env.items():
            monkeypatch.setenv(name, value)
        handler_module.metrics.clear_metrics()
        log_handler = handler_module.logger.registered_handler
        previous, log_handler.stream = log_handler.stream, io.StringIO()
        try:
            with (
                handler_module.trigger_wiring(),
                pytest.raises(MalformedEventError),
            ):  # Lambda retries it, then the on-failure queue
                handler_module.handler(
                    {"detail-type": "Object Deleted", "source": "aws.s3"}, FakeLambdaContext()
                )
        finally:
            logs, log_handler.stream = log_handler.stream.getvalue(), previous
    (emf,) = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    assert emf["MalformedEvents"] == [1.0]  # flushed although the handler raised
    assert "announces no upload" in logs and "Object Deleted" in logs
