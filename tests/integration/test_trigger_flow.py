"""The trigger end to end, in process: moto (S3, DynamoDB, Secrets Manager, SQS), the
Marquez double seeded with the food delivery sample, the strict Airflow 3 double, and the
local Slack/PagerDuty receivers, all on 127.0.0.1 (`tests.support.trigger.TriggerHarness`)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime
from typing import Any

import pytest

from backfill_orchestrator.contracts import RunConf
from backfill_orchestrator.documents import read_text
from backfill_orchestrator.status import BackfillState
from backfill_orchestrator.trigger import Disposition, TriggerFailedError
from tests.support.lambda_context import FakeLambdaContext
from tests.support.trigger import (
    BUCKET,
    INVALID,
    REPO,
    TABLE,
    VALID,
    TriggerHarness,
    merge_events,
)


@pytest.fixture
def harness(mocked_aws: None) -> Iterator[TriggerHarness]:
    with ExitStack() as stack:
        yield TriggerHarness(stack)


# -- the happy path ---------------------------------------------------------------------------
def test_valid_config_yields_exactly_one_dag_run_with_the_right_conf(harness: TriggerHarness) -> None:
    event = harness.upload(VALID)
    version = event["Records"][0]["s3"]["object"]["versionId"]
    results = harness.invoke(event)

    assert [r.disposition for r in results] == [Disposition.ACCEPTED]
    backfill_id = results[0].backfill_id
    assert len(harness.airflow.runs) == 1
    run = harness.airflow.runs[("backfill", backfill_id)]
    # The DAG reads the upload's own version: no copy is stored.
    config_uri = f"s3://{BUCKET}/incoming/minimal-batch.yaml?versionId={version}"
    plan_uri = f"s3://{BUCKET}/backfills/{backfill_id}/plan.json"
    result_uri = f"s3://{BUCKET}/results/minimal-batch.yaml.result.json"
    assert run["conf"] == {
        "contract_version": 1,
        "backfill_id": backfill_id,
        "config_uri": config_uri,
        "plan_uri": plan_uri,
        "result_uri": result_uri,
        "attempt": 1,
    }
    # What the trigger sends is what the DAG reads, through the same contract.
    assert RunConf.from_conf(run["conf"]).result_uri == result_uri
    assert run["logical_date"] is None
    # The strict double saw the exact body: logical_date present and null, nothing else extra.
    (post,) = harness.airflow.trigger_posts("backfill")
    assert post["body"] == {"dag_run_id": backfill_id, "conf": run["conf"], "logical_date": None}

    # The config as uploaded, even once the key holds another; the plan is the planner's for
    # the food delivery sample.
    harness.s3.put_object(Bucket=BUCKET, Key="incoming/minimal-batch.yaml", Body=b"replaced")
    assert read_text(config_uri, s3_client=harness.s3).encode() == VALID
    assert "Contents" not in harness.s3.list_objects_v2(
        Bucket=BUCKET, Prefix=f"backfills/{backfill_id}/config"
    )
    plan = json.loads(
        harness.s3.get_object(Bucket=BUCKET, Key=f"backfills/{backfill_id}/plan.json")["Body"].read()
    )
    assert plan["backfill_id"] == backfill_id
    assert [step["id"] for step in plan["waves"][0]["steps"]] == ["etl_orders"]  # from the catalog

    record = harness.status.get(backfill_id)
    assert record.state is BackfillState.TRIGGERED
    assert [h["state"] for h in record.history] == ["RECEIVED", "TRIGGERED"]  # TRIGGERED carries the plan
    assert record.dag_run_id == backfill_id
    assert record.dag_run_url == f"{harness.airflow.url}/dags/backfill/runs/{backfill_id}"
    assert record.plan_uri == plan_uri

    result = harness.result_file()
    assert result["outcome"] == "accepted" and result["backfill_id"] == backfill_id
    assert result["plan_uri"] == plan_uri and result["dag_run_url"] == record.dag_run_url

    (message,) = harness.slack.messages
    assert message["channel_name"] == "#backfills" and message["thread_ts"] is None
    text = json.dumps(message["blocks"])
    assert backfill_id in text and "2021-06-04" in text and "Wave 1" in text
    assert record.dag_run_url in text and "/lineage/job/food_delivery/etl_orders" in text
    assert record.slack_thread_ts == message["ts"]
    assert harness.pagerduty.events == []
    assert harness.counted("Triggered") == 1 and harness.counted("Received") == 1


@pytest.mark.parametrize("version", [None, "null"])
def test_an_upload_without_a_version_to_name_is_copied_beside_its_plan(
    harness: TriggerHarness, version: str | None
) -> None:
    if version:  # written while versioning is suspended: the next upload replaces it
        harness.s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Suspended"})
    event = harness.upload(VALID)
    obj = event["Records"][0]["s3"]["object"]
    obj.pop("versionId", None)
    if version:
        obj["versionId"] = version
    [result] = harness.invoke(event)
    assert result.disposition is Disposition.ACCEPTED
    config_uri = f"s3://{BUCKET}/backfills/{result.backfill_id}/config.yaml"
    assert harness.airflow.runs[("backfill", result.backfill_id)]["conf"]["config_uri"] == config_uri
    assert harness.status.get(result.backfill_id).config_uri == config_uri
    assert read_text(config_uri, s3_client=harness.s3).encode() == VALID


def test_the_same_event_ten_times_yields_one_run_and_one_message(harness: TriggerHarness) -> None:
    event = harness.upload(VALID)
    dispositions = [harness.invoke(event)[0].disposition for _ in range(10)]

    assert dispositions == [Disposition.ACCEPTED] + [Disposition.DUPLICATE] * 9
    assert len(harness.airflow.runs) == 1
    assert len(harness.airflow.trigger_posts()) == 1
    assert len(harness.slack.messages) == 1
    assert harness.counted("Duplicates") == 9


def test_ten_copies_in_one_event_yield_one_run(harness: TriggerHarness) -> None:
    event = harness.upload(VALID)
    results = harness.invoke(merge_events(*[event] * 10))

    assert sum(r.disposition is Disposition.ACCEPTED for r in results) == 1
    assert len(harness.airflow.runs) == 1


def test_identical_reupload_triggers_nothing_and_says_already_known(harness: TriggerHarness) -> None:
    first = harness.invoke(harness.upload(VALID))[0]
    again = harness.invoke(harness.upload(VALID, key="incoming/again/same-config.yaml"))[0]

    assert again.disposition is Disposition.ALREADY_KNOWN and again.backfill_id == first.backfill_id
    assert len(harness.airflow.runs) == 1
    result = harness.result_file("incoming/again/same-config.yaml")
    assert result["outcome"] == "already_known" and result["state"] == "TRIGGERED"
    # The "already known" note is a reply in the backfill's thread.
    top, reply = harness.slack.messages
    assert reply["thread_ts"] == top["ts"]
    assert "already known" in json.dumps(reply["blocks"]) and "TRIGGERED" in reply["text"]
    # Redelivering the re-upload's event stays silent.
    assert (
        harness.invoke(harness.upload(VALID, key="incoming/again/same-config.yaml"))[0].disposition
        is Disposition.ALREADY_KNOWN
    )
    assert len(harness.slack.messages) == 3


def test_changing_the_name_runs_the_backfill_again(harness: TriggerHarness) -> None:
    harness.invoke(harness.upload(VALID))
    renamed = VALID.replace(b"name: etl-orders-0604", b"name: etl-orders-0604-b")
    result = harness.invoke(harness.upload(renamed, key="incoming/rerun.yaml"))[0]

    assert result.disposition is Disposition.ACCEPTED
    assert len(harness.airflow.runs) == 2


def test_dry_run_plans_and_stores_but_triggers_nothing(harness: TriggerHarness) -> None:
    result = harness.invoke(harness.upload(VALID + b"dry_run: true\n"))[0]

    assert result.disposition is Disposition.DRY_RUN and result.state == "PLANNED"
    assert harness.airflow.requests == []
    assert harness.status.get(result.backfill_id).state is BackfillState.PLANNED
    assert harness.result_file()["outcome"] == "dry_run"
    harness.s3.head_object(Bucket=BUCKET, Key=f"backfills/{result.backfill_id}/plan.json")
    assert "Dry run" in json.dumps(harness.slack.messages[0]["blocks"])


# -- rejections ----------------------------------------------------------------------------------
def test_invalid_config_yields_no_run_a_rejected_record_errors_beside_it_and_slack(
    harness: TriggerHarness,
) -> None:
    event = harness.upload(INVALID, key="incoming/team-a/bad.yaml")
    result = harness.invoke(event)[0]

    assert result.disposition is Disposition.REJECTED
    assert harness.airflow.requests == [] and harness.marquez.lineage_requests() == []
    document = harness.result_file("incoming/team-a/bad.yaml")
    assert document["outcome"] == "rejected" and document["backfill_id"] is None
    locations = {error["location"] for error in document["errors"]}
    assert {"name", "owner", "dates[0]"} <= locations
    record = harness.status.get(document["status_id"])
    assert record.state is BackfillState.REJECTED
    assert {e["location"] for e in record.errors} == locations
    (message,) = harness.slack.messages
    assert "dates[0]" in json.dumps(message["blocks"]) and "bad.yaml" in message["text"]
    assert harness.pagerduty.events == []  # the user's mistake: Slack only
    # The same event again: nothing new.
    assert harness.invoke(event)[0].disposition is Disposition.DUPLICATE
    assert len(harness.slack.messages) == 1


def test_a_bad_config_does_not_stop_the_others_in_the_same_event(harness: TriggerHarness) -> None:
    bad = harness.upload(INVALID, key="incoming/bad.yaml")
    good = harness.upload(VALID)
    results = harness.invoke(merge_events(bad, good))

    assert [r.disposition for r in results] == [Disposition.REJECTED, Disposition.ACCEPTED]
    assert len(harness.airflow.runs) == 1


def test_oversized_config_is_rejected_without_reading_it(harness: TriggerHarness) -> None:
    event = harness.upload(b"#" * (300 * 1024), key="incoming/huge.yaml")
    result = harness.invoke(event)[0]

    assert result.disposition is Disposition.REJECTED
    (error,) = harness.result_file("incoming/huge.yaml")["errors"]
    assert error["location"] == "<root>" and "limit is 262144 bytes" in error["message"]


def test_unknown_root_job_is_rejected_with_its_location(harness: TriggerHarness) -> None:
    body = VALID.replace(b"name: etl_orders}", b"name: etl_nothing}")
    result = harness.invoke(harness.upload(body))[0]

    assert result.disposition is Disposition.REJECTED
    (error,) = harness.result_file()["errors"]
    assert error["location"] == "jobs[0]" and "etl_nothing" in error["message"]
    assert harness.status.get(result.backfill_id).state is BackfillState.REJECTED
    assert harness.pagerduty.events == [] and harness.airflow.requests == []


def test_replay_config_fails_clearly_until_replay_is_enabled(harness: TriggerHarness) -> None:
    body = (REPO / "examples" / "replay-orders.yaml").read_bytes()
    result = harness.invoke(harness.upload(body, key="incoming/replay.yaml"))[0]

    assert result.disposition is Disposition.FAILED and not result.retry
    record = harness.status.get(result.backfill_id)
    assert (
        record.state is BackfillState.FAILED
        and record.reason == "replay mode is not enabled in this deployment"
    )
    assert harness.result_file("incoming/replay.yaml")["reason"] == record.reason
    assert "replay mode is not enabled" in json.dumps(harness.slack.messages[0]["blocks"])
    assert harness.airflow.requests == [] and harness.pagerduty.events == []


def test_files_outside_the_incoming_prefix_or_of_other_types_are_ignored(harness: TriggerHarness) -> None:
    results = harness.invoke(
        merge_events(
            harness.upload(VALID, key="incoming/notes.txt"), harness.upload(VALID, key="elsewhere/x.yaml")
        )
    )

    assert [r.disposition for r in results] == [Disposition.IGNORED, Disposition.IGNORED]
    assert harness.slack.messages == [] and harness.airflow.requests == []


# -- failures ------------------------------------------------------------------------------------
def test_airflow_500_within_the_retries_still_triggers_once(harness: TriggerHarness) -> None:
    harness.airflow.fail_next(2, status=500)
    result = harness.invoke(harness.upload(VALID))[0]

    assert result.disposition is Disposition.ACCEPTED
    assert len(harness.airflow.runs) == 1
    assert [r["status"] for r in harness.airflow.trigger_posts()] == [500, 500, 200]
    assert harness.pagerduty.events == []


def test_airflow_500_past_the_retries_fails_pages_raises_then_a_retry_triggers_once(
    harness: TriggerHarness,
) -> None:
    event = harness.upload(VALID)
    harness.airflow.fail_next(3, status=500)  # the first try and both retries

    with pytest.raises(TriggerFailedError) as raised:
        harness.invoke(event)

    (failure,) = raised.value.failures
    backfill_id = failure.backfill_id
    record = harness.status.get(backfill_id)
    assert record.state is BackfillState.FAILED and record.retryable
    assert "AirflowUnavailableError" in record.reason and "500" in record.reason
    assert harness.airflow.runs == {}
    (page,) = harness.pagerduty.events
    assert page["event_action"] == "trigger" and page["dedup_key"] == backfill_id
    assert page["payload"]["severity"] == "critical"
    assert harness.result_file()["outcome"] == "failed"
    assert "FAILED" in harness.slack.messages[-1]["text"]

    # Airflow is back; Lambda delivers the same event again (its async retry).
    results = harness.invoke(event)
    assert [r.disposition for r in results] == [Disposition.ACCEPTED]
    assert len(harness.airflow.runs) == 1
    record = harness.status.get(backfill_id)
    assert record.state is BackfillState.TRIGGERED and record.attempts == 2
    assert [e["event_action"] for e in harness.pagerduty.events] == ["trigger", "resolve"]
    assert harness.pagerduty.incidents == {backfill_id: "resolved"}
    assert harness.result_file()["outcome"] == "accepted"
    # Every later delivery is a duplicate.
    assert harness.invoke(event)[0].disposition is Disposition.DUPLICATE
    assert len(harness.airflow.trigger_posts()) == 4  # 3 failed tries + 1


def test_marquez_down_fails_pages_and_raises_then_recovers(mocked_aws: None) -> None:
    with ExitStack() as stack:
        harness = TriggerHarness(stack, marquez_up=False)
        event = harness.upload(VALID)
        with pytest.raises(TriggerFailedError):
            harness.invoke(event)
        record = next(iter(harness.dynamodb.scan(TableName=TABLE)["Items"]))
        backfill_id = record["backfill_id"]["S"]
        record = harness.status.get(backfill_id)
        assert record.state is BackfillState.FAILED and "MarquezUnavailableError" in record.reason
        assert harness.airflow.requests == []
        assert [e["event_action"] for e in harness.pagerduty.events] == ["trigger"]
        assert harness.result_file()["outcome"] == "failed"
        # The config stays where the user put it.
        harness.s3.head_object(Bucket=BUCKET, Key="incoming/minimal-batch.yaml")

        harness.start_marquez()
        assert harness.invoke(event)[0].disposition is Disposition.ACCEPTED
        assert len(harness.airflow.runs) == 1
        assert harness.pagerduty.incidents == {backfill_id: "resolved"}


def test_pagerduty_false_in_the_config_means_no_page(mocked_aws: None) -> None:
    with ExitStack() as stack:
        harness = TriggerHarness(stack, marquez_up=False)
        with pytest.raises(TriggerFailedError):
            harness.invoke(harness.upload(VALID + b"notify: {pagerduty: false}\n"))
        assert harness.pagerduty.events == []
        assert harness.slack.messages  # Slack is still told


def test_slack_outage_never_fails_a_backfill(harness: TriggerHarness) -> None:
    harness.slack.fail_next(10, status=503)
    result = harness.invoke(harness.upload(VALID))[0]

    assert result.disposition is Disposition.ACCEPTED
    assert harness.slack.messages == []
    assert harness.counted("SlackFailures") == 1
    assert harness.status.get(result.backfill_id).state is BackfillState.TRIGGERED


def test_slack_429_is_retried_honouring_retry_after(harness: TriggerHarness) -> None:
    harness.slack.fail_next(1, status=429, retry_after=0)
    harness.invoke(harness.upload(VALID))

    assert len(harness.slack.messages) == 1
    assert harness.slack.requests_seen == 2


def test_a_redriven_dead_letter_triggers_exactly_once(mocked_aws: None) -> None:
    """After Lambda's retries the event lands in the on-failure SQS queue as a destination
    record; redriving its requestPayload later triggers exactly once."""
    with ExitStack() as stack:
        harness = TriggerHarness(stack, marquez_up=False)
        queue_url = harness.sqs.create_queue(QueueName="backfill-trigger-dlq")["QueueUrl"]
        event = harness.upload(VALID)
        for _ in range(3):  # the invocation and Lambda's two retries
            with pytest.raises(TriggerFailedError) as raised:
                harness.invoke(event)
        destination_record = {
            "version": "1.0",
            "timestamp": datetime.now(UTC).isoformat(),
            "requestContext": {
                "requestId": "r-1",
                "condition": "RetriesExhausted",
                "approximateInvokeCount": 3,
            },
            "requestPayload": event,
            "responseContext": {"statusCode": 200, "functionError": "Unhandled"},
            "responsePayload": {"errorMessage": str(raised.value), "errorType": "TriggerFailedError"},
        }
        harness.sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps(destination_record))
        assert harness.airflow.runs == {}

        harness.start_marquez()
        (message,) = harness.sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)["Messages"]
        body = json.loads(message["Body"])
        assert harness.invoke(body)[0].disposition is Disposition.ACCEPTED
        assert harness.invoke(body["requestPayload"])[0].disposition is Disposition.DUPLICATE
        assert len(harness.airflow.runs) == 1
        # One incident for all the failed attempts, resolved by the success.
        assert {e["dedup_key"] for e in harness.pagerduty.events} == {
            harness.airflow.trigger_posts()[0]["body"]["dag_run_id"]
        }
        assert [e["event_action"] for e in harness.pagerduty.events][-1] == "resolve"


def test_an_attempt_that_died_is_taken_over_after_its_lease(harness: TriggerHarness) -> None:
    """A crashed invocation leaves RECEIVED; a redelivery within its lease does nothing, one
    after the lease takes over and triggers once."""
    event = harness.upload(VALID)
    backfill_id = "etl-orders-0604-" + _id_suffix(harness)
    harness.status.create(backfill_id, upload_id=_upload_id(event), lease_seconds=3600)
    assert harness.invoke(event)[0].disposition is Disposition.DUPLICATE
    assert harness.airflow.runs == {}

    harness.dynamodb.update_item(
        TableName=TABLE,
        Key={"backfill_id": {"S": backfill_id}},
        UpdateExpression="SET lease_until = :past",
        ExpressionAttributeValues={":past": {"N": "0"}},
    )
    assert harness.invoke(event)[0].disposition is Disposition.ACCEPTED
    assert len(harness.airflow.runs) == 1


def _upload_id(event: dict[str, Any]) -> str:
    from backfill_orchestrator.trigger import upload_from_record

    return upload_from_record(event["Records"][0]).upload_id


def _id_suffix(harness: TriggerHarness) -> str:
    from backfill_orchestrator.config import backfill_id, parse_config

    return backfill_id(parse_config(VALID, source="x.yaml")).rsplit("-", 1)[1]


# -- the Lambda handler on the sample events ----------------------------------------------------
@pytest.mark.parametrize(
    "event_file",
    sorted(
        p.name for pattern in ("s3-*.json", "eventbridge-*.json") for p in (REPO / "events").glob(pattern)
    ),
)
def test_the_handler_runs_on_every_sample_event(
    event_file: str, mocked_aws: None, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from backfill_orchestrator.trigger import event_records, upload_from_record
    from backfill_orchestrator.trigger import handler as handler_module

    event = json.loads((REPO / "events" / event_file).read_text())
    (record,) = event_records(event)  # an S3 notification's one record, or the EventBridge event
    announced = upload_from_record(record)
    bucket = announced.bucket
    with ExitStack() as stack:
        harness = TriggerHarness(stack, bucket=bucket)
        env = json.loads((REPO / "events" / "env.json").read_text())["TriggerFunction"]
        # env.json's names, pointed at this test's doubles (moto is in-process: no endpoint).
        for name in env:
            monkeypatch.delenv(name, raising=False)
        for name, value in harness.env.items():
            monkeypatch.setenv(name, value)
        assert set(harness.env) <= set(env), "env.json must name every variable the tests set"
        key = announced.key
        context = FakeLambdaContext()
        body = INVALID if "invalid" in event_file else (REPO / "examples" / "minimal-batch.yaml").read_bytes()
        harness.s3.put_object(Bucket=bucket, Key=key, Body=body)
        handler_module.metrics.clear_metrics()  # Metrics instances share one store
        log_stream = io.StringIO()
        log_handler = handler_module.logger.registered_handler
        previous, log_handler.stream = (
            log_handler.stream,
            log_stream,
        )  # setStream would flush a closed capture
        try:
            with handler_module.trigger_wiring():  # built from this environment, as Lambda's container does
                answer = handler_module.handler(event, context)
        finally:
            log_handler.stream = previous

    (result,) = answer["results"]
    expected = "rejected" if "invalid" in event_file else "accepted"
    assert result["disposition"] == expected
    assert len(harness.airflow.runs) == (1 if expected == "accepted" else 0)
    assert len(harness.slack.messages) == 1
    # Logs are JSON lines; each line about the upload carries its backfill/status id.
    lines = [json.loads(line) for line in log_stream.getvalue().splitlines()]
    upload_lines = [
        line for line in lines if "minimal-batch" in line["message"] or "invalid config" in line["message"]
    ]
    assert upload_lines and all(line.get("backfill_id") for line in upload_lines)
    assert all(line["function_request_id"] == context.aws_request_id for line in lines)
    emf = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    (metrics,) = emf
    assert metrics["Received"] == [1.0]
    assert metrics["Rejected" if expected == "rejected" else "Triggered"] == [1.0]


def test_a_warm_container_reads_the_job_catalog_once(harness: TriggerHarness) -> None:
    catalog_reads = []

    def count(params: dict[str, Any], **_: Any) -> None:
        if params.get("Key") == "catalog/catalog.yaml":
            catalog_reads.append(params["Key"])

    harness.s3.meta.events.register("before-parameter-build.s3.GetObject", count)
    harness.invoke(harness.upload(VALID))
    harness.invoke(
        harness.upload(VALID.replace(b"etl-orders-0604", b"etl-orders-0604-b"), key="incoming/b.yaml")
    )

    assert len(harness.airflow.runs) == 2
    assert catalog_reads == ["catalog/catalog.yaml"]
