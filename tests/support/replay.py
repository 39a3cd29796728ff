"""The replay function's test helpers: an archive written to moto's S3 (plain and gzip JSON
lines), the ledger and status tables built from template.yaml, the target and tasks queues
read back, SQS that fails or crashes on chosen calls, a fake clock, and SQS events as the event
source delivers them."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
from types import ModuleType

from pydantic import SecretStr

from backfill_orchestrator.config import parse_config
from backfill_orchestrator.notify import Notifier, PagerDutyClient, SlackWebApi
from backfill_orchestrator.replay.layout import ArchiveLayout
from backfill_orchestrator.replay.progress import ReplayProgress
from backfill_orchestrator.replay.runner import ReplayContext
from backfill_orchestrator.replay.task import ReplayTask
from backfill_orchestrator.replay.task_leases import TaskLedger
from backfill_orchestrator.status import BackfillState, StatusStore
from tests.support.aws import create_table
from tests.support.configs import REPO_ROOT

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


IDEMPOTENCY_TABLE = "replay-idempotency"
STATUS_TABLE = "backfill-status"


def create_tables(ddb) -> None:
    """The ledger and the status table, as template.yaml defines them."""
    create_table(ddb, "IdempotencyTable", table_name=IDEMPOTENCY_TABLE)
    create_table(ddb, "StatusTable", table_name=STATUS_TABLE)


def write_archive(s3, tasks: list[ReplayTask], *, per_hour: int, objects: int = 3) -> list[str]:
    """Each feed-hour gets `objects` objects (every second one gzip); returns all bodies."""
    bodies: list[str] = []
    for task in tasks:
        prefix = LAYOUT.prefix(feed=task.feed, day=task.day, hour=task.hour)
        lines = [
            json.dumps(
                {"feed": task.feed, "day": task.day.isoformat(), "hour": task.hour, "n": n},
                separators=(",", ":"),
            )
            for n in range(per_hour)
        ]
        bodies.extend(lines)
        chunk = -(-per_hour // objects)
        for index in range(objects):
            part = "\n".join(lines[index * chunk : (index + 1) * chunk]) + "\n"
            if index % 2:
                s3.put_object(
                    Bucket=ARCHIVE,
                    Key=f"{prefix}part-{index:03d}.jsonl.gz",
                    Body=gzip.compress(part.encode()),
                )
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
            QueueUrl=queue_url,
            Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)],
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


class ReplayEnv:
    """The replay function's world on moto (the `replay_env` fixture): clients, the target queue, the
    status store, a fake clock, Slack and PagerDuty receivers; `context()` makes a task's ReplayContext."""

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
            pagerduty=PagerDutyClient(
                routing_key=SecretStr(self.pagerduty.routing_key), events_url=self.pagerduty.events_url
            ),
            status_store=self.store,
            default_channel="#data-oncall",
        )

    def context(self, *, sqs=None, max_concurrency: int = 1, **sender_options) -> ReplayContext:
        notifier = self.notifier()
        return ReplayContext(
            s3=self.s3,
            sqs=sqs or self.sqs,
            ledger=TaskLedger(table_name=IDEMPOTENCY_TABLE, dynamodb_client=self.ddb, clock=self.clock),
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


class FlakySqs:
    """The real (moto) client, except that SendMessageBatch entries chosen by `fail` are not
    sent and come back as Failed, like SQS's partial failures; `crash_on` ends the process
    (an exception nothing catches) on that call, before or after the send."""

    class Crash(BaseException):
        pass

    def __init__(
        self,
        sqs,
        *,
        fail=lambda call, index, body: False,
        crash_on: int | None = None,
        crash_after_send=False,
    ):
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
                failed.append(
                    {"Id": entry["Id"], "SenderFault": False, "Code": "InternalError", "Message": "injected"}
                )
            else:
                keep.append(entry)
        self.failed_entries += len(failed)
        response = (
            self._sqs.send_message_batch(QueueUrl=QueueUrl, Entries=keep) if keep else {"Successful": []}
        )
        if self._crash_on == self.calls:
            raise FlakySqs.Crash()
        return {
            "Successful": response.get("Successful", []),
            "Failed": [*response.get("Failed", []), *failed],
        }


def replay_config(**changes):
    return parse_config({**CONFIG, **changes})


def sqs_event(bodies: list[str], *, receive_count: int = 1, ids: list[str] | None = None) -> dict:
    ids = ids or [f"msg-{index}" for index in range(len(bodies))]
    return {
        "Records": [
            {
                "messageId": message_id,
                "receiptHandle": f"handle-{message_id}",
                "body": body,
                "attributes": {
                    "ApproximateReceiveCount": str(receive_count),
                    "SentTimestamp": "1622538000000",
                },
                "messageAttributes": {},
                "md5OfBody": hashlib.md5(body.encode()).hexdigest(),
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:backfill-replay-tasks",
                "awsRegion": REGION,
            }
            for message_id, body in zip(ids, bodies, strict=True)
        ]
    }


def load_replay_app() -> ModuleType:
    """functions/replay/app.py as Lambda loads it (`app.handler`), under another module name."""
    spec = importlib.util.spec_from_file_location("replay_app", REPO_ROOT / "functions" / "replay" / "app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
