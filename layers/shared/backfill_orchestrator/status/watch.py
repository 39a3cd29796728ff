"""Follow one backfill to its end: the polling loop and the one-line progress view shared by
`backfill watch`, `backfill submit --wait` and the Python client's `watch()`.

A backfill has ended when its record is SUCCEEDED, REJECTED, CANCELLED, a FAILED that no
retry will pick up (`retryable` false), or PLANNED for a dry run. A FAILED that is
`retryable` is the trigger waiting for Lambda's next attempt: it is followed on."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import datetime
from typing import Any

from backfill_orchestrator._compat import UTC
from backfill_orchestrator.errors import ServiceError
from backfill_orchestrator.status.model import StatusRecord

SUCCESS_STATES = frozenset({"SUCCEEDED"})
FAILURE_STATES = frozenset({"FAILED", "REJECTED", "CANCELLED"})


class WatchTimeoutError(ServiceError, TimeoutError):
    """The backfill had not ended when the watch's time ran out."""


def has_ended(record: StatusRecord) -> bool:
    state = str(record.state)
    if state == "FAILED":
        return not record.retryable
    if state == "PLANNED":
        return record.dry_run
    return state in SUCCESS_STATES | FAILURE_STATES


def succeeded(record: StatusRecord) -> bool:
    return str(record.state) in SUCCESS_STATES or (str(record.state) == "PLANNED" and record.dry_run)


def follow(
    read: Callable[[], StatusRecord | None],
    *,
    interval: float = 5.0,
    timeout: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[StatusRecord]:
    """Yield the record each time it changes (any attribute but where its history is kept:
    progress is annotated without a new version), ending with the final one.
    `read` returns None while the record does not exist yet (an upload not yet picked up)."""
    deadline = None if timeout is None else clock() + timeout
    last: StatusRecord | None = None
    while True:
        record = read()
        if record is not None and (last is None or _seen_as(record) != _seen_as(last)):
            last = record
            yield record
            if has_ended(record):
                return
        if deadline is not None and clock() >= deadline:
            raise WatchTimeoutError(f"not ended after {timeout:.0f} s")
        sleep(interval)


def _seen_as(record: StatusRecord) -> StatusRecord:
    """The record but for where its history is kept: moving older entries out of it
    (status/history.py) is no change to report."""
    return replace(record, history=record.history[-1:], history_archived=0)


def progress_line(record: StatusRecord, *, now: datetime | None = None) -> str:
    """`<id> RUNNING  steps 2/6  dates 15/30  wave 2/4  1m23s` (what is known so far)."""
    parts = [f"{record.backfill_id} {record.state}"]
    progress: dict[str, Any] = getattr(record, "progress", None) or {}
    for label, done, total in (
        ("steps", "steps_done", "steps_total"),
        ("dates", "dates_done", "dates_total"),
        ("wave", "wave", "waves"),
    ):
        if progress.get(total):
            parts.append(f"{label} {progress.get(done, 0)}/{progress[total]}")
    if progress.get("steps_failed"):
        parts.append(f"{progress['steps_failed']} failed")
    if record.tasks_total:
        parts.append(f"tasks {record.tasks_done}/{record.tasks_total}, {record.messages_sent} messages")
    parts.append(_elapsed(record.created_at, now or datetime.now(UTC)))
    if record.reason and str(record.state) in FAILURE_STATES | {"QUEUED", "AWAITING_APPROVAL"}:
        parts.append(f"- {record.reason}")
    return "  ".join(parts)


def _elapsed(created_at: str, now: datetime) -> str:
    try:
        seconds = int((now - datetime.fromisoformat(created_at)).total_seconds())
    except ValueError:
        return ""
    hours, rest = divmod(max(seconds, 0), 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m{seconds:02d}s" if hours else f"{minutes}m{seconds:02d}s"
