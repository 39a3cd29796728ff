"""Live records that have not changed for a while, oldest first: what the sweep checks against
Airflow (trigger/reconcile.py). Read through the `by_state` index (partition `state`, sort
`updated_at`), never a scan, a bounded number at a time."""

from __future__ import annotations

import heapq
from collections.abc import Collection, Iterator
from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from backfill_orchestrator._compat import UTC
from backfill_orchestrator.status.listing import BY_STATE_INDEX
from backfill_orchestrator.status.model import BackfillState, StatusRecord
from backfill_orchestrator.status.store import StatusStoreError, is_record, record_from_item

PAGE = 100


def stale_records(
    *,
    dynamodb_client: Any,
    table_name: str,
    states: Collection[BackfillState],
    updated_before: datetime,
    limit: int,
) -> list[StatusRecord]:
    """At most `limit` records in one of `states` last updated before `updated_before`, the
    least recently updated first (at most `limit` read per state)."""
    before = updated_before.astimezone(UTC).isoformat()
    streams = [_oldest(dynamodb_client, table_name, state, before, limit) for state in sorted(states)]
    merged = heapq.merge(*streams, key=lambda record: record.updated_at)
    return [record for _, record in zip(range(limit), merged, strict=False)]


def _oldest(client: Any, table: str, state: BackfillState, before: str, limit: int) -> Iterator[StatusRecord]:
    kwargs: dict[str, Any] = {
        "TableName": table,
        "IndexName": BY_STATE_INDEX,
        "KeyConditionExpression": "#state = :state AND updated_at < :before",
        "ExpressionAttributeNames": {"#state": "state"},
        "ExpressionAttributeValues": {":state": {"S": str(state)}, ":before": {"S": before}},
        "ScanIndexForward": True,
        "Limit": min(limit, PAGE),
    }
    read = 0
    try:
        while read < limit:
            page = client.query(**kwargs)
            for item in page.get("Items", []):
                if is_record(item):
                    read += 1
                    yield record_from_item(item)
            if "LastEvaluatedKey" not in page:
                return
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    except (ClientError, BotoCoreError) as error:
        raise StatusStoreError(
            f"reading {state} backfills from {table} ({BY_STATE_INDEX}): {error}"
        ) from error
