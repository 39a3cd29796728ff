"""The mismatch report (`report_version: 1`, JSON): what one reconciliation run compared and
found, which mismatches are roots and which are explained by a root upstream or already
repaired by a backfill in flight, and the configs written. The configs link to it; the DAG
reads it to upload the configs and to summarise the run. Bounded: at most
MAX_LISTED_MISMATCHES mismatches are listed (the counts stay exact)."""

from __future__ import annotations

from datetime import date
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from backfill_orchestrator.reconciliation.findings import Mismatch

REPORT_VERSION: Final = 1
Role = Literal["root", "explained", "in_flight"]  # why a mismatch is listed
MAX_LISTED_MISMATCHES = 2000


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ReportedDiff(_Model):
    check: str
    expected: int | float
    actual: int | float


class ReportedMismatch(_Model):
    table: str
    job: str
    day: date
    hour: int | None
    feed: str | None
    diffs: list[ReportedDiff]
    role: Role
    explained_by: str | None = Field(default=None, description="explained: the root table upstream")
    in_flight: str | None = Field(default=None, description="in_flight: the backfill already repairing it")


class TableSummary(_Model):
    table: str
    job: str
    partitions_compared: int
    mismatches: int


class WrittenConfig(_Model):
    name: str
    uri: str
    jobs: list[str]
    days: int
    hours: list[int] | None
    feeds: list[str] | None
    mismatches: int


class ReconciliationReport(_Model):
    report_version: Literal[1] = REPORT_VERSION
    checked_at: str
    warehouse: str
    days: list[date]
    tables: list[TableSummary]
    mismatches_found: int
    mismatches_in_flight: int
    mismatches_listed: list[ReportedMismatch]
    mismatches_not_listed: int = 0
    configs: list[WrittenConfig]

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)

    @classmethod
    def from_json(cls, text: str | bytes) -> ReconciliationReport:
        return cls.model_validate_json(text)


def reported(
    mismatch: Mismatch, *, job: str, explained_by: str | None, in_flight: str | None
) -> ReportedMismatch:
    role: Role = "in_flight" if in_flight else "explained" if explained_by else "root"
    return ReportedMismatch(
        table=mismatch.table,
        job=job,
        day=mismatch.day,
        hour=mismatch.hour,
        feed=mismatch.feed,
        diffs=[ReportedDiff(check=d.check, expected=d.expected, actual=d.actual) for d in mismatch.diffs],
        role=role,
        explained_by=explained_by,
        in_flight=in_flight,
    )
