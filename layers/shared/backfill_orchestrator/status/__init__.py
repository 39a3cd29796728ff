"""Backfill status records in DynamoDB (see `model.py` for the states, `store.py` for writes)."""

from backfill_orchestrator.status.model import (
    ALLOWED_FROM,
    LIVE_STATES,
    TERMINAL_STATES,
    TRIGGER_FROM,
    BackfillState,
    StatusRecord,
)
from backfill_orchestrator.status.store import (
    RecordExistsError,
    RecordNotFoundError,
    StatusItemTooLargeError,
    StatusStore,
    StatusStoreError,
    TransitionRejectedError,
)

__all__ = [
    "ALLOWED_FROM",
    "LIVE_STATES",
    "TERMINAL_STATES",
    "TRIGGER_FROM",
    "BackfillState",
    "RecordExistsError",
    "RecordNotFoundError",
    "StatusItemTooLargeError",
    "StatusRecord",
    "StatusStore",
    "StatusStoreError",
    "TransitionRejectedError",
]
