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
    # Safe publish (docs/lifecycle.md): a Spark step was staged and held by the publish policy;
    # live: its claims hold until a person publishes (then TRIGGERED) or discards it
    AWAITING_PUBLISH = "AWAITING_PUBLISH"
    DISCARDED = "DISCARDED"  # what was held is discarded, the warehouse unchanged by it; claims released
    UNDONE = "UNDONE"  # every partition the backfill published is back to what it was before
