"""Replay tasks end to end on moto (S3 archive, SQS target, DynamoDB ledger and status
table), with Slack and PagerDuty on local receivers: every archived message arrives exactly
once with its attributes, through partial SendMessageBatch failures, redeliveries, crashes,
time running out and tasks that fail for good."""

from __future__ import annotations

import json
from collections import Counter
from datetime import date

import pytest

from backfill_orchestrator.notify import status_message
from backfill_orchestrator.replay.runner import ReplayTaskFailedError, run_task
from backfill_orchestrator.replay.task import InvalidReplayTaskError, ReplayTask, split_tasks
from backfill_orchestrator.replay.task_leases import TaskBusyError, TaskLedger
from backfill_orchestrator.status import BackfillState, StatusStore
from tests.support.replay import (
    ARCHIVE,
    FlakySqs,
    attribute,
    drain,
    replay_config,
    start_record,
    write_archive,
)


# -- tests --------------------------------------------------------------------------------
def test_a_config_over_a_generated_archive_is_delivered_exactly_once(replay_env):
    tasks = split_tasks(replay_config())
    assert len(tasks) == 8
    bodies = write_archive(replay_env.s3, tasks, per_hour=40)
    backfill_id = tasks[0].backfill_id
    start_record(replay_env.store, backfill_id, tasks_total=len(tasks))
    replay_env.notifier().slack(
        backfill_id, status_message(backfill_id=backfill_id, state="TRIGGERED"), channel="#orders-oncall"
    )
    thread_ts = replay_env.store.get(backfill_id).slack_thread_ts  # the thread the trigger started
    ctx = replay_env.context()
    results, received = [], []
    for task in tasks:
        results.append(run_task(task, ctx))
        received += drain(replay_env.sqs, replay_env.target_url)  # moto slows down as a queue fills

    assert [r.status for r in results] == ["done"] * 8
    assert sum(r.calls for r in results) == len(bodies) // 10  # 40 per task: 4 batches of 10
    assert Counter(m["Body"] for m in received) == Counter(bodies)  # each exactly once
    for message in received:
        body = json.loads(message["Body"])
        assert attribute(message, "backfill_id") == backfill_id
        assert attribute(message, "replay") == "true"
        assert (
            attribute(message, "original_feed"),
            attribute(message, "original_day"),
            attribute(message, "original_hour"),
        ) == (body["feed"], body["day"], str(body["hour"]))
        assert attribute(message, "replay_source").startswith(f"s3://{ARCHIVE}/{body['feed']}/")

    record = replay_env.store.get(backfill_id)
    assert record.state == BackfillState.SUCCEEDED
    assert (record.tasks_done, record.tasks_failed, record.messages_sent, record.messages_failed) == (
        8,
        0,
        320,
        0,
    )
    assert [h["state"] for h in record.history][-2:] == ["RUNNING", "SUCCEEDED"]
    (totals,) = [m for m in replay_env.slack.messages if m.get("thread_ts") == thread_ts]
    assert "8/8 replay tasks finished (0 failed); 320 messages sent, 0 failed" in totals["text"]
    assert replay_env.pagerduty.events == []


def test_partial_batch_failures_are_retried_alone_and_lose_nothing(replay_env):
    (task,) = split_tasks(replay_config(dates=["2021-06-04"], hours=[9], feeds=["orders"]))
    bodies = write_archive(replay_env.s3, [task], per_hour=95)
    flaky = FlakySqs(replay_env.sqs, fail=lambda call, index, body: call % 2 == 1 and index % 3 == 0)
    result = run_task(task, replay_env.context(sqs=flaky))
    assert result.status == "done" and result.sent == 95 and result.failed == 0
    assert flaky.failed_entries > 0
    assert Counter(m["Body"] for m in drain(replay_env.sqs, replay_env.target_url)) == Counter(bodies)


