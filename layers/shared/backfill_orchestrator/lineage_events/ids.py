"""Deterministic run ids: the same backfill attempt (and step) gives the same UUID anywhere."""

from __future__ import annotations

import uuid

# Fixed once: changing it would orphan the runs already in Marquez.
RUN_ID_NAMESPACE = uuid.UUID("6f1b3a52-4c1e-5d0a-9a57-0b5f6c3e2d17")


def backfill_run_id(*, backfill_id: str, attempt: int) -> str:
    return str(uuid.uuid5(RUN_ID_NAMESPACE, f"backfill/{backfill_id}/{attempt}"))


def step_run_id(*, backfill_id: str, attempt: int, step_id: str) -> str:
    return str(uuid.uuid5(RUN_ID_NAMESPACE, f"backfill/{backfill_id}/{attempt}/step/{step_id}"))


def undo_run_id(*, backfill_id: str, attempt: int) -> str:
    """The run of an undo of what the backfill's attempts published."""
    return str(uuid.uuid5(RUN_ID_NAMESPACE, f"backfill/{backfill_id}/{attempt}/undo"))
