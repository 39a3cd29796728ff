"""Replay benchmark: re-send archived feed-hours of 1,000 messages (`MESSAGES`) to SQS on a moto server,
three ways side by side in the same run, against the same server:

- ours: the replay runner (lease, S3 archive, SendMessageBatch of 10, checkpoints, finish);
- naive: the same archive reader, then one `send_message` per message;
- bare batch: no archive, no ledger: a loop of `send_message_batch` calls over the same
  messages, bodies and attributes built beforehand. What SQS (here moto) itself allows: the
  ceiling for ours.

The moto server runs in its own process (as SQS does not share our interpreter), so its CPU
time is measured apart: `server_share` is the server's CPU seconds over ours' wall time.
SQS calls are counted with a botocore event hook on the client, not assumed. Each round uses
fresh queues (moto's work per message grows with the queue) and rotates who goes first (the
machine is shared, load drifts); the figures are medians over rounds.

    .venv/bin/python benchmarks/replay.py
"""

from __future__ import annotations

import gzip
import json
import logging
import multiprocessing
import os
import statistics
import sys
import time
import uuid
from collections import Counter
from datetime import date

import boto3

from backfill_orchestrator.replay.archive import list_archive_keys, read_archive
from backfill_orchestrator.replay.layout import ArchiveLayout
from backfill_orchestrator.replay.runner import ReplayContext, run_task
from backfill_orchestrator.replay.sender import batches, build_messages
from backfill_orchestrator.replay.task import ReplayTask
from backfill_orchestrator.replay.task_leases import TaskLedger

MESSAGES = 1000
ROUNDS = 5
REGION = "us-east-1"
BUCKET = "bench-archive"
LAYOUT = ArchiveLayout.parse("{feed}/{yyyy}/{mm}/{dd}/{hh}/")
MAX_BYTES = 256 * 1024


def _serve(conn) -> None:  # noqa: ANN001 - a multiprocessing Connection
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one log line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    conn.send(server.get_host_and_port())
    conn.recv()  # until told to stop
    server.stop()


class MotoProcess:
    """A moto server in a child process on 127.0.0.1 (a free port), and its CPU time."""

    def __enter__(self) -> MotoProcess:
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child,), daemon=True)
        self._process.start()
        host, port = self._conn.recv()
        self.endpoint = f"http://{host}:{port}"
        return self

    def cpu_seconds(self) -> float:
        with open(f"/proc/{self._process.pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def __exit__(self, *_exc) -> None:
        self._conn.send("stop")
        self._process.join(timeout=10)


def clients(endpoint: str):
    session = boto3.session.Session(
        aws_access_key_id="bench", aws_secret_access_key="bench", region_name=REGION
    )
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
    lines = [
        json.dumps({"order_id": n, "status": "PAID", "amount": n * 7 % 1000, "pad": "x" * 200})
        for n in range(MESSAGES)
    ]
    for part in range(3):
        text = ("\n".join(lines[part::3]) + "\n").encode()
        s3.put_object(Bucket=BUCKET, Key=f"{prefix}part-{part}.jsonl.gz", Body=gzip.compress(text))


def archived(s3, task: ReplayTask):
    prefix = LAYOUT.prefix(feed=task.feed, day=task.day, hour=task.hour)
    keys = list_archive_keys(s3, bucket=BUCKET, prefix=prefix)
    return read_archive(s3, bucket=BUCKET, keys=keys, max_line_bytes=MAX_BYTES)


def naive(s3, sqs, task: ReplayTask, queue_url: str) -> int:
    """One baseline: same reader, one SendMessage per message."""
    sent = 0
    for item in archived(s3, task):
        sqs.send_message(QueueUrl=queue_url, MessageBody=item.body)
        sent += 1
    return sent


def prepared_batches(s3, task: ReplayTask) -> list[list[dict]]:
    """The ceiling's input, built before it is timed: the same messages, attributes and batches as ours."""
    messages = build_messages(task, archived(s3, task), bucket=BUCKET, max_message_bytes=MAX_BYTES)
    return [
        [
            {"Id": str(i), "MessageBody": m.body, "MessageAttributes": m.attributes}
            for i, m in enumerate(batch.messages)
        ]
        for batch in batches(messages, max_bytes=MAX_BYTES)
    ]


def bare_batch(sqs, entries: list[list[dict]], queue_url: str) -> int:
    """The ceiling: nothing but SendMessageBatch calls."""
    sent = 0
    for batch in entries:
        response = sqs.send_message_batch(QueueUrl=queue_url, Entries=batch)
        assert not response.get("Failed"), response["Failed"]
        sent += len(response["Successful"])
    return sent


def count_and_delete(sqs, queue_url: str) -> int:
    count = int(
        sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessages"])[
            "Attributes"
        ]["ApproximateNumberOfMessages"]
    )
    sqs.delete_queue(QueueUrl=queue_url)
    return count


