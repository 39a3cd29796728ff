"""What a control action is checked against, read from the backfill's status record.

Attributes read (the trigger writes them; absent ones are simply unknown): `state`,
`submitted_by` (Principal.display of the uploader), `approval_requested_at` (ISO 8601, when
the backfill entered AWAITING_APPROVAL), `approvers` (grants named as the owners who must
approve) and `root_jobs` (namespace/name of the config's jobs)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from backfill_orchestrator.dynamo import plain_from_item
from backfill_orchestrator.errors import ServiceError
from backfill_orchestrator.identity import principal_from_display
from backfill_orchestrator.policy import BackfillFacts


class StatusReadError(ServiceError):
    """The status table could not be read."""


def _instant(value: Any, backfill_id: str) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        instant = datetime.fromisoformat(value)
    except ValueError:
        raise StatusReadError(
            f"status of {backfill_id}: approval_requested_at is not ISO 8601: {value[:40]!r}"
        ) from None
    return instant if instant.tzinfo is not None else instant.replace(tzinfo=UTC)


def facts_from_item(item: dict[str, Any]) -> BackfillFacts:
    return facts_from_plain(plain_from_item(item))


def facts_from_plain(data: Mapping[str, Any]) -> BackfillFacts:
    """From a record as plain values (a DynamoDB item decoded, or `StatusRecord.as_dict()`)."""
    submitted_by = data.get("submitted_by")
    return BackfillFacts(
        backfill_id=str(data["backfill_id"]),
        state=str(data.get("state", "")),
        submitter=principal_from_display(submitted_by)
        if isinstance(submitted_by, str) and submitted_by
        else None,
        jobs=tuple(str(job) for job in data.get("root_jobs") or ()),
        approval_requested_at=_instant(data.get("approval_requested_at"), str(data["backfill_id"])),
        approvers=tuple(str(name) for name in data.get("approvers") or ()),
    )


def read_backfill_facts(*, dynamodb_client: Any, table_name: str, backfill_id: str) -> BackfillFacts | None:
    """The facts of one backfill (strongly consistent read), or None when there is no record."""
    try:
        response = dynamodb_client.get_item(
            TableName=table_name, Key={"backfill_id": {"S": backfill_id}}, ConsistentRead=True
        )
    except (ClientError, BotoCoreError) as error:
        raise StatusReadError(f"reading status of {backfill_id} from {table_name}: {error}") from error
    item = response.get("Item")
    return facts_from_item(item) if item else None