def test_a_redelivered_task_sends_nothing_again(replay_env):
    (task,) = split_tasks(replay_config(dates=["2021-06-04"], hours=[9], feeds=["orders"]))
    start_record(replay_env.store, task.backfill_id, tasks_total=1)
    write_archive(replay_env.s3, [task], per_hour=30)
    ctx = replay_env.context()
    assert run_task(task, ctx).status == "done"
    again = run_task(task, ctx)
    assert (again.status, again.sent, again.calls) == ("already_done", 30, 0)
    assert len(drain(replay_env.sqs, replay_env.target_url)) == 30
    record = replay_env.store.get(task.backfill_id)
    assert (record.tasks_done, record.messages_sent, record.state) == (1, 30, BackfillState.SUCCEEDED)
    assert len([m for m in replay_env.slack.messages if "SUCCEEDED" in m["text"]]) == 1  # finalised once


def test_failing_entries_across_runs_resume_without_duplicates(replay_env):
    """A run gives up on entries that keep failing; the next delivery sends only those."""
    (task,) = split_tasks(replay_config(dates=["2021-06-04"], hours=[9], feeds=["orders"]))
    bodies = write_archive(replay_env.s3, [task], per_hour=35)
    stubborn = FlakySqs(replay_env.sqs, fail=lambda call, index, body: '"n":13}' in body or '"n":17}' in body)
    with pytest.raises(ReplayTaskFailedError, match="2 message"):
        run_task(task, replay_env.context(sqs=stubborn, max_attempts=3))
    state = TaskLedger(table_name="replay-idempotency", dynamodb_client=replay_env.ddb).get(task.task_id)
    assert state.lease_until == 0 and state.sent == 18  # 0..9, then 10..19 without 13 and 17
    result = run_task(task, replay_env.context())
    assert (result.status, result.sent) == ("done", 35)
    assert Counter(m["Body"] for m in drain(replay_env.sqs, replay_env.target_url)) == Counter(bodies)


def test_a_crash_before_sending_resumes_exactly_once(replay_env):
    (task,) = split_tasks(replay_config(dates=["2021-06-04"], hours=[9], feeds=["orders"]))
    bodies = write_archive(replay_env.s3, [task], per_hour=50)
    crashing = FlakySqs(replay_env.sqs, crash_on=3)
    with pytest.raises(FlakySqs.Crash):
        run_task(task, replay_env.context(sqs=crashing))
    with pytest.raises(TaskBusyError):  # the dead run's lease still holds
        run_task(task, replay_env.context())
    replay_env.clock.now += 1000  # past the lease (the dead Lambda's deadline)
    assert run_task(task, replay_env.context()).status == "done"
    assert Counter(m["Body"] for m in drain(replay_env.sqs, replay_env.target_url)) == Counter(bodies)


def test_a_crash_right_after_a_send_repeats_at_most_that_batch(replay_env):
    """The one window left: the batch went out but its checkpoint did not. Those (at most
    10) come again, recognisable by their replay_source."""
    (task,) = split_tasks(replay_config(dates=["2021-06-04"], hours=[9], feeds=["orders"]))
    bodies = write_archive(replay_env.s3, [task], per_hour=50)
    with pytest.raises(FlakySqs.Crash):
        run_task(task, replay_env.context(sqs=FlakySqs(replay_env.sqs, crash_on=3, crash_after_send=True)))
    replay_env.clock.now += 1000
    run_task(task, replay_env.context())
    received = drain(replay_env.sqs, replay_env.target_url)
    counts = Counter(m["Body"] for m in received)
    assert set(counts) == set(bodies)
    assert sorted(counts.values()).count(2) == 10 and len(received) == 60
    repeated = {attribute(m, "replay_source") for m in received if counts[m["Body"]] == 2}
    assert len(repeated) == 10


