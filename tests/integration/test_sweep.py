"""The periodic sweep (a schedule invokes the trigger with `{"source": "backfill.sweep"}`): a
backfill that ended without releasing its claims (its DAG crashed before `finish`) no longer
holds back the queued one behind it; on moto and the Airflow double. (A live record whose run
ended in Airflow: tests/faults/test_sweep_reconciles_ended_runs.py.)"""

from __future__ import annotations

import json
from typing import Any

import pytest

from backfill_orchestrator.status import BackfillState
from backfill_orchestrator.trigger import handler as trigger_handler
from tests.support.lambda_context import FakeLambdaContext
from tests.support.trigger import CLAIMS, TriggerHarness, second_config


def raw_claims(harness: TriggerHarness) -> dict[str, list[str]]:
    """The holder items the claims table keeps, live or not (holders() hides the stale ones)."""
    page = harness.dynamodb.query(
        TableName=CLAIMS,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "holder"}},
    )
    return {
        kind: [item["backfill_id"]["S"] for item in page["Items"] if item["kind"]["S"] == kind]
        for kind in ("active", "queued")
    }


def start_documents(harness: TriggerHarness, backfill_id: str) -> list[str]:
    listed = harness.s3.list_objects_v2(Bucket=harness.bucket, Prefix=f"control/{backfill_id}/")
    return [o["Key"] for o in listed.get("Contents", []) if o["Key"].split("/")[-1].startswith("start-")]


def test_the_sweep_starts_a_queued_backfill_whose_blocker_crashed_without_releasing(
    lifecycle: TriggerHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = lifecycle.submit().backfill_id
    second = lifecycle.submit(second_config(), key="incoming/second.yaml").backfill_id
    assert lifecycle.status.get(second).state is BackfillState.QUEUED
    # nothing to start while the first is live: the sweep writes nothing
    assert lifecycle.wiring.sweep().started == []
    assert start_documents(lifecycle, second) == []
    # the first ends without releasing (its DAG's finish never ran): its claim is still stored
    lifecycle.status.transition(
        first, BackfillState.FAILED, detail="worker lost", attributes={"retryable": False}
    )
    assert raw_claims(lifecycle) == {"active": [first], "queued": [second]}

    # the schedule's event, through the real Lambda handler
    for name, value in lifecycle.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    with trigger_handler.trigger_wiring():  # a container built from the environment, as Lambda's
        answer: dict[str, Any] = trigger_handler.handler(
            {"source": "backfill.sweep"}, FakeLambdaContext(request_id="sweep-request")
        )
    assert answer == {"sweep": {"finished": [], "started": [second]}}
    assert raw_claims(lifecycle) == {"active": [], "queued": [second]}  # the stale claim is gone
    (key,) = start_documents(lifecycle, second)
    document = json.loads(lifecycle.s3.get_object(Bucket=lifecycle.bucket, Key=key)["Body"].read())
    assert document["action"] == "start" and document["requested_by"] == "system:backfill-orchestrator"

    # the start document's S3 event reaches the trigger like any upload: the second runs
    body = lifecycle.s3.get_object(Bucket=lifecycle.bucket, Key=key)["Body"].read()
    (started,) = lifecycle.invoke(lifecycle.upload(body, key=key))
    assert started.disposition == "accepted", started
    assert lifecycle.status.get(second).state is BackfillState.TRIGGERED
    assert ("backfill", second) in lifecycle.airflow.runs
    assert raw_claims(lifecycle) == {"active": [second], "queued": []}
    # a later sweep finds nothing more to start
    assert lifecycle.wiring.sweep().started == []


def test_without_a_claims_table_the_sweep_does_nothing(mocked_aws: None) -> None:
    from contextlib import ExitStack

    with ExitStack() as stack:
        harness = TriggerHarness(stack)
        assert harness.wiring.sweep().started == []


def test_a_sweep_event_is_not_mistaken_for_an_upload() -> None:
    from backfill_orchestrator.trigger.events import is_sweep

    assert is_sweep({"source": "backfill.sweep"})
    assert not is_sweep({"source": "aws.s3", "detail-type": "Object Created"})
    assert not is_sweep({"Records": []})
    assert not is_sweep({"source": "backfill.sweep", "detail-type": "Object Created"})


def test_the_template_invokes_the_trigger_with_the_sweep_event_every_5_minutes() -> None:
    from backfill_orchestrator.trigger.events import is_sweep
    from tests.support.aws import template

    resources = template()["Resources"]
    rule = resources["ClaimsSweepRule"]["Properties"]
    assert rule["ScheduleExpression"] == "rate(5 minutes)"
    (target,) = rule["Targets"]
    assert target["Arn"] == {"GetAtt": "TriggerFunction.Arn"} and is_sweep(json.loads(target["Input"]))
    permission = resources["TriggerInvokeFromSweepPermission"]["Properties"]
    assert permission["Principal"] == "events.amazonaws.com" and permission["SourceArn"] == {
        "GetAtt": "ClaimsSweepRule.Arn"
    }
