"""The replay Lambda as deployed (functions/replay/app.py, settings from the environment,
secrets from Secrets Manager), on moto with Slack and PagerDuty on local receivers: the SQS
path with partial batch responses, the direct one-task invocation, and the events/ samples."""

from __future__ import annotations

import json
from collections import Counter

import boto3
import pytest
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from moto import mock_aws

from backfill_local.receivers import PagerDutyReceiver, SlackReceiver
from backfill_orchestrator.config import InvalidConfigError, parse_config
from backfill_orchestrator.replay.dispatch import plan_replay, queue_tasks
from backfill_orchestrator.replay.task import parse_task
from backfill_orchestrator.status import BackfillState, StatusStore
from tests.support.configs import REPO_ROOT as REPO
from tests.support.lambda_context import FakeLambdaContext
from tests.support.replay import (
    ARCHIVE,
    CONFIG,
    IDEMPOTENCY_TABLE,
    REGION,
    STATUS_TABLE,
    attribute,
    create_tables,
    drain,
    load_replay_app,
    sqs_event,
    start_record,
    write_archive,
)


class Deployment:
    def __init__(self, monkeypatch, slack: SlackReceiver, pagerduty: PagerDutyReceiver):
        self.s3, self.sqs, self.ddb = (
            boto3.client(name, region_name=REGION) for name in ("s3", "sqs", "dynamodb")
        )
        secrets = boto3.client("secretsmanager", region_name=REGION)
        secrets.create_secret(Name="backfill/slack", SecretString=json.dumps({"bot_token": slack.token}))
        secrets.create_secret(
            Name="backfill/pagerduty", SecretString=json.dumps({"routing_key": pagerduty.routing_key})
        )
        self.s3.create_bucket(Bucket=ARCHIVE)
        create_tables(self.ddb)
        self.target_url = self.sqs.create_queue(QueueName="orders-ingest")["QueueUrl"]
        self.tasks_url = self.sqs.create_queue(QueueName="backfill-replay-tasks")["QueueUrl"]
        self.store = StatusStore(table_name=STATUS_TABLE, dynamodb_client=self.ddb)
        self.slack, self.pagerduty = slack, pagerduty
        self.env = {
            "CONFIG_BUCKET": "backfill-configs",
            "STATUS_TABLE": STATUS_TABLE,
            "MARQUEZ_URL": "http://127.0.0.1:9",
            "MWAA_ENVIRONMENT": "backfill-mwaa",
            "REPLAY_TARGETS": json.dumps({"orders-ingest": self.target_url}),
            "SLACK_API_URL": slack.api_url,
            "SLACK_SECRET_ID": "backfill/slack",
            "SLACK_CHANNEL": "#backfills",
            "PAGERDUTY_EVENTS_URL": pagerduty.events_url,
            "PAGERDUTY_SECRET_ID": "backfill/pagerduty",
            "REPLAY_ARCHIVE_BUCKET": ARCHIVE,
            "REPLAY_ARCHIVE_LAYOUT": "{feed}/{yyyy}/{mm}/{dd}/{hh}/",
            "IDEMPOTENCY_TABLE": IDEMPOTENCY_TABLE,
            "REPLAY_TASKS_QUEUE_URL": self.tasks_url,
            "REPLAY_MAX_RECEIVE_COUNT": "3",
            "REPLAY_MAX_CONCURRENCY": "2",
            "POWERTOOLS_TRACE_DISABLED": "true",
        }
        for name, value in self.env.items():
            monkeypatch.setenv(name, value)
        self.app = load_replay_app()

    def invoke(self, event, *, remaining_ms: int = 600_000):
        from backfill_orchestrator.replay.handler import replay_wiring

        context = FakeLambdaContext(function_name="backfill-replay", remaining_seconds=remaining_ms / 1000)
        with replay_wiring():  # a container's, built from this test's environment (in its moto)
            return self.app.handler(event, context)

    def task_event(self, *, receive_count: int = 1, limit: int = 10) -> dict:
        """Replay tasks waiting on the tasks queue, as the SQS event source delivers them."""
        messages = self.sqs.receive_message(QueueUrl=self.tasks_url, MaxNumberOfMessages=limit).get(
            "Messages", []
        )
        return sqs_event(
            [m["Body"] for m in messages], receive_count=receive_count, ids=[m["MessageId"] for m in messages]
        )


