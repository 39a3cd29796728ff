"""A replay backfill's progress on its status record: counters per finished task, the
RUNNING state when replay starts, and the final SUCCEEDED or FAILED (with the totals in the
Slack thread, and a page on failure) when the last task finishes.

The counters are added in the same DynamoDB transaction that finishes the task in the
ledger (`StatusStore.progress_item`), so a task is counted once however often it is
delivered. Finalising is a conditional transition: when two runs finish the last tasks at
the same time, exactly one of them moves the record and notifies."""

from __future__ import annotations

import logging
from typing import Any

from backfill_orchestrator.notify import Notifier, status_message
from backfill_orchestrator.status import (
    BackfillState,
    RecordNotFoundError,
    StatusRecord,
    StatusStore,
    TransitionRejectedError,
)

logger = logging.getLogger(__name__)


def progress_summary(record: StatusRecord) -> str:
    text = (
        f"{record.tasks_done + record.tasks_failed}/{record.tasks_total} replay tasks finished "
        f"({record.tasks_failed} failed); {record.messages_sent:,} messages sent, {record.messages_failed:,} failed"
    )
    if record.tasks_empty:
        text += f"; {record.tasks_empty} task(s) found nothing archived"
    return text


class ReplayProgress:
    def __init__(self, *, status_store: StatusStore, notifier: Notifier | None = None):
        self.store = status_store
        self._notifier = notifier

    def record(self, backfill_id: str) -> StatusRecord | None:
        return self.store.get(backfill_id)

    def mark_running(self, record: StatusRecord) -> None:
        """TRIGGERED (tasks queued) becomes RUNNING when the first task starts."""
        if record.state != BackfillState.TRIGGERED:
            return
        try:
            self.store.transition(
                record.backfill_id,
                BackfillState.RUNNING,
                detail="replay started",
                expected_version=record.version,
            )
        except (TransitionRejectedError, RecordNotFoundError):
            pass  # another task got there first

    def counters_item(self, backfill_id: str, **deltas: int) -> dict[str, Any]:
        return self.store.progress_item(backfill_id, **deltas)

    def maybe_finalize(self, backfill_id: str, *, pagerduty: bool) -> BackfillState | None:
        """Move the record to SUCCEEDED or FAILED once every task finished; returns the new
        state when this call moved it, None otherwise."""
        record = self.store.get(backfill_id)
        if record is None or record.tasks_total is None:
            return None
        if record.tasks_done + record.tasks_failed < record.tasks_total:
            return None
        failed = record.tasks_failed > 0 or record.messages_failed > 0
        target = BackfillState.FAILED if failed else BackfillState.SUCCEEDED
        if record.state == target:
            return None
        summary = progress_summary(record)
        try:
            self.store.transition(backfill_id, target, detail=summary, expected_version=record.version)
        except (TransitionRejectedError, RecordNotFoundError):
            return None
        if self._notifier is not None:
            self._notifier.slack(
                backfill_id, status_message(backfill_id=backfill_id, state=str(target), detail=summary)
            )
            if failed:
                self._page(
                    backfill_id,
                    f"Replay {backfill_id} FAILED: {summary}",
                    pagerduty=pagerduty,
                    details={"tasks_failed": record.tasks_failed, "messages_failed": record.messages_failed},
                )
            elif record.pagerduty_open:
                self._notifier.resolve(backfill_id, enabled=pagerduty)
        return target

    def page_task_failure(self, *, backfill_id: str, task_id: str, error: str, pagerduty: bool) -> None:
        """A task that failed for good (its last delivery; the message goes to the DLQ)."""
        self._page(
            backfill_id,
            f"Replay task {task_id} failed for good and went to the DLQ: {error}"[:1000],
            pagerduty=pagerduty,
            details={"task_id": task_id, "error": error[:2000]},
        )

    def _page(self, backfill_id: str, summary: str, *, pagerduty: bool, details: dict[str, Any]) -> None:
        """Open (or add to) the backfill's incident as the replay (no notifier: nothing to do)."""
        if self._notifier is not None:
            self._notifier.page(
                backfill_id, summary=summary, enabled=pagerduty, component="replay", details=details
            )
