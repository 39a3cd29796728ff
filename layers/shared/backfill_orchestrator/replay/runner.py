"""Running one replay task: take its lease, read its archive prefix from the checkpoint on,
send in batches at the configured rate, checkpoint after every batch (one conditional
update of what changed), and finish it (counted
once on the status record). The Lambda handler only parses events and calls `run_task`.

Guarantees (see docs/replay.md):
- a redelivered task that finished sends nothing (the ledger says DONE);
- a task that died half-way resumes after its last checkpoint: at most the one batch in
  flight when it died can be sent again (each replayed message carries `replay_source`,
  its archive position, so a consumer can recognise that one);
- entries that SQS fails are retried alone; entries it refuses (SenderFault) and lines that
  cannot be sent (too big, not JSON) are reported in the result and counted as failed;
- a task that runs short of time stops at a batch boundary and reports `continued`."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from backfill_orchestrator.config import ConfigIssue
from backfill_orchestrator.errors import ServiceError
from backfill_orchestrator.replay.archive import ArchivedMessage, Position, list_archive_keys, read_archive
from backfill_orchestrator.replay.layout import ArchiveLayout
from backfill_orchestrator.replay.progress import ReplayProgress
from backfill_orchestrator.replay.ratelimit import TokenBucket
from backfill_orchestrator.replay.sender import (
    MAX_BATCH_ENTRIES,
    BatchSender,
    Rejection,
    SendIncompleteError,
    TargetQueueError,
    batches,
    build_messages,
)
from backfill_orchestrator.replay.task import InvalidReplayTaskError, ReplayTask
from backfill_orchestrator.replay.task_leases import (
    Failure,
    LeaseLostError,
    TaskAlreadyDoneError,
    TaskLedger,
    TaskState,
)
from backfill_orchestrator.status.model import BackfillState

logger = logging.getLogger(__name__)

MAX_RECORDED_FAILURES = 20
DEFAULT_REMAINING_SECONDS = 900.0  # no Lambda context (tests, a local run): Lambda's maximum
STOP_MARGIN_SECONDS = 20.0  # stop this long before the deadline: one batch plus a checkpoint
LEASE_MARGIN_SECONDS = 30.0

ResultStatus = Literal["done", "already_done", "continued", "cancelled"]
CANCEL_CHECK_SECONDS = 5.0  # how often a running task reads whether its backfill was cancelled


class ReplayTaskFailedError(ServiceError, RuntimeError):
    """The task could not finish in this run (SQS or S3 kept failing); its checkpoint is
    saved and its lease released, so the next delivery resumes."""


@dataclass(frozen=True)
class TaskResult:
    task_id: str
    status: ResultStatus
    sent: int
    failed: int
    failures: tuple[Failure, ...] = ()
    archive: str = ""  # the s3:// prefix read
    objects: int = 0  # archive objects found under it (0: nothing archived for this hour)
    calls: int = 0  # SendMessageBatch calls made by this run

    def as_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "status": self.status,
            "archive": self.archive,
            "objects": self.objects,
            "sent": self.sent,
            "failed": self.failed,
            "failures": [f.as_dict() for f in self.failures],
        }


@dataclass(frozen=True, kw_only=True)
class ReplayContext:
    """Everything a task run needs; built once per Lambda container (`handler.py`)."""

    s3: Any
    sqs: Any
    ledger: TaskLedger
    progress: ReplayProgress | None
    archive_bucket: str
    layout: ArchiveLayout
    targets: Mapping[str, str]  # the allowlist: target name -> queue URL
    max_message_bytes: int
    max_concurrency: int = 1
    sleep: Callable[[float], None] | None = None
    clock: Callable[[], float] | None = None
    sender_options: dict[str, Any] = field(default_factory=dict)


def resolve_target(task: ReplayTask, targets: Mapping[str, str]) -> str:
    queue_url = targets.get(task.target)
    if queue_url is None:
        known = ", ".join(sorted(targets)) or "none configured"
        raise InvalidReplayTaskError(
            [ConfigIssue("target", f"unknown target {task.target!r}; this deployment allows: {known}")]
        )
    return queue_url


def _rate_limiter(task: ReplayTask, ctx: ReplayContext) -> TokenBucket | None:
    if task.max_messages_per_second is None:
        return None
    # Up to max_concurrency tasks of a config run at once: each gets its share of the rate.
    rate = task.max_messages_per_second / max(1, ctx.max_concurrency)
    kwargs: dict[str, Any] = {}
    if ctx.clock is not None:
        kwargs["clock"] = ctx.clock
    if ctx.sleep is not None:
        kwargs["sleep"] = ctx.sleep
    return TokenBucket(rate=rate, **kwargs)


def _next(position: Position) -> Position:
    return Position(position.key, position.line + 1)


class _Run:
    """One run of one task, holding its lease; counts are the task's totals so far."""

    cancelled = False  # set when the backfill was cancelled while this run was sending

    def __init__(self, task: ReplayTask, ctx: ReplayContext, state: TaskState, owner: str, queue_url: str):
        self.task = task
        self.ctx = ctx
        self.owner = owner
        self.resume_from = state.resume_from
        self.resolved_ahead = set(state.resolved_ahead)
        self.sent = state.sent
        self.failed = state.failed
        self.failures = list(state.failures)
        self.previous = state
        # What the ledger item holds already: a checkpoint writes only what differs.
        self._saved_ahead, self._saved_failed, self._saved_failures = (
            state.resolved_ahead,
            state.failed,
            state.failures,
        )
        self.calls = 0
        self.prefix = ctx.layout.prefix(feed=task.feed, day=task.day, hour=task.hour)
        self.objects = 0
        self.limiter = _rate_limiter(task, ctx)
        self.sender = BatchSender(
            sqs=ctx.sqs,
            queue_url=queue_url,
            limiter=self.limiter,
            sleep=ctx.sleep or time.sleep,
            **ctx.sender_options,
        )
        self.max_entries = MAX_BATCH_ENTRIES
        if self.limiter is not None:  # never burst past one second's worth of the rate
            self.max_entries = max(1, min(MAX_BATCH_ENTRIES, int(self.limiter.capacity)))

    def _archived(self) -> Iterator[ArchivedMessage]:
        keys = list_archive_keys(self.ctx.s3, bucket=self.ctx.archive_bucket, prefix=self.prefix)
        self.objects = len(keys)
        if not keys:
            logger.warning("replay task %s: nothing archived under %s", self.task.task_id, self.archive)
        for item in read_archive(
            self.ctx.s3,
            bucket=self.ctx.archive_bucket,
            keys=keys,
            max_line_bytes=self.ctx.max_message_bytes,
            resume_from=self.resume_from,
        ):
            if item.position not in self.resolved_ahead:
                yield item

    def _record(self, rejections: list[Rejection]) -> None:
        for rejection in rejections:
            self.failed += 1
            if len(self.failures) < MAX_RECORDED_FAILURES:
                self.failures.append(Failure(rejection.position, rejection.reason))
            logger.warning(
                "replay task %s: not sent: %s line %d: %s",
                self.task.task_id,
                rejection.position.key,
                rejection.position.line,
                rejection.reason,
            )

    def _checkpoint(self, resume_from: Position) -> None:
        """After every batch. Only what changed since the last one is written: usually the
        position and the sent count (the ledger item holds the rest)."""
        self.resume_from = resume_from
        ahead = frozenset(p for p in self.resolved_ahead if p >= resume_from)
        self.resolved_ahead = set(ahead)
        failures = tuple(self.failures)
        self.ctx.ledger.checkpoint(
            self.task.task_id,
            owner=self.owner,
            resume_from=resume_from,
            sent=self.sent,
            resolved_ahead=ahead if ahead != self._saved_ahead else None,
            failed=self.failed if self.failed != self._saved_failed else None,
            failures=failures if failures != self._saved_failures else None,
        )
        self._saved_ahead, self._saved_failed, self._saved_failures = ahead, self.failed, failures

    def replay(self, remaining: Callable[[], float]) -> bool:
        """Send what is left; False when time ran short (checkpoint saved), True when done."""
        items = build_messages(
            self.task,
            self._archived(),
            bucket=self.ctx.archive_bucket,
            max_message_bytes=self.ctx.max_message_bytes,
        )
        checked_at = time.monotonic()
        for batch in batches(items, max_entries=self.max_entries, max_bytes=self.ctx.max_message_bytes):
            if time.monotonic() - checked_at >= CANCEL_CHECK_SECONDS:  # cheap: one read every few seconds
                checked_at = time.monotonic()
                if _cancelled(self.task, self.ctx):
                    self.cancelled = True
                    return True
            wait = self.limiter.wait_time(len(batch.messages)) if self.limiter else 0.0
            if remaining() - wait < STOP_MARGIN_SECONDS:
                return False
            self._record(batch.rejections)
            if batch.messages:
                try:
                    outcome = self.sender.send(batch.messages)
                except SendIncompleteError as error:
                    self._save_partial(error, batch.rejections)
                    raise ReplayTaskFailedError(f"replay task {self.task.task_id}: {error}") from error
                self.calls += outcome.calls
                self.sent += len(outcome.sent)
                self._record(outcome.rejected)
            assert batch.last is not None
            self._checkpoint(_next(batch.last))
        return True

    def _save_partial(self, error: SendIncompleteError, reported: list[Rejection]) -> None:
        """Entries that never went out are owed; everything before the first of them is
        resolved, and what was sent or reported after it must not be sent or counted again."""
        self.calls += error.outcome.calls
        self.sent += len(error.outcome.sent)
        self._record(error.outcome.rejected)
        first_unsent = min(m.position for m in error.unsent)
        resolved = [
            *error.outcome.sent,
            *(r.position for r in error.outcome.rejected),
            *(r.position for r in reported),
        ]
        self.resolved_ahead |= {p for p in resolved if p > first_unsent}
        self._checkpoint(first_unsent)

    @property
    def archive(self) -> str:
        return f"s3://{self.ctx.archive_bucket}/{self.prefix}"

    def result(self, status: ResultStatus) -> TaskResult:
        return TaskResult(
            self.task.task_id,
            status,
            self.sent,
            self.failed,
            tuple(self.failures),
            self.archive,
            self.objects,
            self.calls,
        )


