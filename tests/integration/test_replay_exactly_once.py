"""The exactly-once guarantees under concurrency and with the cheap checkpoint (issue 18):
two invocations of one task at once send nothing twice; a run that outlived its lease stops at
its next checkpoint, repeating at most the one batch in flight; every batch costs one
conditional UpdateItem and no read; a crash between a send and its checkpoint repeats at most
that batch, after partial failures too.

Two invocations start one after the other here, the second while the first holds the task:
moto's conditional writes are not atomic across threads (real DynamoDB's are), so two
acquires in the very same instant would test moto, not the ledger."""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from backfill_orchestrator.replay.runner import run_task
from backfill_orchestrator.replay.task import split_tasks
from backfill_orchestrator.replay.task_leases import LeaseLostError, TaskBusyError, TaskLedger
from tests.support.replay import FlakySqs, drain, replay_config, write_archive


def one_task():
    (task,) = split_tasks(replay_config(dates=["2021-06-04"], hours=[9], feeds=["orders"]))
    return task


class MidTaskSqs(FlakySqs):
    """On SendMessageBatch call `on`, before the send: `meanwhile` runs in another thread, and
    this run waits for it, so a second invocation happens while this one holds the task."""

    def __init__(self, sqs, *, on: int, meanwhile):
        super().__init__(sqs)
        self._on, self._meanwhile = on, meanwhile

    def send_message_batch(self, **kwargs):
        if self.calls + 1 == self._on:
            other = threading.Thread(target=self._meanwhile)
            other.start()
            other.join(timeout=60)
        return super().send_message_batch(**kwargs)


def test_a_second_invocation_while_the_first_runs_sends_nothing(replay_env):
    task = one_task()
    bodies = write_archive(replay_env.s3, [task], per_hour=60)
    second: list[object] = []

    def invoke_again() -> None:
        try:
            second.append(run_task(task, replay_env.context()))
        except Exception as error:  # noqa: BLE001 - kept for the assertion below
            second.append(error)

    first = run_task(task, replay_env.context(sqs=MidTaskSqs(replay_env.sqs, on=3, meanwhile=invoke_again)))
    assert (first.status, first.sent) == ("done", 60)
    assert len(second) == 1 and isinstance(second[0], TaskBusyError), second
    assert Counter(m["Body"] for m in drain(replay_env.sqs, replay_env.target_url)) == Counter(
        bodies
    )  # each once
    assert run_task(task, replay_env.context()).status == "already_done"  # and afterwards: a redelivery
    assert drain(replay_env.sqs, replay_env.target_url) == []


class TakeoverSqs(FlakySqs):
    """On SendMessageBatch call `on`, after the send: the lease runs out and another run takes the
    task over and finishes it, before this run gets to its checkpoint."""

    def __init__(self, sqs, *, on: int, takeover):
        super().__init__(sqs)
        self._on, self._takeover = on, takeover

    def send_message_batch(self, **kwargs):
        response = super().send_message_batch(**kwargs)
        if self.calls == self._on:
            self._takeover()
        return response


def test_a_run_that_lost_its_lease_stops_at_its_next_checkpoint(replay_env):
    task = one_task()
    bodies = write_archive(replay_env.s3, [task], per_hour=50)
    results = []

    def takeover() -> None:
        replay_env.clock.now += 1000  # past the first run's lease
        results.append(run_task(task, replay_env.context()))

    with pytest.raises(LeaseLostError):
        run_task(task, replay_env.context(sqs=TakeoverSqs(replay_env.sqs, on=3, takeover=takeover)))
    assert [(r.status, r.sent) for r in results] == [("done", 50)]
    counts = Counter(m["Body"] for m in drain(replay_env.sqs, replay_env.target_url))
    assert set(counts) == set(bodies)
    assert sorted(counts.values()).count(2) == 10  # the one batch in flight, never more


class LedgerCalls:
    """DynamoDB calls made on the ledger table (the status table's are the progress's business)."""

    def __init__(self, ddb, table: str = "replay-idempotency"):
        self.calls: Counter[str] = Counter()
        self._table = table
        ddb.meta.events.register("before-parameter-build.dynamodb.*", self._count)

    def _count(self, model, params, **_):
        tables = {params.get("TableName")} | {
            next(iter(item.values()))["TableName"] for item in params.get("TransactItems", ())
        }
        if self._table in tables:
            self.calls[model.name] += 1


def test_each_batch_costs_one_conditional_update_and_no_read(replay_env):
    task = one_task()
    write_archive(replay_env.s3, [task], per_hour=95)
    ddb = LedgerCalls(replay_env.ddb)
    result = run_task(task, replay_env.context())
    assert (result.status, result.sent, result.calls) == ("done", 95, 10)
    # acquire (1 UpdateItem), one checkpoint per batch (10), finish (1 transaction); no reads.
    assert ddb.calls == Counter({"UpdateItem": 11, "TransactWriteItems": 1})


def test_a_checkpoint_keeps_what_it_does_not_rewrite(replay_env):
    """Checkpoints write only what changed; a crash after partial failures still resumes with the
    failures, counts and positions already resolved, repeating at most the batch in flight."""
    task = one_task()
    bodies = write_archive(replay_env.s3, [task], per_hour=50)
    rejected = '"n":3}'  # SenderFault on the first batch: reported, never retried, never resent

    class Rejecting(FlakySqs):
        def send_message_batch(self, *, QueueUrl, Entries):  # noqa: N803 - boto3's names
            response = super().send_message_batch(
                QueueUrl=QueueUrl, Entries=[e for e in Entries if rejected not in e["MessageBody"]]
            )
            refused = [e for e in Entries if rejected in e["MessageBody"]]
            response.setdefault("Failed", [])
            response["Failed"] += [
                {"Id": e["Id"], "SenderFault": True, "Code": "InvalidMessageContents"} for e in refused
            ]
            return response

    with pytest.raises(FlakySqs.Crash):
        run_task(task, replay_env.context(sqs=Rejecting(replay_env.sqs, crash_on=4, crash_after_send=True)))
    state = TaskLedger(table_name="replay-idempotency", dynamodb_client=replay_env.ddb).get(task.task_id)
    assert (state.sent, state.failed, len(state.failures)) == (29, 1, 1)  # three batches checkpointed
    replay_env.clock.now += 1000
    result = run_task(task, replay_env.context())
    assert (result.status, result.sent, result.failed) == ("done", 49, 1)  # counted from the checkpoint: once
    assert [f.reason for f in result.failures] == ["rejected: InvalidMessageContents:"]
    counts = Counter(m["Body"] for m in drain(replay_env.sqs, replay_env.target_url))
    assert set(counts) == set(bodies) - {b for b in bodies if b.endswith(rejected)}
    assert sorted(counts.values()).count(2) == 10