def test_too_big_and_unreadable_lines_are_reported_not_dropped(replay_env):
    (task,) = split_tasks(replay_config(dates=["2021-06-04"], hours=[9], feeds=["orders"]))
    start_record(replay_env.store, task.backfill_id, tasks_total=1)
    huge = json.dumps({"blob": "x" * (256 * 1024)})
    key = "orders/2021/06/04/09/mixed.jsonl"
    replay_env.s3.put_object(
        Bucket=ARCHIVE, Key=key, Body="\n".join(['{"n":1}', huge, "{broken", '{"n":2}']).encode()
    )
    result = run_task(task, replay_env.context())
    assert (result.status, result.sent, result.failed) == ("done", 2, 2)
    assert [(f.position.line, f.reason.split(":")[0]) for f in result.failures] == [
        (2, "too_big"),
        (3, "invalid_json"),
    ]
    assert sorted(m["Body"] for m in drain(replay_env.sqs, replay_env.target_url)) == ['{"n":1}', '{"n":2}']
    record = replay_env.store.get(task.backfill_id)
    assert (record.state, record.messages_sent, record.messages_failed) == (BackfillState.FAILED, 2, 2)
    assert replay_env.pagerduty.incidents == {task.backfill_id: "triggered"}
    assert any("FAILED" in m["text"] and "2 failed" in m["text"] for m in replay_env.slack.messages)


def test_an_empty_archive_prefix_is_a_clear_outcome(replay_env):
    (task,) = split_tasks(replay_config(dates=["2021-06-04"], hours=[9], feeds=["orders"]))
    start_record(replay_env.store, task.backfill_id, tasks_total=1)
    result = run_task(task, replay_env.context())
    assert (result.status, result.sent, result.objects) == ("done", 0, 0)
    assert result.archive == f"s3://{ARCHIVE}/orders/2021/06/04/09/"
    record = replay_env.store.get(task.backfill_id)
    assert (record.state, record.tasks_empty) == (BackfillState.SUCCEEDED, 1)
    assert any("1 task(s) found nothing archived" in m["text"] for m in replay_env.slack.messages)


def test_an_unknown_target_is_refused_before_anything_happens(replay_env):
    task = split_tasks(replay_config(replay={"target": "payments"}))[0]
    with pytest.raises(InvalidReplayTaskError) as caught:
        run_task(task, replay_env.context())
    (issue,) = caught.value.issues
    assert (
        issue.location == "target"
        and "unknown target 'payments'" in issue.message
        and "orders-ingest" in issue.message
    )
    assert (
        TaskLedger(table_name="replay-idempotency", dynamodb_client=replay_env.ddb).get(task.task_id) is None
    )


def test_the_rate_limit_is_per_config_across_concurrent_tasks(replay_env):
    (task,) = split_tasks(
        replay_config(
            dates=["2021-06-04"],
            hours=[9],
            feeds=["orders"],
            replay={"target": "orders-ingest", "max_messages_per_second": 40},
        )
    )
    write_archive(replay_env.s3, [task], per_hour=200)
    start = replay_env.clock.now
    counting = FlakySqs(replay_env.sqs)
    result = run_task(
        task, replay_env.context(sqs=counting, max_concurrency=4)
    )  # this task's share: 10 per second
    assert result.sent == 200
    assert replay_env.clock.now - start == pytest.approx((200 - 10) / 10)  # simulated seconds slept
    assert counting.calls == 20  # batches still hold 10 (one second's worth at 10/s)


def test_a_run_short_of_time_stops_at_a_batch_and_the_next_one_continues(replay_env):
    (task,) = split_tasks(replay_config(dates=["2021-06-04"], hours=[9], feeds=["orders"]))
    bodies = write_archive(replay_env.s3, [task], per_hour=60)
    budget = iter([300.0, 300.0, 300.0, 5.0])  # the fourth batch would cross the deadline
    first = run_task(task, replay_env.context(), remaining=lambda: next(budget, 5.0))
    assert (first.status, first.sent) == ("continued", 20)
    second = run_task(task, replay_env.context())  # the lease was released: no wait
    assert (second.status, second.sent) == ("done", 60)
    assert Counter(m["Body"] for m in drain(replay_env.sqs, replay_env.target_url)) == Counter(bodies)


