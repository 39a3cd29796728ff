"""Read status records: one backfill, a listing, or one followed to its end. The CLI's
`status`, `list`, `watch` and `submit --wait` call these too."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from backfill_orchestrator.client.aws import aws_client
from backfill_orchestrator.errors import UserError
from backfill_orchestrator.status.listing import ListFilter
from backfill_orchestrator.status.listing import list_backfills as _list
from backfill_orchestrator.status.model import BackfillState, StatusRecord
from backfill_orchestrator.status.store import StatusStore
from backfill_orchestrator.status.watch import follow, progress_line

TABLE_ENV = "STATUS_TABLE"


class NoStatusTableError(UserError, ValueError):
    """No status table was named (argument or $STATUS_TABLE)."""


class BackfillNotFoundError(UserError, LookupError):
    """The status table has no record for this id."""


def optional_table(table: str | None) -> str | None:
    """`table`, else $STATUS_TABLE, else None."""
    return table or os.environ.get(TABLE_ENV) or None


def status_table(table: str | None) -> str:
    found = optional_table(table)
    if not found:
        raise NoStatusTableError(f"no status table: pass table= (--table) or set {TABLE_ENV}")
    return found


def _store(table: str | None, session: Any, dynamodb_client: Any) -> StatusStore:
    client = aws_client("dynamodb", client=dynamodb_client, session=session)
    return StatusStore(table_name=status_table(table), dynamodb_client=client)


def backfill_status(
    backfill_id: str, *, table: str | None = None, session: Any = None, dynamodb_client: Any = None
) -> StatusRecord:
    """The backfill's status record with its whole history (the entries moved out of the record
    too: status/history.py); BackfillNotFoundError when there is none, StatusStoreError when the
    table cannot be read."""
    table = status_table(table)
    record = _store(table, session, dynamodb_client).get(backfill_id, full_history=True)
    if record is None:
        raise BackfillNotFoundError(f"no status record for {backfill_id!r} in {table}")
    return record


def list_backfills(
    *,
    table: str | None = None,
    state: BackfillState | str | None = None,
    owner: str | None = None,
    submitted_by: str | None = None,
    name: str | None = None,
    since: datetime | None = None,
    limit: int = 50,
    session: Any = None,
    dynamodb_client: Any = None,
) -> list[StatusRecord]:
    """Newest first, through the table's indexes (never a scan)."""
    if isinstance(state, str):
        try:
            state = BackfillState(state.upper())
        except ValueError:
            known = ", ".join(s.value for s in BackfillState)
            raise UserError(f"unknown state {state!r}; one of {known}") from None
    where = ListFilter(
        state=state, owner=owner, submitted_by=submitted_by, name=name, since=since, limit=limit
    )
    client = aws_client("dynamodb", client=dynamodb_client, session=session)
    return _list(dynamodb_client=client, table_name=status_table(table), where=where)


def print_progress(record: StatusRecord) -> None:
    print(progress_line(record), flush=True)


def watch_backfill(
    backfill_id: str,
    *,
    table: str | None = None,
    interval: float = 5.0,
    timeout: float | None = None,
    on_update: Callable[[StatusRecord], None] | None = None,
    on_wait: Callable[[float], None] | None = None,
    session: Any = None,
    dynamodb_client: Any = None,
    sleep: Callable[[float], None] | None = None,
) -> StatusRecord:
    """Follow the backfill until it ends (status/watch.py says when) and return its last
    record; `on_update` (default: print a progress line) sees every change, `on_wait` is
    called before each pause with the seconds waited so far. Raises WatchTimeoutError when
    `timeout` seconds pass first."""
    store = _store(table, session, dynamodb_client)
    report = on_update or print_progress
    pause = sleep or time.sleep
    began = time.monotonic()

    def wait(seconds: float) -> None:
        if on_wait is not None:
            on_wait(time.monotonic() - began)
        pause(seconds)

    last: StatusRecord | None = None
    changes = follow(lambda: store.get(backfill_id), interval=interval, timeout=timeout, sleep=wait)
    for record in changes:
        last = record
        report(record)
    assert last is not None  # follow yields at least the final record before returning
    return last
