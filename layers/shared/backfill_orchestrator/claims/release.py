"""When a backfill ends: drop its claims and start what waited for it.

A queued backfill is started by a `start` control document dropped into the config bucket
(`control/<id>/start-<timestamp>.json`): the trigger function picks it up like any upload, so
the start is recorded, retried by the platform if it fails, and auditable in S3. Used by the
trigger (cancel, rejection) and by the DAG (success, failure)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from backfill_orchestrator import documents
from backfill_orchestrator.claims.registry import ClaimRegistry
from backfill_orchestrator.contracts import ControlRequest

SYSTEM = "system:backfill-orchestrator"


def start_document_uri(control_uri: str, backfill_id: str, now: datetime) -> str:
    return f"{control_uri.rstrip('/')}/{backfill_id}/start-{now.strftime('%Y%m%dT%H%M%S%fZ')}.json"


def release_and_start_queued(
    registry: ClaimRegistry, backfill_id: str, *, control_uri: str, now: datetime, s3_client: Any = None
) -> list[str]:
    """Release `backfill_id`'s claims; write a `start` document for every queued backfill that
    can run now (submission order). `control_uri` is `s3://<config bucket>/<control prefix>`."""
    ready = registry.release(backfill_id)
    _start(ready, reason=f"{backfill_id} ended", control_uri=control_uri, now=now, s3_client=s3_client)
    return ready


def sweep_queued(
    registry: ClaimRegistry, *, control_uri: str, now: datetime, s3_client: Any = None
) -> list[str]:
    """The periodic sweep (a schedule invokes the trigger with `{"source": "backfill.sweep"}`):
    a backfill that ended without releasing its claims (its DAG or the trigger crashed) blocks
    the queued ones behind it until the next admission or release; the sweep drops such claims
    and writes a `start` document for every queued backfill that can run now. A start that
    races with a release's is refused by the trigger as "nothing to start": harmless."""
    ready = registry.startable()
    _start(
        ready,
        reason="the backfills it waited for have ended (periodic sweep)",
        control_uri=control_uri,
        now=now,
        s3_client=s3_client,
    )
    return ready


def _start(backfill_ids: list[str], *, reason: str, control_uri: str, now: datetime, s3_client: Any) -> None:
    for waiting in backfill_ids:
        request = ControlRequest(
            action="start", backfill_id=waiting, reason=reason, requested_by=SYSTEM, requested_at=now
        )
        documents.write_bytes(
            start_document_uri(control_uri, waiting, now),
            request.model_dump_json(indent=2).encode(),
            s3_client=s3_client,
        )