def test_a_task_failing_for_good_is_counted_paged_and_can_be_redriven(replay_env):
    tasks = split_tasks(replay_config(dates=["2021-06-04"], hours=[9], feeds=["orders", "order_status"]))
    bodies = write_archive(replay_env.s3, tasks, per_hour=20)
    backfill_id = tasks[0].backfill_id
    start_record(replay_env.store, backfill_id, tasks_total=2)
    assert run_task(tasks[0], replay_env.context()).status == "done"
    broken = FlakySqs(replay_env.sqs, fail=lambda call, index, body: True)
    with pytest.raises(ReplayTaskFailedError):
        run_task(tasks[1], replay_env.context(sqs=broken, max_attempts=2), final_attempt=True)
    record = replay_env.store.get(backfill_id)
    assert (record.state, record.tasks_done, record.tasks_failed) == (BackfillState.FAILED, 1, 1)
    summaries = [e["payload"]["summary"] for e in replay_env.pagerduty.events]
    assert any(tasks[1].task_id in s and "DLQ" in s for s in summaries)
    assert replay_env.pagerduty.incidents[backfill_id] == "triggered"

    # Redriven from the DLQ after the outage: it resumes, and the record is corrected.
    assert run_task(tasks[1], replay_env.context()).status == "done"
    record = replay_env.store.get(backfill_id)
    assert (record.state, record.tasks_done, record.tasks_failed, record.messages_sent) == (
        BackfillState.SUCCEEDED,
        2,
        0,
        40,
    )
    assert replay_env.pagerduty.incidents[backfill_id] == "resolved"
    assert Counter(m["Body"] for m in drain(replay_env.sqs, replay_env.target_url)) == Counter(bodies)


def test_without_a_status_record_the_task_still_runs_once(replay_env):
    """A team's own DAG may invoke tasks for a backfill the trigger never saw."""
    task = ReplayTask(
        backfill_id="team-dag-0123abcd", target="orders-ingest", feed="orders", day=date(2021, 6, 4), hour=9
    )
    write_archive(replay_env.s3, [task], per_hour=12)
    assert run_task(task, replay_env.context()).status == "done"
    assert run_task(task, replay_env.context()).status == "already_done"
    assert len(drain(replay_env.sqs, replay_env.target_url)) == 12


def test_the_trigger_queues_tasks_ten_per_call_retrying_failed_entries(replay_env):
    from backfill_orchestrator.replay.dispatch import queue_tasks
    from backfill_orchestrator.replay.task import parse_task

    tasks = split_tasks(replay_config(hours=None))  # 2 feeds x 2 days x 24 hours
    tasks_url = replay_env.sqs.create_queue(QueueName="replay-tasks")["QueueUrl"]
    flaky = FlakySqs(replay_env.sqs, fail=lambda call, index, body: call == 2 and index < 3)
    assert queue_tasks(tasks, sqs=flaky, queue_url=tasks_url, sender_options={"sleep": lambda s: None}) == 96
    assert flaky.calls == 10 + 1  # 96 tasks in 10 batches, plus one retry of the 3 failed entries
    queued = [parse_task(m["Body"]) for m in drain(replay_env.sqs, tasks_url)]
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


def test_a_cancelled_backfill_stops_its_tasks_at_the_next_batch_and_skips_the_rest(replay_env, monkeypatch):
    from backfill_orchestrator.replay import runner

    monkeypatch.setattr(runner, "CANCEL_CHECK_SECONDS", 0.0)
    tasks = split_tasks(replay_config())
    write_archive(replay_env.s3, tasks, per_hour=40)
    backfill_id = tasks[0].backfill_id
    start_record(replay_env.store, backfill_id, tasks_total=len(tasks))
    sqs = CancellingSqs(replay_env.sqs, replay_env.store, backfill_id)
    first = run_task(tasks[0], replay_env.context(sqs=sqs))
    assert first.status == "cancelled" and sqs.batches == 1  # in flight: stopped after its batch
    rest = [run_task(task, replay_env.context()) for task in tasks[1:]]
    assert [r.status for r in rest] == ["cancelled"] * 7  # not yet started: skipped, nothing sent
    assert len(drain(replay_env.sqs, replay_env.target_url)) == 10
    record = replay_env.store.get(backfill_id)
    assert record.state is BackfillState.CANCELLED and record.messages_sent == 10
