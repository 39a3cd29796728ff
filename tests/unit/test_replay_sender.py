"""Batching within SQS limits, the replay attributes, retrying only failed entries, and the
token bucket, on a scripted SQS double (the moto path is in tests/integration)."""

from __future__ import annotations

from datetime import date

import pytest
from botocore.exceptions import ClientError

from backfill_orchestrator.replay.archive import ArchivedMessage, Position
from backfill_orchestrator.replay.ratelimit import TokenBucket
from backfill_orchestrator.replay.sender import (
    BatchSender,
    Rejection,
    ReplayMessage,
    SendIncompleteError,
    TargetQueueError,
    batches,
    build_messages,
    message_size,
    replay_attributes,
)
from backfill_orchestrator.replay.task import ReplayTask

TASK = ReplayTask(
    backfill_id="replay-orders-1a2b3c4d", target="orders-ingest", feed="orders", day=date(2021, 6, 4), hour=9
)


def archived(count: int, *, body_size: int = 10) -> list[ArchivedMessage]:
    return [
        ArchivedMessage(Position("k", line), '"' + "x" * (body_size - 2) + '"')
        for line in range(1, count + 1)
    ]


def test_attributes_mark_a_replay_and_count_towards_the_size():
    attributes = replay_attributes(TASK, source="s3://b/k#L1")
    assert {name: value["StringValue"] for name, value in attributes.items()} == {
        "backfill_id": "replay-orders-1a2b3c4d",
        "replay": "true",
        "original_feed": "orders",
        "original_day": "2021-06-04",
        "original_hour": "9",
        "replay_source": "s3://b/k#L1",
    }
    expected = len("héllo".encode()) + sum(
        len(n) + len(v["DataType"]) + len(v["StringValue"]) for n, v in attributes.items()
    )
    assert message_size("héllo", attributes) == expected


def test_batches_hold_at_most_ten_messages():
    items = list(build_messages(TASK, archived(25), bucket="b", max_message_bytes=256 * 1024))
    groups = list(batches(items, max_bytes=256 * 1024))
    assert [len(g.messages) for g in groups] == [10, 10, 5]
    assert [g.last.line for g in groups] == [10, 20, 25]


def test_batches_stay_within_the_byte_limit_and_too_big_is_reported():
    limit = 256 * 1024
    items = list(build_messages(TASK, archived(9, body_size=60_000), bucket="b", max_message_bytes=limit))
    big = list(build_messages(TASK, archived(1, body_size=limit), bucket="b", max_message_bytes=limit))
    assert isinstance(big[0], Rejection) and big[0].reason.startswith("too_big")
    groups = list(batches([*items[:5], *big, *items[5:]], max_bytes=limit))
    assert all(g.size <= limit for g in groups)
    assert [len(g.messages) for g in groups] == [4, 4, 1]
    assert sum(len(g.rejections) for g in groups) == 1  # the too-big line rides along, reported


def test_unreadable_lines_become_rejections():
    items = list(
        build_messages(
            TASK,
            [ArchivedMessage(Position("k", 3), None, "invalid_json: x")],
            bucket="b",
            max_message_bytes=1024,
        )
    )
    assert items == [Rejection(Position("k", 3), "invalid_json: x")]


class ScriptedSqs:
    """Answers SendMessageBatch from a script: per call, the entry positions (lines) to fail
    transiently, to refuse (SenderFault), or an exception to raise."""

    def __init__(self, script):
        self.script = list(script)
        self.calls: list[list[int]] = []
        self.delivered: list[int] = []

    def send_message_batch(self, *, QueueUrl, Entries):  # noqa: N803 - boto3's names
        lines = [
            int(e["MessageAttributes"]["replay_source"]["StringValue"].rsplit("#L", 1)[1]) for e in Entries
        ]
        self.calls.append(lines)
        step = self.script.pop(0) if self.script else {}
        if isinstance(step, Exception):
            raise step
        ok, failed = [], []
        for entry, line in zip(Entries, lines, strict=True):
            if line in step.get("transient", ()):
                failed.append(
                    {"Id": entry["Id"], "SenderFault": False, "Code": "InternalError", "Message": "try again"}
                )
            elif line in step.get("refuse", ()):
                failed.append(
                    {"Id": entry["Id"], "SenderFault": True, "Code": "InvalidParameterValue", "Message": "no"}
                )
            else:
                ok.append({"Id": entry["Id"], "MessageId": f"m{line}", "MD5OfMessageBody": "x"})
                self.delivered.append(line)
        return {"Successful": ok, "Failed": failed}


