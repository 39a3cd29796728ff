"""Replay tasks end to end on moto (S3 archive, SQS target, DynamoDB ledger and status
table), with Slack and PagerDuty on local receivers: every archived message arrives exactly
once with its attributes, through partial SendMessageBatch failures, redeliveries, crashes,
time running out and tasks that fail for good."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from datetime import date

import boto3
import pytest
from moto import mock_aws
from pydantic import SecretStr

from backfill_local.receivers import PagerDutyReceiver, SlackReceiver
from backfill_orchestrator.config import parse_config
from backfill_orchestrator.notify import Notifier, PagerDutyClient, SlackWebApi, status_message
from backfill_orchestrator.replay.layout import ArchiveLayout
from backfill_orchestrator.replay.progress import ReplayProgress
from backfill_orchestrator.replay.runner import ReplayContext, ReplayTaskFailedError, run_task
from backfill_orchestrator.replay.task import InvalidReplayTaskError, ReplayTask, split_tasks
from backfill_orchestrator.replay.task_leases import TaskBusyError, TaskLedger
from backfill_orchestrator.status import BackfillState, StatusStore

REGION = "us-east-1"
ARCHIVE = "message-archive"
LAYOUT = ArchiveLayout.parse("{feed}/{yyyy}/{mm}/{dd}/{hh}/")
CONFIG = {
    "version": 1,
    "name": "replay-orders",
    "owner": "@orders-team",
    "mode": "replay",
    "dates": ["2021-06-04", "2021-06-07"],
    "hours": [9, 10],
    "feeds": ["orders", "order_status"],
    "replay": {"target": "orders-ingest"},
    "notify": {"slack_channel": "#orders-oncall"},
}


# -- fixtures and helpers (also used by test_replay_lambda.py) ------------------------------
def create_tables(ddb) -> None:
    for name, key in (("replay-idempotency", "id"), ("backfill-status", "backfill_id")):
        ddb.create_table(
            TableName=name,
            KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )


def write_archive(s3, tasks: list[ReplayTask], *, per_hour: int, objects: int = 3) -> list[str]:
    """Each feed-hour gets `objects` objects (every second one gzip); returns all bodies."""
    bodies: list[str] = []
    for task in tasks:
        prefix = LAYOUT.prefix(feed=task.feed, day=task.day, hour=task.hour)
        lines = [
            json.dumps({"feed": task.feed, "day": task.day.isoformat(), "hour": task.hour, "n": n}, separators=(",", ":"))
            for n in range(per_hour)
        ]
        bodies.extend(lines)
        chunk = -(-per_hour // objects)
        for index in range(objects):
            part = "\n".join(lines[index * chunk:(index + 1) * chunk]) + "\n"
            if index % 2:
                s3.put_object(Bucket=ARCHIVE, Key=f"{prefix}part-{index:03d}.jsonl.gz", Body=gzip.compress(part.encode()))
            else:
                s3.put_object(Bucket=ARCHIVE, Key=f"{prefix}part-{index:03d}.jsonl", Body=part.encode())
    return bodies


def drain(sqs, queue_url: str) -> list[dict]:
    """Every message on the queue (deleted as read, so the queue stays small for moto)."""
    received: list[dict] = []
    while True:
        messages = sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, MessageAttributeNames=["All"], VisibilityTimeout=60
        ).get("Messages", [])
        if not messages:
            return received
        received.extend(messages)
        sqs.delete_message_batch(
            QueueUrl=queue_url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)]
        )


def attribute(message: dict, name: str) -> str:
    return message["MessageAttributes"][name]["StringValue"]


def start_record(store: StatusStore, backfill_id: str, *, tasks_total: int) -> None:
    """The status record as the trigger leaves it after queueing the tasks."""
    store.create(backfill_id, attributes={"mode": "replay"})
    store.transition(backfill_id, BackfillState.PLANNED)
    store.transition(backfill_id, BackfillState.TRIGGERED, attributes={"tasks_total": tasks_total})


class FakeClock:
    def __init__(self):
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class Env:
    def __init__(self, *, s3, sqs, ddb, target_url, store, clock, slack, pagerduty):
        self.s3, self.sqs, self.ddb = s3, sqs, ddb
        self.target_url = target_url
        self.store = store
        self.clock = clock
        self.slack = slack
        self.pagerduty = pagerduty

    def notifier(self) -> Notifier:
        return Notifier(
            slack=SlackWebApi(token=SecretStr(self.slack.token), api_url=self.slack.api_url),
            pagerduty=PagerDutyClient(routing_key=SecretStr(self.pagerduty.routing_key), events_url=self.pagerduty.events_url),
            status_store=self.store,
            default_channel="#data-oncall",
        )

    def context(self, *, sqs=None, max_concurrency: int = 1, **sender_options) -> ReplayContext:
        notifier = self.notifier()
        return ReplayContext(
            s3=self.s3,
            sqs=sqs or self.sqs,
            ledger=TaskLedger(table_name="replay-idempotency", dynamodb_client=self.ddb, clock=self.clock),
            progress=ReplayProgress(status_store=self.store, notifier=notifier),
            archive_bucket=ARCHIVE,
            layout=LAYOUT,
            targets={"orders-ingest": self.target_url},
            max_message_bytes=256 * 1024,
            max_concurrency=max_concurrency,
            sleep=self.clock.sleep,
            clock=self.clock,
            sender_options={"jitter": lambda: 0.0, **sender_options},
        )


@pytest.fixture
def env(monkeypatch):
    for key, value in {"AWS_DEFAULT_REGION": REGION, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(key, value)
    with mock_aws(), SlackReceiver() as slack, PagerDutyReceiver() as pagerduty:
        s3, sqs, ddb = (boto3.client(name, region_name=REGION) for name in ("s3", "sqs", "dynamodb"))
        s3.create_bucket(Bucket=ARCHIVE)
        create_tables(ddb)
        target_url = sqs.create_queue(QueueName="orders-ingest")["QueueUrl"]
        yield Env(s3=s3, sqs=sqs, ddb=ddb, target_url=target_url, store=StatusStore(table_name="backfill-status", dynamodb_client=ddb),
                  clock=FakeClock(), slack=slack, pagerduty=pagerduty)  # fmt: skip


class FlakySqs:
    """The real (moto) client, except that SendMessageBatch entries chosen by `fail` are not
    sent and come back as Failed, like SQS's partial failures; `crash_on` ends the process
    (an exception nothing catches) on that call, before or after the send."""

    class Crash(BaseException):
        pass

    def __init__(self, sqs, *, fail=lambda call, index, body: False, crash_on: int | None = None, crash_after_send=False):
        self._sqs = sqs
        self._fail = fail
        self._crash_on = crash_on
        self._crash_after_send = crash_after_send
        self.calls = 0
        self.failed_entries = 0

    def __getattr__(self, name):
        return getattr(self._sqs, name)

    def send_message_batch(self, *, QueueUrl, Entries):  # noqa: N803 - boto3's names
        self.calls += 1
        if self._crash_on == self.calls and not self._crash_after_send:
            raise FlakySqs.Crash()
        keep, failed = [], []
        for index, entry in enumerate(Entries):
            if self._fail(self.calls, index, entry["MessageBody"]):
                failed.append({"Id": entry["Id"], "SenderFault": False, "Code": "InternalError", "Message": "injected"})
            else:
                keep.append(entry)
        self.failed_entries += len(failed)
        response = self._sqs.send_message_batch(QueueUrl=QueueUrl, Entries=keep) if keep else {"Successful": []}
        if self._crash_on == self.calls:
            raise FlakySqs.Crash()
        return {"Successful": response.get("Successful", []), "Failed": [*response.get("Failed", []), *failed]}


def replay_config(**changes):
    return parse_config({**CONFIG, **changes})


# -- tests --------------------------------------------------------------------------------
def test_a_config_over_a_generated_archive_is_delivered_exactly_once(env):
    tasks = split_tasks(replay_config())
    assert len(tasks) == 8
    bodies = write_archive(env.s3, tasks, per_hour=40)
    backfill_id = tasks[0].backfill_id
    start_record(env.store, backfill_id, tasks_total=len(tasks))
    env.notifier().slack(backfill_id, status_message(backfill_id=backfill_id, state="TRIGGERED"), channel="#orders-oncall")
    thread_ts = env.store.get(backfill_id).slack_thread_ts  # the thread the trigger started
    ctx = env.context()
    results, received = [], []
    for task in tasks:
        results.append(run_task(task, ctx))
        received += drain(env.sqs, env.target_url)  # moto slows down as a queue fills

    assert [r.status for r in results] == ["done"] * 8
    assert sum(r.calls for r in results) == len(bodies) // 10  # 40 per task: 4 batches of 10
    assert Counter(m["Body"] for m in received) == Counter(bodies)  # each exactly once
    for message in received:
        body = json.loads(message["Body"])
        assert attribute(message, "backfill_id") == backfill_id
        assert attribute(message, "replay") == "true"
        assert (attribute(message, "original_feed"), attribute(message, "original_day"), attribute(message, "original_hour")) == (
            body["feed"], body["day"], str(body["hour"]))  # fmt: skip
        assert attribute(message, "replay_source").startswith(f"s3://{ARCHIVE}/{body['feed']}/")

    record = env.store.get(backfill_id)
    assert record.state == BackfillState.SUCCEEDED
    assert (record.tasks_done, record.tasks_failed, record.messages_sent, record.messages_failed) == (8, 0, 320, 0)
    assert [h["state"] for h in record.history][-2:] == ["RUNNING", "SUCCEEDED"]
    (totals,) = [m for m in env.slack.messages if m.get("thread_ts") == thread_ts]
    assert "8/8 replay tasks finished (0 failed); 320 messages sent, 0 failed" in totals["text"]
    assert env.pagerduty.events == []


def test_partial_batch_failures_are_retried_alone_and_lose_nothing(env):
    (task,) = split_tasks(replay_config(dates=["2021-06-04"], hours=[9], feeds=["orders"]))
    bodies = write_archive(env.s3, [task], per_hour=95)
    flaky = FlakySqs(env.sqs, fail=lambda call, index, body: call % 2 == 1 and index % 3 == 0)
    result = run_task(task, env.context(sqs=flaky))
    assert result.status == "done" and result.sent == 95 and result.failed == 0
    assert flaky.failed_entries > 0
    assert Counter(m["Body"] for m in drain(env.sqs, env.target_url)) == Counter(bodies)


def test_a_redelivered_task_sends_nothing_again(env):
    (task,) = split_tasks(replay_config(dates=["2021-06-04"], hours=[9], feeds=["orders"]))
    start_record(env.store, task.backfill_id, tasks_total=1)
    write_archive(env.s3, [task], per_hour=30)
    ctx = env.context()
    assert run_task(task, ctx).status == "done"
    again = run_task(task, ctx)
    assert (again.status, again.sent, again.calls) == ("already_done", 30, 0)
    assert len(drain(env.sqs, env.target_url)) == 30
    record = env.store.get(task.backfill_id)
    assert (record.tasks_done, record.messages_sent, record.state) == (1, 30, BackfillState.SUCCEEDED)
    assert len([m for m in env.slack.messages if "SUCCEEDED" in m["text"]]) == 1  # finalised once


def test_failing_entries_across_runs_resume_without_duplicates(env):
    """A run gives up on entries that keep failing; the next delivery sends only those."""
    (task,) = split_tasks(replay_config(dates=["2021-06-04"], hours=[9], feeds=["orders"]))
    bodies = write_archive(env.s3, [task], per_hour=35)
    stubborn = FlakySqs(env.sqs, fail=lambda call, index, body: '"n":13}' in body or '"n":17}' in body)
    with pytest.raises(ReplayTaskFailedError, match="2 message"):
        run_task(task, env.context(sqs=stubborn, max_attempts=3))
    state = TaskLedger(table_name="replay-idempotency", dynamodb_client=env.ddb).get(task.task_id)
    assert state.lease_until == 0 and state.sent == 18  # 0..9, then 10..19 without 13 and 17
    result = run_task(task, env.context())
    assert (result.status, result.sent) == ("done", 35)
    assert Counter(m["Body"] for m in drain(env.sqs, env.target_url)) == Counter(bodies)


def test_a_crash_before_sending_resumes_exactly_once(env):
    (task,) = split_tasks(replay_config(dates=["2021-06-04"], hours=[9], feeds=["orders"]))
    bodies = write_archive(env.s3, [task], per_hour=50)
    crashing = FlakySqs(env.sqs, crash_on=3)
    with pytest.raises(FlakySqs.Crash):
        run_task(task, env.context(sqs=crashing))
    with pytest.raises(TaskBusyError):  # the dead run's lease still holds
        run_task(task, env.context())
    env.clock.now += 1000  # past the lease (the dead Lambda's deadline)
    assert run_task(task, env.context()).status == "done"
    assert Counter(m["Body"] for m in drain(env.sqs, env.target_url)) == Counter(bodies)


def test_a_crash_right_after_a_send_repeats_at_most_that_batch(env):
    """The one window left: the batch went out but its checkpoint did not. Those (at most
    10) come again, recognisable by their replay_source."""
    (task,) = split_tasks(replay_config(dates=["2021-06-04"], hours=[9], feeds=["orders"]))
    bodies = write_archive(env.s3, [task], per_hour=50)
    with pytest.raises(FlakySqs.Crash):
        run_task(task, env.context(sqs=FlakySqs(env.sqs, crash_on=3, crash_after_send=True)))
    env.clock.now += 1000
    run_task(task, env.context())
    received = drain(env.sqs, env.target_url)
    counts = Counter(m["Body"] for m in received)
    assert set(counts) == set(bodies)
    assert sorted(counts.values()).count(2) == 10 and len(received) == 60
    repeated = {attribute(m, "replay_source") for m in received if counts[m["Body"]] == 2}
    assert len(repeated) == 10


def test_too_big_and_unreadable_lines_are_reported_not_dropped(env):
    (task,) = split_tasks(replay_config(dates=["2021-06-04"], hours=[9], feeds=["orders"]))
    start_record(env.store, task.backfill_id, tasks_total=1)
    huge = json.dumps({"blob": "x" * (256 * 1024)})
    key = "orders/2021/06/04/09/mixed.jsonl"
    env.s3.put_object(Bucket=ARCHIVE, Key=key, Body="\n".join(['{"n":1}', huge, "{broken", '{"n":2}']).encode())
    result = run_task(task, env.context())
    assert (result.status, result.sent, result.failed) == ("done", 2, 2)
    assert [(f.position.line, f.reason.split(":")[0]) for f in result.failures] == [(2, "too_big"), (3, "invalid_json")]
    assert sorted(m["Body"] for m in drain(env.sqs, env.target_url)) == ['{"n":1}', '{"n":2}']
    record = env.store.get(task.backfill_id)
    assert (record.state, record.messages_sent, record.messages_failed) == (BackfillState.FAILED, 2, 2)
    assert env.pagerduty.incidents == {task.backfill_id: "triggered"}
    assert any("FAILED" in m["text"] and "2 failed" in m["text"] for m in env.slack.messages)


def test_an_empty_archive_prefix_is_a_clear_outcome(env):
    (task,) = split_tasks(replay_config(dates=["2021-06-04"], hours=[9], feeds=["orders"]))
    start_record(env.store, task.backfill_id, tasks_total=1)
    result = run_task(task, env.context())
    assert (result.status, result.sent, result.objects) == ("done", 0, 0)
    assert result.archive == f"s3://{ARCHIVE}/orders/2021/06/04/09/"
    record = env.store.get(task.backfill_id)
    assert (record.state, record.tasks_empty) == (BackfillState.SUCCEEDED, 1)
    assert any("1 task(s) found nothing archived" in m["text"] for m in env.slack.messages)


def test_an_unknown_target_is_refused_before_anything_happens(env):
    task = split_tasks(replay_config(replay={"target": "payments"}))[0]
    with pytest.raises(InvalidReplayTaskError) as caught:
        run_task(task, env.context())
    (issue,) = caught.value.issues
    assert issue.location == "target" and "unknown target 'payments'" in issue.message and "orders-ingest" in issue.message
    assert TaskLedger(table_name="replay-idempotency", dynamodb_client=env.ddb).get(task.task_id) is None


def test_the_rate_limit_is_per_config_across_concurrent_tasks(env):
    (task,) = split_tasks(replay_config(dates=["2021-06-04"], hours=[9], feeds=["orders"], replay={
        "target": "orders-ingest", "max_messages_per_second": 40}))  # fmt: skip
    write_archive(env.s3, [task], per_hour=200)
    start = env.clock.now
    counting = FlakySqs(env.sqs)
    result = run_task(task, env.context(sqs=counting, max_concurrency=4))  # this task's share: 10 per second
    assert result.sent == 200
    assert env.clock.now - start == pytest.approx((200 - 10) / 10)  # simulated seconds slept
    assert counting.calls == 20  # batches still hold 10 (one second's worth at 10/s)


def test_a_run_short_of_time_stops_at_a_batch_and_the_next_one_continues(env):
    (task,) = split_tasks(replay_config(dates=["2021-06-04"], hours=[9], feeds=["orders"]))
    bodies = write_archive(env.s3, [task], per_hour=60)
    budget = iter([300.0, 300.0, 300.0, 5.0])  # the fourth batch would cross the deadline
    first = run_task(task, env.context(), remaining=lambda: next(budget, 5.0))
    assert (first.status, first.sent) == ("continued", 20)
    second = run_task(task, env.context())  # the lease was released: no wait
    assert (second.status, second.sent) == ("done", 60)
    assert Counter(m["Body"] for m in drain(env.sqs, env.target_url)) == Counter(bodies)


def test_a_task_failing_for_good_is_counted_paged_and_can_be_redriven(env):
    tasks = split_tasks(replay_config(dates=["2021-06-04"], hours=[9], feeds=["orders", "order_status"]))
    bodies = write_archive(env.s3, tasks, per_hour=20)
    backfill_id = tasks[0].backfill_id
    start_record(env.store, backfill_id, tasks_total=2)
    assert run_task(tasks[0], env.context()).status == "done"
    broken = FlakySqs(env.sqs, fail=lambda call, index, body: True)
    with pytest.raises(ReplayTaskFailedError):
        run_task(tasks[1], env.context(sqs=broken, max_attempts=2), final_attempt=True)
    record = env.store.get(backfill_id)
    assert (record.state, record.tasks_done, record.tasks_failed) == (BackfillState.FAILED, 1, 1)
    summaries = [e["payload"]["summary"] for e in env.pagerduty.events]
    assert any(tasks[1].task_id in s and "DLQ" in s for s in summaries)
    assert env.pagerduty.incidents[backfill_id] == "triggered"

    # Redriven from the DLQ after the outage: it resumes, and the record is corrected.
    assert run_task(tasks[1], env.context()).status == "done"
    record = env.store.get(backfill_id)
    assert (record.state, record.tasks_done, record.tasks_failed, record.messages_sent) == (
        BackfillState.SUCCEEDED, 2, 0, 40)  # fmt: skip
    assert env.pagerduty.incidents[backfill_id] == "resolved"
    assert Counter(m["Body"] for m in drain(env.sqs, env.target_url)) == Counter(bodies)


def test_without_a_status_record_the_task_still_runs_once(env):
    """A team's own DAG may invoke tasks for a backfill the trigger never saw."""
    task = ReplayTask(backfill_id="team-dag-0123abcd", target="orders-ingest", feed="orders", day=date(2021, 6, 4), hour=9)
    write_archive(env.s3, [task], per_hour=12)
    assert run_task(task, env.context()).status == "done"
    assert run_task(task, env.context()).status == "already_done"
    assert len(drain(env.sqs, env.target_url)) == 12


