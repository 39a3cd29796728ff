"""The states of a backfill, shared by the status record, the result file and notifications."""

from __future__ import annotations

from enum import StrEnum


class BackfillState(StrEnum):
    RECEIVED = "RECEIVED"
    REJECTED = "REJECTED"
    PLANNED = "PLANNED"
    QUEUED = "QUEUED"  # waiting for an overlapping backfill to end (claims)
    TRIGGERED = "TRIGGERED"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"  # stopped by a cancel control document
