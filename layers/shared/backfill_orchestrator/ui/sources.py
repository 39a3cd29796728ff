"""Everything the page reads, bounded, in one place: status records through the table's
indexes (never a Scan), the plan, the backfill report, the Spark run reports, the result file,
control documents' outcomes, the live DAG run (through a `RunReader`) and the policy.

The list's paging cursor is opaque to the page and its users: a position in the listing that
`status.listing.list_backfills` returns, newest first."""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Protocol, TypeVar
from urllib.parse import urlsplit

from backfill_orchestrator import documents
from backfill_orchestrator._compat import UTC
from backfill_orchestrator.client.control_requests import CONTROL_PREFIX
from backfill_orchestrator.contracts import (
    BackfillReport,
    Contract,
    InvalidDocumentError,
    Plan,
    ResultFile,
    RunReport,
)
from backfill_orchestrator.documents import DocumentError, DocumentNotFoundError
from backfill_orchestrator.errors import UserError
from backfill_orchestrator.policy import Policy, PolicySource
from backfill_orchestrator.status import BackfillState, StatusRecord, StatusStore
from backfill_orchestrator.status.listing import ListFilter, list_backfills, list_month
from backfill_orchestrator.ui.progress import RunProgress
from backfill_orchestrator.ui.settings import PageSettings
from backfill_orchestrator.ui.states import ACTIONS

MAX_OFFSET = 5_000  # deeper pages: narrow the filters instead
MAX_RUN_REPORTS = 64  # rounds whose Spark run report the page reads
MAX_DOCUMENT_BYTES = (
    4 * 1024 * 1024
)  # a report or result file the page shows (the plan's own limit is larger)
PLAN_CACHE_SECONDS = 60.0
PLAN_CACHE_SIZE = 32
MONTH = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")
# The name of a control document a press wrote (client.control_requests.control_key).
CONTROL_NAME = re.compile(rf"^({'|'.join(ACTIONS)})-\d{{8}}T\d{{6}}\d{{0,6}}Z\.json$")
MAX_FILTER_TEXT = 200
C = TypeVar("C", bound=Contract)


class BadQueryError(UserError, ValueError):
    """A list filter or cursor the page cannot use; the message says which and why."""


class RunReader(Protocol):
    """The live DAG run of a backfill, as Airflow has it (None: Airflow has no such run)."""

    def progress(self, dag_id: str, run_id: str) -> RunProgress | None: ...


@dataclass(frozen=True)
class ListQuery:
    state: BackfillState | None = None
    month: str | None = None  # YYYY-MM: created in that month
    owner: str | None = None
    submitted_by: str | None = None
    offset: int = 0
    size: int = 50

    @classmethod
    def parse(
        cls,
        *,
        state: str | None,
        month: str | None,
        owner: str | None,
        submitted_by: str | None,
        cursor: str | None,
        size: int,
    ) -> ListQuery:
        """Checked filters (BadQueryError naming the field otherwise)."""
        problems: list[str] = []
        parsed_state: BackfillState | None = None
        if state:
            try:
                parsed_state = BackfillState(state.strip().upper())
            except ValueError:
                problems.append(f"state: unknown state {state[:40]!r}")
        if month and not MONTH.match(month.strip()):
            problems.append(f"month: expected YYYY-MM, got {month[:20]!r}")
        for name, value in (("owner", owner), ("submitted_by", submitted_by)):
            if value and len(value) > MAX_FILTER_TEXT:
                problems.append(f"{name}: at most {MAX_FILTER_TEXT} characters")
        offset = 0
        if cursor:
            try:
                offset = decode_cursor(cursor)
            except BadQueryError as error:
                problems.append(str(error))
        if problems:
            raise BadQueryError("; ".join(problems))
        return cls(
            state=parsed_state,
            month=month.strip() if month else None,
            owner=owner.strip() if owner and owner.strip() else None,
            submitted_by=submitted_by.strip() if submitted_by and submitted_by.strip() else None,
            offset=offset,
            size=size,
        )


@dataclass(frozen=True)
class ListPage:
    records: list[StatusRecord]
    next_cursor: str | None


def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"v": 1, "o": offset}).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor.strip() + "=" * (-len(cursor.strip()) % 4)))
        offset = data["o"] if data.get("v") == 1 else None
    except (ValueError, TypeError, AttributeError, KeyError):
        offset = None
    if not isinstance(offset, int) or isinstance(offset, bool) or not 0 <= offset <= MAX_OFFSET:
        raise BadQueryError("cursor: not a cursor this page gave out (or too deep: narrow the filters)")
    return offset