def _already_done(task: ReplayTask, ctx: ReplayContext, state: TaskState) -> TaskResult:
    if ctx.progress is not None:
        # The run that finished may have died before finalising; finalising is idempotent.
        ctx.progress.maybe_finalize(task.backfill_id, pagerduty=task.pagerduty)
    return TaskResult(
        task.task_id,
        "already_done",
        state.sent,
        state.failed,
        state.failures,
        archive=state.result.get("archive", ""),
        objects=state.result.get("objects", 0),
    )


def _finish(run: _Run, *, state: Literal["DONE", "FAILED"], error: str | None = None) -> None:
    task, ctx, previous = run.task, run.ctx, run.previous
    result = run.result("done").as_dict() | ({"error": error} if error else {})
    counters: list[dict[str, Any]] = []
    record = ctx.progress.record(task.backfill_id) if ctx.progress is not None else None
    if record is not None and ctx.progress is not None:
        # A task counted as failed before (redriven from the DLQ) moves from failed to done.
        before = previous.result if previous.counted_as_failed else {}
        deltas = {
            "tasks_done": int(state == "DONE"),
            "tasks_failed": int(state == "FAILED") - int(previous.counted_as_failed),
            "tasks_empty": int(state == "DONE" and run.objects == 0),
            "messages_sent": run.sent - int(before.get("sent", 0)),
            "messages_failed": run.failed - int(before.get("failed", 0)),
        }
        counters.append(ctx.progress.counters_item(task.backfill_id, **deltas))
    ctx.ledger.finish(task.task_id, owner=run.owner, state=state, result=result, with_items=counters)


