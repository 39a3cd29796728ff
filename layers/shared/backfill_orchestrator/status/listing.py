"""List backfills newest first through the status table's indexes, never a full scan.

Two global secondary indexes (template.yaml, StatusTable):

- `by_month`: partition `list_month` (`YYYY-MM` of `created_at`), sort `created_at`: every
  backfill, one partition per month, so a listing reads the newest months first and stops
  as soon as it has enough;
- `by_state`: partition `state`, sort `updated_at`: the backfills in one state.

Owner, submitter and name filters are applied by DynamoDB (FilterExpression) on what the
index returns, so they cost read capacity but no client-side scan.

DynamoDB is asked for one page at a time (`Limit`), never for a month's whole partition: as
many items as the listing still lacks (at most PAGE_ITEMS), or PAGE_ITEMS with a filter (a
`Limit` counts the items read before the filter drops some); the next page only when the
listing still lacks some."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from backfill_orchestrator._compat import UTC
from backfill_orchestrator.status.model import BackfillState, StatusRecord
from backfill_orchestrator.status.store import StatusStoreError, record_from_item

BY_MONTH_INDEX = "by_month"
BY_STATE_INDEX = "by_state"
LIST_MONTH_ATTRIBUTE = "list_month"
OLDEST_MONTHS_BACK = 36  # without `since`, a listing looks back at most three years
PAGE_ITEMS = 100  # the most one Query asks for


def list_month(created_at: str | datetime) -> str:
    """The `list_month` attribute of a record created at `created_at`."""
    text = created_at.isoformat() if isinstance(created_at, datetime) else created_at
    return text[:7]


@dataclass(frozen=True, kw_only=True)
class ListFilter:
    state: BackfillState | None = None
    owner: str | None = None
    submitted_by: str | None = None
    name: str | None = None
    since: datetime | None = None  # created (or, with `state`, updated) at or after
    limit: int = 50


def list_backfills(
    *, dynamodb_client: Any, table_name: str, where: ListFilter, today: date | None = None
) -> list[StatusRecord]:
    """Newest first, at most `where.limit` records."""
    records: list[StatusRecord] = []

    def page_size() -> int:
        lacking = where.limit - len(records)
        return PAGE_ITEMS if filtered else max(1, min(lacking, PAGE_ITEMS))

    filtered = bool(where.owner or where.submitted_by or where.name)
    for item in _items(dynamodb_client, table_name, where, today or datetime.now(UTC).date(), page_size):
        records.append(record_from_item(item))
        if len(records) >= where.limit:
            break
    return records


def _items(
    client: Any, table: str, where: ListFilter, today: date, page_size: Callable[[], int]
) -> Iterator[dict[str, Any]]:
    filters, names, values = _filters(where)
    since = where.since.astimezone(UTC).isoformat() if where.since else None
    if where.state is not None:
        key = "#state = :state" + (" AND updated_at >= :since" if since else "")
        names["#state"] = "state"
        values[":state"] = {"S": str(where.state)}
        if since:
            values[":since"] = {"S": since}
        yield from _query(client, table, BY_STATE_INDEX, key, filters, names, values, page_size)
        return
    for month in _months_back(today, where.since):
        month_values = {**values, ":month": {"S": month}}
        key = f"{LIST_MONTH_ATTRIBUTE} = :month"
        if since:
            key += " AND created_at >= :since"
            month_values[":since"] = {"S": since}
        yield from _query(client, table, BY_MONTH_INDEX, key, filters, names, month_values, page_size)


def _filters(where: ListFilter) -> tuple[list[str], dict[str, str], dict[str, Any]]:
    filters: list[str] = []
    names: dict[str, str] = {}
    values: dict[str, Any] = {}
    for attribute, value in (
        ("owner", where.owner),
        ("submitted_by", where.submitted_by),
        ("name", where.name),
    ):
        if value:
            names[f"#{attribute}"] = attribute
            values[f":{attribute}"] = {"S": value}
            filters.append(f"#{attribute} = :{attribute}")
    return filters, names, values


def _months_back(today: date, since: datetime | None) -> Iterator[str]:
    year, month = today.year, today.month
    stop = (since.year, since.month) if since else None
    for _ in range(OLDEST_MONTHS_BACK if stop is None else 10_000):
        yield f"{year:04d}-{month:02d}"
        if stop is not None and (year, month) <= stop:
            return
        year, month = (year, month - 1) if month > 1 else (year - 1, 12)


def _query(
    client: Any,
    table: str,
    index: str,
    key: str,
    filters: list[str],
    names: dict[str, str],
    values: dict[str, Any],
    page_size: Callable[[], int],
) -> Iterator[dict[str, Any]]:
    """One page at a time; the next is asked for only when the listing wants more."""
    kwargs: dict[str, Any] = {
        "TableName": table,
        "IndexName": index,
        "KeyConditionExpression": key,
        "ExpressionAttributeValues": values,
        "ScanIndexForward": False,
    }
    if names:
        kwargs["ExpressionAttributeNames"] = names
    if filters:
        kwargs["FilterExpression"] = " AND ".join(filters)
    try:
        while True:
            page = client.query(**kwargs, Limit=page_size())
            yield from page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                return
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    except (ClientError, BotoCoreError) as error:
        raise StatusStoreError(f"listing backfills from {table} ({index}): {error}") from error