def _month_bounds(month: str) -> tuple[datetime, date]:
    year, number = int(month[:4]), int(month[5:7])
    first = datetime(year, number, 1, tzinfo=UTC)
    following = date(year + number // 12, number % 12 + 1, 1)
    return first, date.fromordinal(following.toordinal() - 1)


@dataclass(frozen=True)
class TimelineEntry:
    at: str
    state: str
    detail: str | None
    by: str | None


@dataclass
class _TtlCache:
    seconds: float
    size: int
    clock: Callable[[], float] = time.monotonic
    _items: dict[str, tuple[float, Any]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, key: str, load: Callable[[], Any]) -> Any:
        now = self.clock()
        with self._lock:
            hit = self._items.get(key)
            if hit is not None and now - hit[0] < self.seconds:
                return hit[1]
        value = load()
        with self._lock:
            if len(self._items) >= self.size:
                self._items.pop(next(iter(self._items)))
            self._items[key] = (now, value)
        return value


@dataclass
class Sources:
    settings: PageSettings
    dynamodb_client: Any
    s3_client: Any
    runs: RunReader
    ssm_client: Any = None
    _plans: _TtlCache = field(default_factory=lambda: _TtlCache(PLAN_CACHE_SECONDS, PLAN_CACHE_SIZE))
    _policy: PolicySource | None = field(default=None, init=False)

    # -- status records --------------------------------------------------------------------
    def list_page(self, query: ListQuery) -> ListPage:
        """One page, newest first, through the `by_month` / `by_state` indexes."""
        since, last_day = _month_bounds(query.month) if query.month else (None, None)
        where = ListFilter(
            state=query.state,
            owner=query.owner,
            submitted_by=query.submitted_by,
            since=since,
            limit=query.offset + query.size + 1,
        )
        table = self._table()
        records = list_backfills(
            dynamodb_client=self.dynamodb_client,
            table_name=table,
            where=where,
            today=last_day if query.state is None else None,
        )
        window = records[query.offset : query.offset + query.size + 1]
        shown = window[: query.size]
        if query.month and query.state is not None:  # by_state's range is updated_at: keep the month's
            shown = [record for record in shown if list_month(record.created_at) == query.month]
        more = len(window) > query.size and query.offset + query.size <= MAX_OFFSET
        return ListPage(shown, encode_cursor(query.offset + query.size) if more else None)

    def record(self, backfill_id: str) -> StatusRecord | None:
        return StatusStore(table_name=self._table(), dynamodb_client=self.dynamodb_client).get(backfill_id)

    def timeline(self, record: StatusRecord) -> list[TimelineEntry]:
        """What happened to the backfill, oldest first: the same history `backfill status` prints.
        The one place the page reads it."""
        return [
            TimelineEntry(
                at=str(entry.get("at", "")),
                state=str(entry.get("state", "")),
                detail=entry.get("detail") or None,
                by=entry.get("by") or None,
            )
            for entry in record.history
        ]

    def _table(self) -> str:
        if not self.settings.status_table:
            raise BadQueryError("the page is not configured: set [backfill] status_table")
        return self.settings.status_table

    # -- documents -------------------------------------------------------------------------
    def plan(self, record: StatusRecord) -> Plan | None:
        if not record.plan_uri:
            return None
        uri = record.plan_uri
        plan: Plan | None = self._plans.get(uri, lambda: self._read(Plan, uri, max_bytes=Plan.max_bytes))
        return plan if plan is not None and plan.backfill_id == record.backfill_id else None

    def report(self, record: StatusRecord) -> BackfillReport | None:
        if not record.plan_uri:
            return None
        report = self._read(BackfillReport, documents.sibling(record.plan_uri, "backfill_report.json"))
        # A report of an earlier attempt describes that attempt; the live run is read instead.
        if report is None or str(record.state) not in ("SUCCEEDED", "FAILED", "CANCELLED"):
            return None
        return report

    def run_reports(self, report: BackfillReport) -> list[RunReport]:
        found = (self._read(RunReport, uri) for uri in report.spark_reports[:MAX_RUN_REPORTS])
        return [run_report for run_report in found if run_report is not None]

    def result_file(self, record: StatusRecord) -> ResultFile | None:
        uri = self.result_uri(record)
        return self._read(ResultFile, uri) if uri else None

    def result_uri(self, record: StatusRecord) -> str | None:
        """Where the trigger and the DAG write the result file of the backfill's config."""
        source = (record.source_uri or "").split("?", 1)[0]
        if not source.startswith("s3://"):
            return None
        bucket, _, key = source[len("s3://") :].partition("/")
        relative = (
            key[len(self.settings.incoming_prefix) :]
            if key.startswith(self.settings.incoming_prefix)
            else key
        )
        return f"s3://{bucket}/{self.settings.results_prefix}{relative}.result.json"

    def control_outcome(self, backfill_id: str, name: str) -> ResultFile | None:
        """The trigger's answer to the control document `name` (None while it has not acted)."""
        if not CONTROL_NAME.match(name) or not self.settings.config_bucket:
            raise BadQueryError(f"not a control document of this page: {name[:80]!r}")
        key = f"{self.settings.results_prefix}{CONTROL_PREFIX}{backfill_id}/{name}.result.json"
        return self._read(ResultFile, f"s3://{self.settings.config_bucket}/{key}")

    def _read(self, model: type[C], uri: str, *, max_bytes: int = MAX_DOCUMENT_BYTES) -> C | None:
        """The document, or None when it is not there; an unreadable or invalid one raises a
        DocumentError / InvalidDocumentError that names it (the page shows the message)."""
        try:
            body = documents.read_text(uri, max_bytes=max_bytes, s3_client=self.s3_client)
        except DocumentNotFoundError:
            return None
        return model.from_json(body, source=uri)

    # -- Airflow and the policy -------------------------------------------------------------
    def run_progress(self, record: StatusRecord) -> RunProgress | None:
        if not record.dag_run_id:
            return None
        return self.runs.progress(record.dag_id or self.settings.dag_id, record.dag_run_id)

    def policy(self) -> Policy | None:
        if self._policy is None:
            self._policy = PolicySource(
                uri=self.settings.policy_uri,
                ttl_seconds=self.settings.policy_cache_seconds,
                s3_client=self.s3_client,
                ssm_client=self.ssm_client,
            )
        return self._policy.get()


def safe_link(url: str | None) -> str | None:
    """Only http(s) links reach the page (a record's text never becomes `javascript:`)."""
    if not url:
        return None
    return url if urlsplit(url).scheme in ("http", "https") else None


__all__ = [
    "BadQueryError",
    "DocumentError",
    "InvalidDocumentError",
    "ListPage",
    "ListQuery",
    "RunReader",
    "Sources",
    "TimelineEntry",
    "decode_cursor",
    "encode_cursor",
    "safe_link",
]