def main() -> int:
    rows = []
    with MotoProcess() as moto:
        s3, sqs, ddb = clients(moto.endpoint)
        s3.create_bucket(Bucket=BUCKET)
        ddb.create_table(
            TableName="bench-idempotency",
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        counter = CallCounter(sqs)
        ledger = TaskLedger(table_name="bench-idempotency", dynamodb_client=ddb)
        for round_ in range(ROUNDS):
            # A fresh backfill id per round: the ledger would (rightly) refuse to replay a task twice.
            task = ReplayTask(
                backfill_id=f"bench-{uuid.uuid4().hex[:8]}",
                target="bench",
                feed="orders",
                day=date(2021, 6, 4),
                hour=round_,
            )
            write_archive(s3, task)
            urls = {
                way: sqs.create_queue(QueueName=f"bench-{way}-{round_}")["QueueUrl"]
                for way in ("ours", "naive", "bare")
            }
            ctx = ReplayContext(
                s3=s3,
                sqs=sqs,
                ledger=ledger,
                progress=None,
                archive_bucket=BUCKET,
                layout=LAYOUT,
                targets={"bench": urls["ours"]},
                max_message_bytes=MAX_BYTES,
            )
            entries = prepared_batches(s3, task)
            ways = {
                "ours": lambda task=task, ctx=ctx: run_task(task, ctx).sent,
                "naive": lambda task=task, url=urls["naive"]: naive(s3, sqs, task, url),
                "bare": lambda entries=entries, url=urls["bare"]: bare_batch(sqs, entries, url),
            }
            order = list(ways)[round_ % 3 :] + list(ways)[: round_ % 3]  # rotate who goes first
            row = {}
            for way in order:
                counter.take()
                server_before, started = moto.cpu_seconds(), time.perf_counter()
                sent = ways[way]()
                elapsed, server = time.perf_counter() - started, moto.cpu_seconds() - server_before
                assert sent == MESSAGES, (way, sent)
                row[way] = (MESSAGES / elapsed, server / elapsed, sum(counter.take().values()))
            for way, url in urls.items():
                assert count_and_delete(sqs, url) == MESSAGES, way
            rows.append(row)

    print(
        f"{MESSAGES} messages per task, {ROUNDS} rounds, moto server in its own process on 127.0.0.1 (fresh queues each round)"
    )
    print("msg/s per way; server = the moto process's CPU time over the way's wall time")
    print(
        f"{'round':>5} {'ours':>6} {'naive':>6} {'bare':>6} {'ours/bare':>9} {'ours/naive':>10}"
        f" {'server(ours)':>12} {'server(bare)':>12} {'calls ours':>10} {'calls naive':>11}"
    )
    for index, row in enumerate(rows, start=1):
        ours, naive_, bare = row["ours"], row["naive"], row["bare"]
        print(
            f"{index:>5} {ours[0]:>6.0f} {naive_[0]:>6.0f} {bare[0]:>6.0f} {ours[0] / bare[0]:>9.2f} {ours[0] / naive_[0]:>10.2f}"
            f" {ours[1]:>12.0%} {bare[1]:>12.0%} {ours[2]:>10} {naive_[2]:>11}"
        )

    def median(way: str, field: int) -> float:
        return statistics.median(row[way][field] for row in rows)

    ours_rate, naive_rate, bare_rate = median("ours", 0), median("naive", 0), median("bare", 0)
    vs_bare = statistics.median(row["ours"][0] / row["bare"][0] for row in rows)
    ratio = statistics.median(row["ours"][0] / row["naive"][0] for row in rows)
    calls_per_msg = sum(row["ours"][2] for row in rows) / (MESSAGES * ROUNDS)
    print(
        f"median: ours {ours_rate:.0f} msg/s, naive {naive_rate:.0f}, bare SendMessageBatch loop {bare_rate:.0f}; "
        f"the server's CPU is {median('ours', 1):.0%} of ours' time and {median('bare', 1):.0%} of the bare loop's"
    )
    print(
        f"BENCH replay msgs_per_s={ours_rate:.0f} naive_msgs_per_s={naive_rate:.0f} bare_batch_msgs_per_s={bare_rate:.0f} "
        f"vs_bare_batch={vs_bare:.2f} ratio={ratio:.2f} calls_per_msg={calls_per_msg:.3f} "
        f"server_share={median('ours', 1):.2f} bare_server_share={median('bare', 1):.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