def messages(count: int) -> list[ReplayMessage]:
    return [
        m
        for m in build_messages(TASK, archived(count), bucket="b", max_message_bytes=1024)
        if isinstance(m, ReplayMessage)
    ]


def sender(sqs, **kwargs) -> tuple[BatchSender, list[float]]:
    slept: list[float] = []
    return BatchSender(sqs=sqs, queue_url="q", sleep=slept.append, jitter=lambda: 1.0, **kwargs), slept


def test_only_failed_entries_are_retried():
    sqs = ScriptedSqs([{"transient": {2, 7}}, {"transient": {7}}, {}])
    batch_sender, slept = sender(sqs)
    outcome = batch_sender.send(messages(10))
    assert sqs.calls == [list(range(1, 11)), [2, 7], [7]]
    assert sorted(sqs.delivered) == list(range(1, 11))  # each once
    assert sorted(p.line for p in outcome.sent) == list(range(1, 11)) and outcome.calls == 3
    assert slept == [0.1, 0.2]  # exponential backoff (jitter pinned to its maximum)


def test_sender_faults_are_reported_not_retried():
    sqs = ScriptedSqs([{"refuse": {4}}])
    outcome = sender(sqs)[0].send(messages(5))
    assert sqs.calls == [[1, 2, 3, 4, 5]]
    assert [(r.position.line, r.reason.split(":")[0]) for r in outcome.rejected] == [(4, "rejected")]


def test_entries_failing_every_attempt_raise_with_what_was_sent():
    sqs = ScriptedSqs([{"transient": {3}}] * 10)
    batch_sender, _ = sender(sqs, max_attempts=3)
    with pytest.raises(SendIncompleteError) as caught:
        batch_sender.send(messages(4))
    assert [m.position.line for m in caught.value.unsent] == [3]
    assert sorted(p.line for p in caught.value.outcome.sent) == [1, 2, 4]
    assert len(sqs.calls) == 3


def client_error(code: str, status: int) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}},
        "SendMessageBatch",
    )


def test_whole_request_errors_transient_or_not():
    sqs = ScriptedSqs([client_error("ServiceUnavailable", 503), {}])
    outcome = sender(sqs)[0].send(messages(3))
    assert len(outcome.sent) == 3 and len(sqs.calls) == 2
    sqs = ScriptedSqs([client_error("AWS.SimpleQueueService.NonExistentQueue", 400)])
    with pytest.raises(TargetQueueError, match="NonExistentQueue"):
        sender(sqs)[0].send(messages(3))


def test_more_than_ten_is_a_programming_error():
    with pytest.raises(ValueError, match="at most 10"):
        sender(ScriptedSqs([]))[0].send(messages(11))


class FakeTime:
    def __init__(self):
        self.now = 1000.0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_token_bucket_holds_the_average_rate():
    time = FakeTime()
    bucket = TokenBucket(rate=50, clock=time.clock, sleep=time.sleep)
    start = time.now
    for _ in range(100):  # 1000 messages in batches of 10
        bucket.acquire(10)
    # The first second's worth goes at once (the burst); the rest at 50 per second.
    assert time.now - start == pytest.approx((1000 - 50) / 50)


def test_token_bucket_batches_larger_than_the_burst_keep_the_rate():
    time = FakeTime()
    bucket = TokenBucket(rate=2, clock=time.clock, sleep=time.sleep)
    start = time.now
    for _ in range(5):
        bucket.acquire(10)
    assert time.now - start == pytest.approx((50 - 2) / 2)
    with pytest.raises(ValueError):
        TokenBucket(rate=0)


def test_sender_draws_tokens_for_every_attempt():
    time = FakeTime()
    bucket = TokenBucket(rate=10, clock=time.clock, sleep=time.sleep)
    sqs = ScriptedSqs([{"transient": {1, 2}}, {}])
    BatchSender(sqs=sqs, queue_url="q", limiter=bucket, sleep=time.sleep, jitter=lambda: 0.0).send(
        messages(10)
    )
    assert time.now - 1000.0 == pytest.approx(2 / 10)  # 10 from the burst, 2 more for the retry
