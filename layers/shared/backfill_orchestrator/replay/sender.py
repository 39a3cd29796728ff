"""Sending replayed messages: the attributes that mark them, batches that fit SQS's limits,
and `SendMessageBatch` with retries of only the entries that failed.

SQS limits (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html):
at most 10 entries per SendMessageBatch, and the batch's total size (bodies plus message
attributes: names, types and values) within the payload limit. We keep 256 KiB for the
batch and for a single message (configurable: queues created since 2025 accept 1 MiB)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from backfill_orchestrator.errors import ServiceError
from backfill_orchestrator.replay.archive import ArchivedMessage, Position
from backfill_orchestrator.replay.ratelimit import TokenBucket
from backfill_orchestrator.replay.task import ReplayTask

MAX_BATCH_ENTRIES = 10
DEFAULT_MAX_BATCH_BYTES = 256 * 1024
# Whole-request errors worth another try; any other error code is the target's fault.
TRANSIENT_CODES = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "RequestThrottled",
        "ServiceUnavailable",
        "InternalError",
        "InternalFailure",
        "KmsThrottled",
        "AWS.SimpleQueueService.KmsThrottled",
        "RequestTimeout",
    }
)


class TargetQueueError(ServiceError, RuntimeError):
    """SQS refused the whole request for a reason retrying will not fix (no such queue, no
    permission, KMS key disabled, ...)."""


class SendIncompleteError(ServiceError, RuntimeError):
    """Some entries still failed after every retry; `outcome` says what was sent and refused,
    `unsent` what is still owed."""

    def __init__(self, outcome: BatchOutcome, unsent: list[ReplayMessage], reason: str):
        self.outcome = outcome
        self.unsent = unsent
        super().__init__(f"{len(unsent)} message(s) not sent after retries: {reason}")


@dataclass(frozen=True)
class ReplayMessage:
    position: Position
    body: str
    attributes: dict[str, dict[str, str]]
    size: int


@dataclass(frozen=True)
class Rejection:
    """A message that cannot be sent: reported in the task result, never silently dropped."""

    position: Position
    reason: str


@dataclass
class Batch:
    """Consecutive archive lines: the messages to send and the lines already known to be
    unsendable. After the batch, everything up to `last` is resolved."""

    messages: list[ReplayMessage] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    last: Position | None = None
    size: int = 0


@dataclass
class BatchOutcome:
    sent: list[Position] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    calls: int = 0


def replay_attributes(task: ReplayTask, *, source: str) -> dict[str, dict[str, str]]:
    """What tells a consumer that a message is a replay, and of what."""
    return {
        "backfill_id": {"DataType": "String", "StringValue": task.backfill_id},
        "replay": {"DataType": "String", "StringValue": "true"},
        "original_feed": {"DataType": "String", "StringValue": task.feed},
        "original_day": {"DataType": "String", "StringValue": task.day.isoformat()},
        "original_hour": {"DataType": "Number", "StringValue": str(task.hour)},
        "replay_source": {"DataType": "String", "StringValue": source},
    }


def message_size(body: str, attributes: dict[str, dict[str, str]]) -> int:
    """Bytes SQS counts against its limit: the body plus each attribute's name, type and value."""
    size = len(body.encode("utf-8"))
    for name, value in attributes.items():
        size += len(name.encode()) + len(value["DataType"].encode()) + len(value["StringValue"].encode())
    return size


def build_messages(
    task: ReplayTask, archived: Iterable[ArchivedMessage], *, bucket: str, max_message_bytes: int
) -> Iterator[ReplayMessage | Rejection]:
    for item in archived:
        if item.body is None:
            yield Rejection(item.position, item.problem or "unreadable")
            continue
        source = f"s3://{bucket}/{item.position.key}#L{item.position.line}"
        attributes = replay_attributes(task, source=source)
        size = message_size(item.body, attributes)
        if size > max_message_bytes:
            yield Rejection(
                item.position, f"too_big: {size} bytes with attributes, SQS allows {max_message_bytes}"
            )
        else:
            yield ReplayMessage(item.position, item.body, attributes, size)


def batches(
    items: Iterable[ReplayMessage | Rejection], *, max_entries: int = MAX_BATCH_ENTRIES, max_bytes: int
) -> Iterator[Batch]:
    """Group consecutive items into batches of at most `max_entries` messages and `max_bytes`."""
    batch = Batch()
    for item in items:
        if (
            isinstance(item, ReplayMessage)
            and batch.messages
            and (len(batch.messages) >= max_entries or batch.size + item.size > max_bytes)
        ):
            yield batch
            batch = Batch()
        if isinstance(item, Rejection):
            batch.rejections.append(item)
        else:
            batch.messages.append(item)
            batch.size += item.size
        batch.last = item.position
    if batch.last is not None:
        yield batch


@dataclass(frozen=True, kw_only=True)
class BatchSender:
    """SendMessageBatch to one queue; entries that fail with SenderFault are rejected at once
    (retrying cannot help), the others are retried alone with exponential backoff and jitter."""

    sqs: Any
    queue_url: str
    limiter: TokenBucket | None = None
    max_attempts: int = 6
    backoff_base: float = 0.1
    backoff_max: float = 5.0
    sleep: Callable[[float], None] = time.sleep
    jitter: Callable[[], float] = random.random

    def send(self, messages: list[ReplayMessage]) -> BatchOutcome:
        if len(messages) > MAX_BATCH_ENTRIES:
            raise ValueError(f"at most {MAX_BATCH_ENTRIES} messages per batch, got {len(messages)}")
        outcome = BatchOutcome()
        pending = {str(index): message for index, message in enumerate(messages)}
        reason = ""
        for attempt in range(1, self.max_attempts + 1):
            if not pending:
                break
            if attempt > 1:
                # Full jitter: spreads retries of concurrent senders apart.
                self.sleep(min(self.backoff_max, self.backoff_base * 2 ** (attempt - 2)) * self.jitter())
            if self.limiter is not None:
                self.limiter.acquire(len(pending))
            outcome.calls += 1
            try:
                response = self.sqs.send_message_batch(
                    QueueUrl=self.queue_url,
                    Entries=[
                        {"Id": entry_id, "MessageBody": m.body, "MessageAttributes": m.attributes}
                        for entry_id, m in pending.items()
                    ],
                )
            except ClientError as error:
                code = error.response.get("Error", {}).get("Code", "")
                status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
                if code not in TRANSIENT_CODES and status < 500:
                    raise TargetQueueError(
                        f"SQS refused SendMessageBatch to {self.queue_url}: {code}: {error}"
                    ) from error
                reason = f"{code or status}: {error}"
                continue
            except BotoCoreError as error:  # connection trouble, after botocore's own retries
                reason = str(error)
                continue
            for entry in response.get("Successful", ()):
                outcome.sent.append(pending.pop(entry["Id"]).position)
            for entry in response.get("Failed", ()):
                if entry.get("SenderFault"):
                    message = pending.pop(entry["Id"])
                    outcome.rejected.append(
                        Rejection(
                            message.position,
                            f"rejected: {entry.get('Code')}: {entry.get('Message', '')}".strip(),
                        )
                    )
                else:
                    reason = f"{entry.get('Code')}: {entry.get('Message', '')}"
        if pending:
            raise SendIncompleteError(outcome, list(pending.values()), reason)
        return outcome