@pytest.fixture
def deployment(monkeypatch):
    for key, value in {
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }.items():
        monkeypatch.setenv(key, value)
    with mock_aws(), SlackReceiver() as slack, PagerDutyReceiver() as pagerduty:
        yield Deployment(monkeypatch, slack, pagerduty)


def test_tasks_from_the_queue_deliver_the_archive_exactly_once(deployment):
    config = parse_config({**CONFIG, "hours": [9], "dates": ["2021-06-04", "2021-06-05"]})
    tasks = plan_replay(config, targets={"orders-ingest": deployment.target_url})
    bodies = write_archive(deployment.s3, tasks, per_hour=30)
    start_record(deployment.store, tasks[0].backfill_id, tasks_total=len(tasks))
    assert queue_tasks(tasks, sqs=deployment.sqs, queue_url=deployment.tasks_url) == 4

    event = deployment.task_event()
    assert len(event["Records"]) == 4
    answer = deployment.invoke(event)
    assert answer == {"batchItemFailures": []}
    received = drain(deployment.sqs, deployment.target_url)
    assert Counter(m["Body"] for m in received) == Counter(bodies)
    assert {attribute(m, "backfill_id") for m in received} == {tasks[0].backfill_id}

    # The event source delivers the same batch again: nothing is sent twice.
    assert deployment.invoke(event) == {"batchItemFailures": []}
    assert drain(deployment.sqs, deployment.target_url) == []
    record = deployment.store.get(tasks[0].backfill_id)
    assert (record.state, record.tasks_done, record.messages_sent) == (BackfillState.SUCCEEDED, 4, 120)
    assert any("4/4 replay tasks finished" in m["text"] for m in deployment.slack.messages)


def test_only_the_failing_records_are_reported_to_the_event_source(deployment):
    (task,) = plan_replay(
        parse_config({**CONFIG, "hours": [9], "dates": ["2021-06-04"], "feeds": ["orders"]}),
        targets={"orders-ingest": deployment.target_url},
    )
    write_archive(deployment.s3, [task], per_hour=5)
    unknown_target = task.model_copy(update={"target": "payments"}).to_json()
    event = sqs_event([task.to_json(), '{"task_version": 1, "hour": 99}', unknown_target])
    answer = deployment.invoke(event)
    assert answer == {"batchItemFailures": [{"itemIdentifier": "msg-1"}, {"itemIdentifier": "msg-2"}]}
    assert len(drain(deployment.sqs, deployment.target_url)) == 5


def test_a_task_short_of_time_queues_its_continuation(deployment):
    (task,) = plan_replay(
        parse_config({**CONFIG, "hours": [9], "dates": ["2021-06-04"], "feeds": ["orders"]}),
        targets={"orders-ingest": deployment.target_url},
    )
    bodies = write_archive(deployment.s3, [task], per_hour=25)
    answer = deployment.invoke(sqs_event([task.to_json()]), remaining_ms=10_000)  # under the stop margin
    assert answer == {"batchItemFailures": []}
    assert drain(deployment.sqs, deployment.target_url) == []
    continuation = deployment.task_event()
    assert [parse_task(r["body"]) for r in continuation["Records"]] == [task]
    assert continuation["Records"][0]["attributes"]["ApproximateReceiveCount"] == "1"
    assert deployment.invoke(continuation) == {"batchItemFailures": []}
    assert Counter(m["Body"] for m in drain(deployment.sqs, deployment.target_url)) == Counter(bodies)


