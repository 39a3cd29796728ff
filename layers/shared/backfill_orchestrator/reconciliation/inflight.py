"""The plans of the backfills in flight (received, planned, triggered or running), read from where the
trigger stored them (`<backfills prefix>/<backfill id>/plan.json` in the config bucket), so
that reconciliation does not submit again what one of them already repairs."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from backfill_orchestrator import documents
from backfill_orchestrator.contracts import InvalidDocumentError
from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.errors import ServiceError
from backfill_orchestrator.status import BackfillState
from backfill_orchestrator.status.listing import ListFilter, list_backfills

# RECEIVED too: the trigger records TRIGGERED after the DAG run exists, so an attempt that died
# in between leaves a run going under a RECEIVED record (its plan.json is there; none: skipped).
IN_FLIGHT_STATES = (
    BackfillState.RECEIVED,
    BackfillState.PLANNED,
    BackfillState.TRIGGERED,
    BackfillState.RUNNING,
)
MAX_IN_FLIGHT = 200  # per state; more than this in flight is an incident of its own
MAX_PLAN_BYTES = 16 * 1024 * 1024


class InFlightPlansError(ServiceError, RuntimeError):
    """The backfills in flight or their plans could not be read: submitting blind could
    duplicate work, so reconciliation stops instead."""


def plan_uri(*, bucket: str, backfills_prefix: str, backfill_id: str) -> str:
    prefix = backfills_prefix.strip("/")
    return f"s3://{bucket}/{prefix + '/' if prefix else ''}{backfill_id}/plan.json"


def in_flight_ids(*, dynamodb_client: Any, table_name: str) -> list[str]:
    """Ids of the backfills received, planned, triggered or running, through the status table's state index."""
    ids: list[str] = []
    try:
        for state in IN_FLIGHT_STATES:
            where = ListFilter(state=state, limit=MAX_IN_FLIGHT)
            ids += [
                record.backfill_id
                for record in list_backfills(
                    dynamodb_client=dynamodb_client, table_name=table_name, where=where
                )
            ]
    except ServiceError as error:
        raise InFlightPlansError(f"cannot list the backfills in flight: {error}") from None
    return sorted(set(ids))


def in_flight_plans(uris: Iterable[str], *, s3_client: Any = None) -> list[Plan]:
    """The plans at `uris`; a plan that is gone (its backfill was cleaned up) is skipped."""
    plans = []
    for uri in uris:
        try:
            body = documents.read_bytes(uri, max_bytes=MAX_PLAN_BYTES, s3_client=s3_client)
        except documents.DocumentNotFoundError:
            continue
        except documents.DocumentError as error:
            raise InFlightPlansError(f"cannot read a plan in flight: {error}") from None
        try:
            plans.append(Plan.from_json(body))
        except InvalidDocumentError as error:
            raise InFlightPlansError(f"{uri}: not a plan document ({len(error.issues)} problems)") from None
    return plans
