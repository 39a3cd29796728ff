"""The trigger's side of replay, on the trigger's own harness (moto, Slack, PagerDuty,
Airflow and Marquez doubles): a replay config becomes one queued task per feed, day and
hour; an unknown target is a located config error; and the whole path, upload to replayed
messages, ends SUCCEEDED with the totals in the backfill's Slack thread."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack

import pytest
import yaml

from backfill_orchestrator.replay.progress import ReplayProgress
from backfill_orchestrator.replay.runner import ReplayContext, run_task
from backfill_orchestrator.replay.task import parse_task
from backfill_orchestrator.replay.task_leases import TaskLedger
from backfill_orchestrator.status import BackfillState
from backfill_orchestrator.trigger import Disposition, TriggerFailedError
from backfill_orchestrator.trigger.wiring import TriggerWiring
from tests.support.replay import (
    ARCHIVE,
    IDEMPOTENCY_TABLE,
    LAYOUT,
    attribute,
    create_tables,
    drain,
    write_archive,
)
from tests.support.trigger import REPO, TriggerHarness, fast_session

EXAMPLE = (REPO / "examples" / "replay-orders.yaml").read_text()


class ReplayHarness(TriggerHarness):
    """The trigger harness with replay turned on: a target queue, the tasks queue, the
    archive bucket and the ledger table."""

    def __init__(self, stack: ExitStack, *, targets: dict[str, str] | None = None):
        super().__init__(stack)
        self.target_url = self.sqs.create_queue(QueueName="orders-ingest")["QueueUrl"]
        self.tasks_url = self.sqs.create_queue(QueueName="backfill-replay-tasks")["QueueUrl"]
        self.s3.create_bucket(Bucket=ARCHIVE)
        create_tables(self.dynamodb)
        self.allow(targets if targets is not None else {"orders-ingest": self.target_url})

    def make_wiring(self) -> TriggerWiring:
        return TriggerWiring(
            self.settings,
            s3_client=self.s3,
            dynamodb_client=self.dynamodb,
            secrets_client=self.secrets,
            session_factory=fast_session,
            sqs_client_factory=lambda: self.sqs,
        )

    def allow(self, targets: dict[str, str]) -> None:
        """A deployment whose replay allowlist is `targets`."""
        self.rewire(REPLAY_TARGETS=json.dumps(targets), REPLAY_TASKS_QUEUE_URL=self.tasks_url)

    def queued_tasks(self):
        return [parse_task(m["Body"]) for m in drain(self.sqs, self.tasks_url)]

    def replay_context(self) -> ReplayContext:
        status = self.status
        notifier = self.wiring.notifier(status=status, metrics=self.metrics)
        return ReplayContext(
            s3=self.s3,
            sqs=self.sqs,
            ledger=TaskLedger(table_name=IDEMPOTENCY_TABLE, dynamodb_client=self.dynamodb),
            progress=ReplayProgress(status_store=status, notifier=notifier),
            archive_bucket=ARCHIVE,
            layout=LAYOUT,
            targets=self.settings.replay_targets,
            max_message_bytes=256 * 1024,
        )


@pytest.fixture
def replay(mocked_aws: None) -> Iterator[ReplayHarness]:
    with ExitStack() as stack:
        yield ReplayHarness(stack)


def test_a_replay_config_queues_one_task_per_feed_day_and_hour(replay: ReplayHarness) -> None:
    (result,) = replay.invoke(replay.upload(EXAMPLE.encode(), key="incoming/replay.yaml"))
    assert result.disposition is Disposition.ACCEPTED and result.state == "TRIGGERED"
    record = replay.status.get(result.backfill_id)
    assert (record.state, record.tasks_total) == (BackfillState.TRIGGERED, 24)
    assert record.history[-1]["detail"] == "24 replay tasks to orders-ingest queued"
    tasks = replay.queued_tasks()
    assert len(tasks) == 24 and len({t.task_id for t in tasks}) == 24
    assert {(t.feed, t.hour) for t in tasks} == {
        (f, h) for f in ("orders", "order_status") for h in (9, 10, 11)
    }
    assert all(
        t.backfill_id == result.backfill_id and t.max_messages_per_second == 100 and not t.pagerduty
        for t in tasks
    )
    assert replay.result_file("incoming/replay.yaml")["outcome"] == "accepted"
    assert replay.airflow.requests == []


def test_an_unknown_target_is_a_located_config_error_and_queues_nothing(replay: ReplayHarness) -> None:
    body = EXAMPLE.replace("target: orders-ingest", "target: payments").encode()
    (result,) = replay.invoke(replay.upload(body, key="incoming/replay.yaml"))
    assert result.disposition is Disposition.REJECTED
    (error,) = replay.result_file("incoming/replay.yaml")["errors"]
    assert error == {
        "location": "replay.target",
        "message": "unknown target 'payments'; this deployment allows: orders-ingest",
    }
    assert replay.queued_tasks() == []
    assert "replay.target" in json.dumps(replay.slack.messages[0]["blocks"])


def test_without_an_allowlist_every_target_is_unknown(mocked_aws: None) -> None:
    with ExitStack() as stack:
        harness = ReplayHarness(stack, targets={})
        (result,) = harness.invoke(harness.upload(EXAMPLE.encode(), key="incoming/replay.yaml"))
        assert result.disposition is Disposition.REJECTED
        (error,) = harness.result_file("incoming/replay.yaml")["errors"]
        assert error["location"] == "replay.target" and "none configured" in error["message"]
        assert harness.queued_tasks() == []


def test_a_dry_run_plans_and_queues_nothing(replay: ReplayHarness) -> None:
    document = yaml.safe_load(EXAMPLE) | {"dry_run": True}
    (result,) = replay.invoke(replay.upload(yaml.safe_dump(document).encode(), key="incoming/replay.yaml"))
    assert result.disposition is Disposition.DRY_RUN
    assert replay.status.get(result.backfill_id).state is BackfillState.PLANNED
    assert replay.queued_tasks() == []


def test_a_tasks_queue_outage_fails_retryably_and_the_retry_queues_everything(replay: ReplayHarness) -> None:
    replay.sqs.delete_queue(QueueUrl=replay.tasks_url)
    event = replay.upload(EXAMPLE.encode(), key="incoming/replay.yaml")
    with pytest.raises(TriggerFailedError) as raised:  # Lambda delivers the event again
        replay.invoke(event)
    (failed,) = raised.value.failures
    record = replay.status.get(failed.backfill_id)
    assert record.state is BackfillState.FAILED and record.retryable and "QueueTasksError" in record.reason
    replay.tasks_url = replay.sqs.create_queue(QueueName="backfill-replay-tasks")["QueueUrl"]
    (retried,) = replay.invoke(event)
    assert retried.disposition is Disposition.ACCEPTED
    assert len(replay.queued_tasks()) == 24


def test_from_upload_to_replayed_messages_and_the_totals_in_the_thread(replay: ReplayHarness) -> None:
    document = yaml.safe_load(EXAMPLE) | {
        "dates": ["2021-06-04"],
        "hours": [9],
        "notify": {"pagerduty": True},
    }
    (result,) = replay.invoke(replay.upload(yaml.safe_dump(document).encode(), key="incoming/replay.yaml"))
    tasks = replay.queued_tasks()
    assert len(tasks) == 2
    bodies = write_archive(replay.s3, tasks, per_hour=15)
    context = replay.replay_context()
    for task in tasks:
        assert run_task(parse_task(task.to_json()), context).status == "done"
    received = drain(replay.sqs, replay.target_url)
    assert Counter(m["Body"] for m in received) == Counter(bodies)
    assert {attribute(m, "backfill_id") for m in received} == {result.backfill_id}

    record = replay.status.get(result.backfill_id)
    assert (record.state, record.tasks_done, record.messages_sent) == (BackfillState.SUCCEEDED, 2, 30)
    assert [h["state"] for h in record.history] == [
        "RECEIVED",
        "PLANNED",
        "TRIGGERED",
        "RUNNING",
        "SUCCEEDED",
    ]
    thread = replay.slack.thread(record.slack_thread_ts)
    assert (
        len(thread) == 2
        and "2/2 replay tasks finished (0 failed); 30 messages sent, 0 failed" in thread[1]["text"]
    )
    assert replay.pagerduty.events == []