def test_the_last_delivery_of_a_failing_task_is_counted_and_paged(deployment):
    (task,) = plan_replay(
        parse_config({**CONFIG, "hours": [9], "dates": ["2021-06-04"], "feeds": ["orders"]}),
        targets={"orders-ingest": deployment.target_url},
    )
    start_record(deployment.store, task.backfill_id, tasks_total=1)
    write_archive(deployment.s3, [task], per_hour=5)
    deployment.sqs.delete_queue(QueueUrl=deployment.target_url)  # the target is gone
    # Every record of the batch failed: powertools fails the invocation, SQS delivers again.
    with pytest.raises(BatchProcessingError, match="All records failed"):
        deployment.invoke(sqs_event([task.to_json()], receive_count=2))
    assert deployment.store.get(task.backfill_id).tasks_failed == 0  # not the last delivery yet
    assert deployment.pagerduty.events == []
    with pytest.raises(BatchProcessingError):  # REPLAY_MAX_RECEIVE_COUNT: the next stop is the DLQ
        deployment.invoke(sqs_event([task.to_json()], receive_count=3))
    record = deployment.store.get(task.backfill_id)
    assert (record.state, record.tasks_failed) == (BackfillState.FAILED, 1)
    assert deployment.pagerduty.incidents == {task.backfill_id: "triggered"}


def test_direct_invocation_runs_one_task_with_the_same_guarantees(deployment):
    (task,) = plan_replay(
        parse_config({**CONFIG, "hours": [9], "dates": ["2021-06-04"], "feeds": ["orders"]}),
        targets={"orders-ingest": deployment.target_url},
    )
    bodies = write_archive(deployment.s3, [task], per_hour=12)
    answer = deployment.invoke(json.loads(task.to_json()))
    assert (answer["status"], answer["sent"], answer["retry"]) == ("done", 12, False)
    again = deployment.invoke({"task": json.loads(task.to_json()), "final_attempt": False})
    assert (again["status"], again["sent"]) == ("already_done", 12)
    assert Counter(m["Body"] for m in drain(deployment.sqs, deployment.target_url)) == Counter(bodies)


def test_direct_invocation_answers_bad_input_with_located_errors(deployment):
    answer = deployment.invoke(
        {"task_version": 1, "backfill_id": "x", "feed": "orders", "day": "2021-13-01", "hour": 1}
    )
    assert answer["status"] == "invalid"
    assert {e["location"] for e in answer["errors"]} == {"backfill_id", "target", "day"}
    task = {
        **json.loads(
            parse_task(
                json.loads((REPO / "events" / "replay_task_direct.json").read_text())["task"]
            ).to_json()
        ),
        "target": "payments",
    }
    answer = deployment.invoke(task)
    assert answer == {
        "status": "invalid",
        "errors": [
            {
                "location": "target",
                "message": "unknown target 'payments'; this deployment allows: orders-ingest",
            }
        ],
    }
    answer = deployment.invoke({"task": task, "retries": 3})
    assert answer["status"] == "invalid" and "retries" in answer["errors"][0]["message"]


def test_an_unknown_target_is_a_located_config_error_and_queues_nothing(deployment):
    config = parse_config({**CONFIG, "replay": {"target": "payments"}})
    with pytest.raises(InvalidConfigError) as caught:
        plan_replay(config, targets={"orders-ingest": deployment.target_url})
    assert [str(issue) for issue in caught.value.issues] == [
        "replay.target: unknown target 'payments'; this deployment allows: orders-ingest"
    ]


@pytest.mark.parametrize("event_file", ["sqs_replay_task.json", "replay_task_direct.json"])
def test_the_sample_events_run(deployment, event_file):
    event = json.loads((REPO / "events" / event_file).read_text())
    body = event["Records"][0]["body"] if "Records" in event else json.dumps(event["task"])
    task = parse_task(body)
    bodies = write_archive(deployment.s3, [task], per_hour=7)
    answer = deployment.invoke(event)
    if "Records" in event:
        assert answer == {"batchItemFailures": []}
    else:
        assert (answer["status"], answer["sent"]) == ("done", 7)
    assert Counter(m["Body"] for m in drain(deployment.sqs, deployment.target_url)) == Counter(bodies)
