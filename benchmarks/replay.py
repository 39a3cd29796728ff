"""Replay benchmark: re-send an archived feed-hour to an SQS queue on a moto server
(127.0.0.1), our way (the replay runner: S3 archive, SendMessageBatch of 10, a DynamoDB
checkpoint per batch) side by side with the naive way in the same run (the same archive
reader, then one `send_message` per message). SQS calls are counted with a botocore event
hook on the client, not assumed. Each round uses fresh queues of `MESSAGES` (< 1,000: moto
walks the queue on every send, so a filling queue would slow both sides).

    .venv/bin/python benchmarks/replay.py
"""

from __future__ import annotations

import gzip
import json
import logging
import statistics
import sys
import time
import uuid
from collections import Counter
from datetime import date

import boto3
from moto.server import ThreadedMotoServer

from backfill_orchestrator.replay.archive import list_archive_keys, read_archive
from backfill_orchestrator.replay.layout import ArchiveLayout
from backfill_orchestrator.replay.ledger import TaskLedger
from backfill_orchestrator.replay.runner import ReplayContext, run_task
from backfill_orchestrator.replay.task import ReplayTask

MESSAGES = 100
ROUNDS = 8
REGION = "us-east-1"
BUCKET = "bench-archive"
LAYOUT = ArchiveLayout.parse("{feed}/{yyyy}/{mm}/{dd}/{hh}/")
MAX_BYTES = 256 * 1024


def clients(endpoint: str):
    session = boto3.session.Session(aws_access_key_id="bench", aws_secret_access_key="bench", region_name=REGION)
    return tuple(session.client(name, endpoint_url=endpoint) for name in ("s3", "sqs", "dynamodb"))


class CallCounter:
    """Counts the SQS API calls a client makes, by operation."""

    def __init__(self, sqs):
        self.calls: Counter[str] = Counter()
        sqs.meta.events.register("before-call.sqs.*", self._count)

    def _count(self, model, **_):  # noqa: ANN001 - botocore's hook signature
        self.calls[model.name] += 1

    def take(self) -> Counter[str]:
        taken, self.calls = self.calls, Counter()
        return taken


def write_archive(s3, task: ReplayTask) -> None:
    prefix = LAYOUT.prefix(feed=task.feed, day=task.day, hour=task.hour)
    lines = [json.dumps({"order_id": n, "status": "PAID", "amount": n * 7 % 1000, "pad": "x" * 200}) for n in range(MESSAGES)]
    for part in range(3):
        text = ("\n".join(lines[part::3]) + "\n").encode()
        s3.put_object(Bucket=BUCKET, Key=f"{prefix}part-{part}.jsonl.gz", Body=gzip.compress(text))


def naive(s3, sqs, task: ReplayTask, queue_url: str) -> int:
    """The baseline: same reader, one SendMessage per message."""
    prefix = LAYOUT.prefix(feed=task.feed, day=task.day, hour=task.hour)
    keys = list_archive_keys(s3, bucket=BUCKET, prefix=prefix)
    sent = 0
    for item in read_archive(s3, bucket=BUCKET, keys=keys, max_line_bytes=MAX_BYTES):
        sqs.send_message(QueueUrl=queue_url, MessageBody=item.body)
        sent += 1
    return sent


def count_and_delete(sqs, queue_url: str) -> int:
    count = int(sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessages"])
                ["Attributes"]["ApproximateNumberOfMessages"])  # fmt: skip
    sqs.delete_queue(QueueUrl=queue_url)
    return count


def main() -> int:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one log line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        s3, sqs, ddb = clients(f"http://{host}:{port}")
        s3.create_bucket(Bucket=BUCKET)
        ddb.create_table(
            TableName="bench-idempotency",
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        counter = CallCounter(sqs)
        rows = []
        for round_ in range(ROUNDS):
            # A fresh backfill id per round: the ledger would (rightly) refuse to replay a task twice.
            task = ReplayTask(backfill_id=f"bench-{uuid.uuid4().hex[:8]}", target="bench", feed="orders",
                              day=date(2021, 6, 4), hour=round_)  # fmt: skip
            write_archive(s3, task)
            ours_url = sqs.create_queue(QueueName=f"bench-ours-{round_}")["QueueUrl"]
            naive_url = sqs.create_queue(QueueName=f"bench-naive-{round_}")["QueueUrl"]
            ctx = ReplayContext(
                s3=s3, sqs=sqs, ledger=TaskLedger(table_name="bench-idempotency", dynamodb_client=ddb), progress=None,
                archive_bucket=BUCKET, layout=LAYOUT, targets={"bench": ours_url}, max_message_bytes=MAX_BYTES,
            )  # fmt: skip
            counter.take()

            def ours(task=task, ctx=ctx):
                started = time.perf_counter()
                result = run_task(task, ctx)
                return result.sent, time.perf_counter() - started, counter.take()

            def baseline(task=task, naive_url=naive_url):
                started = time.perf_counter()
                sent = naive(s3, sqs, task, naive_url)
                return sent, time.perf_counter() - started, counter.take()

            # Alternate who goes first: the machine is shared, so load drifts during a run.
            if round_ % 2:
                naive_sent, naive_s, naive_calls = baseline()
                ours_sent, ours_s, ours_calls = ours()
            else:
                ours_sent, ours_s, ours_calls = ours()
                naive_sent, naive_s, naive_calls = baseline()
            assert ours_sent == naive_sent == MESSAGES, (ours_sent, naive_sent)
            assert count_and_delete(sqs, ours_url) == count_and_delete(sqs, naive_url) == MESSAGES
            rows.append((MESSAGES / ours_s, MESSAGES / naive_s, sum(ours_calls.values()), sum(naive_calls.values()),
                         ours_calls["SendMessageBatch"]))  # fmt: skip
    finally:
        server.stop()

    print(f"{MESSAGES} messages per round, {ROUNDS} rounds, moto server on 127.0.0.1 (fresh queues each round)")
    print("moto does the same work per message for SendMessage and for each SendMessageBatch entry, so the")
    print("speed ratio here shows the round trips saved (less our DynamoDB checkpoint per batch), not AWS's.")
    print(f"{'round':>5} {'ours msg/s':>10} {'naive msg/s':>11} {'ratio':>6} {'ours SQS calls':>14} {'naive SQS calls':>15}")
    for index, (ours, base, ours_calls, naive_calls, _) in enumerate(rows, start=1):
        print(f"{index:>5} {ours:>10.0f} {base:>11.0f} {ours / base:>6.2f} {ours_calls:>14} {naive_calls:>15}")
    ours_rate = statistics.median(row[0] for row in rows)
    naive_rate = statistics.median(row[1] for row in rows)
    calls_per_msg = sum(row[2] for row in rows) / (MESSAGES * ROUNDS)
    naive_calls_per_msg = sum(row[3] for row in rows) / (MESSAGES * ROUNDS)
    batch_calls = sum(row[4] for row in rows)
    print(f"median: ours {ours_rate:.0f} msg/s, naive {naive_rate:.0f} msg/s; SQS calls per message: ours "
          f"{calls_per_msg:.3f} ({batch_calls} SendMessageBatch), naive {naive_calls_per_msg:.3f}")  # fmt: skip
    print(
        f"BENCH replay msgs_per_s={ours_rate:.0f} naive_msgs_per_s={naive_rate:.0f} "
        f"ratio={ours_rate / naive_rate:.2f} calls_per_msg={calls_per_msg:.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