def test_the_trigger_queues_tasks_ten_per_call_retrying_failed_entries(env):
    from backfill_orchestrator.replay.dispatch import queue_tasks
    from backfill_orchestrator.replay.task import parse_task

    tasks = split_tasks(replay_config(hours=None))  # 2 feeds x 2 days x 24 hours
    tasks_url = env.sqs.create_queue(QueueName="replay-tasks")["QueueUrl"]
    flaky = FlakySqs(env.sqs, fail=lambda call, index, body: call == 2 and index < 3)
    assert queue_tasks(tasks, sqs=flaky, queue_url=tasks_url, sender_options={"sleep": lambda s: None}) == 96
    assert flaky.calls == 10 + 1  # 96 tasks in 10 batches, plus one retry of the 3 failed entries
    queued = [parse_task(m["Body"]) for m in drain(env.sqs, tasks_url)]
    assert sorted(t.task_id for t in queued) == sorted(t.task_id for t in tasks)


class CancellingSqs:
    """Cancels the backfill (as a cancel control document would) right after the first batch."""

    def __init__(self, sqs, store: StatusStore, backfill_id: str):
        self._sqs, self._store, self._backfill_id, self.batches = sqs, store, backfill_id, 0

    def send_message_batch(self, **kwargs):
        answer = self._sqs.send_message_batch(**kwargs)
        self.batches += 1
        if self.batches == 1:
            self._store.transition(self._backfill_id, BackfillState.CANCELLED, detail="cancelled by @oncall")
        return answer

    def __getattr__(self, name):
        return getattr(self._sqs, name)


def test_a_cancelled_backfill_stops_its_tasks_at_the_next_batch_and_skips_the_rest(env, monkeypatch):
    from backfill_orchestrator.replay import runner

    monkeypatch.setattr(runner, "CANCEL_CHECK_SECONDS", 0.0)
    tasks = split_tasks(replay_config())
    write_archive(env.s3, tasks, per_hour=40)
    backfill_id = tasks[0].backfill_id
    start_record(env.store, backfill_id, tasks_total=len(tasks))
    sqs = CancellingSqs(env.sqs, env.store, backfill_id)
    first = run_task(tasks[0], env.context(sqs=sqs))
    assert first.status == "cancelled" and sqs.batches == 1  # in flight: stopped after its batch
    rest = [run_task(task, env.context()) for task in tasks[1:]]
    assert [r.status for r in rest] == ["cancelled"] * 7  # not yet started: skipped, nothing sent
    assert len(drain(env.sqs, env.target_url)) == 10
    record = env.store.get(backfill_id)
    assert record.state is BackfillState.CANCELLED and record.messages_sent == 10