def _give_up(run: _Run, error: Exception, *, final_attempt: bool) -> None:
    """After a failed run: release the lease for the next delivery or, on the last one,
    finish the task as FAILED (counted, paged). Never masks the original error."""
    task, ctx = run.task, run.ctx
    try:
        if not final_attempt:
            ctx.ledger.release(task.task_id, owner=run.owner)
            return
        _finish(run, state="FAILED", error=str(error)[:1000])
        if ctx.progress is not None:
            ctx.progress.page_task_failure(
                backfill_id=task.backfill_id, task_id=task.task_id, error=str(error), pagerduty=task.pagerduty
            )
            ctx.progress.maybe_finalize(task.backfill_id, pagerduty=task.pagerduty)
    except Exception:
        logger.exception("replay task %s: could not record the failure", task.task_id)


def run_task(
    task: ReplayTask,
    ctx: ReplayContext,
    *,
    remaining: Callable[[], float] = lambda: DEFAULT_REMAINING_SECONDS,
    final_attempt: bool = False,
    owner: str | None = None,
) -> TaskResult:
    """Replay one task. Raises InvalidReplayTaskError (unknown target), TaskBusyError
    (another run holds it), ReplayTaskFailedError / TargetQueueError / ArchiveReadError
    (this run failed; checkpoint saved). With `final_attempt`, a failure also finishes the
    task as FAILED (counted, paged) before it is raised."""
    queue_url = resolve_target(task, ctx.targets)
    owner = owner or uuid.uuid4().hex
    try:
        state = ctx.ledger.acquire(
            task.task_id,
            backfill_id=task.backfill_id,
            owner=owner,
            lease_seconds=remaining() + LEASE_MARGIN_SECONDS,
        )
    except TaskAlreadyDoneError as done:
        return _already_done(task, ctx, done.state)
    if ctx.progress is not None:
        record = ctx.progress.record(task.backfill_id)
        if record is not None:
            ctx.progress.mark_running(record)
    run = _Run(task, ctx, state, owner, queue_url)
    if _cancelled(task, ctx):  # the backfill was cancelled: what was not sent is skipped
        _finish(run, state="DONE")
        logger.info("replay task %s skipped: backfill %s was cancelled", task.task_id, task.backfill_id)
        return run.result("cancelled")
    try:
        finished = run.replay(remaining)
    except LeaseLostError:
        raise  # another run owns the task now: nothing of ours to save
    except Exception as error:
        _give_up(run, error, final_attempt=final_attempt)
        raise
    if not finished:
        ctx.ledger.release(task.task_id, owner=owner)
        logger.info("replay task %s: out of time after %d messages; continues", task.task_id, run.sent)
        return run.result("continued")
    _finish(run, state="DONE")
    if run.cancelled:
        logger.info("replay task %s stopped after %d messages: backfill cancelled", task.task_id, run.sent)
        return run.result("cancelled")
    if ctx.progress is not None:
        ctx.progress.maybe_finalize(task.backfill_id, pagerduty=task.pagerduty)
    return run.result("done")


def _cancelled(task: ReplayTask, ctx: ReplayContext) -> bool:
    if ctx.progress is None:
        return False
    record = ctx.progress.record(task.backfill_id)
    return record is not None and record.state is BackfillState.CANCELLED


__all__ = [
    "ReplayContext",
    "ReplayTaskFailedError",
    "TargetQueueError",
    "TaskResult",
    "resolve_target",
    "run_task",
]
