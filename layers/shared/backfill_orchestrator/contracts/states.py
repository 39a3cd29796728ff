"""The states of a backfill, shared by the status record, the result file and notifications."""

from __future__ import annotations

from backfill_orchestrator._compat import StrEnum


class BackfillState(StrEnum):
    RECEIVED = "RECEIVED"
    REJECTED = "REJECTED"
    PLANNED = "PLANNED"
    AWAITING_APPROVAL = "AWAITING_APPROVAL"  # planned; a second person must approve it (policy)
    QUEUED = "QUEUED"  # waiting for an overlapping backfill to end (claims)
    TRIGGERED = "TRIGGERED"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"  # stopped by a cancel control document
