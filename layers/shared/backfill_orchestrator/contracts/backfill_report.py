"""The backfill report: what the DAG's `finish` writes next to the plan
(`backfill_report.json`) once every round has run, and what the result file, the status
record and the notifications take their figures from."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime
from typing import Literal

from pydantic import Field, model_validator

from backfill_orchestrator.contracts.base import Contract
from backfill_orchestrator.contracts.fields import BackfillId
from backfill_orchestrator.contracts.plan import StepKind
from backfill_orchestrator.contracts.steps import StepFigures, StepProblem, StepStatus

DAG_RUN_SUCCESS = "success"  # Airflow's task state for a rerun that succeeded


class StepOutcome(Contract):
    """One plan step as the DAG tracked it, round to round."""

    status: StepStatus
    kind: StepKind
    round: int = Field(ge=0)
    dag_id: str
    detail: str | None = None
    dates: dict[date, str] | None = Field(
        default=None, description="airflow_dag: each date's rerun task state"
    )
    figures: StepFigures | None = Field(default=None, description="spark: from the Spark run report")


class BackfillFigures(Contract):
    steps_succeeded: int = Field(default=0, ge=0)
    steps_failed: int = Field(default=0, ge=0)
    steps_not_run: int = Field(default=0, ge=0)
    rows_written: int = Field(default=0, ge=0)
    partitions_written: int = Field(default=0, ge=0)
    dag_runs_succeeded: int = Field(default=0, ge=0)

    @classmethod
    def of(cls, steps: Mapping[str, StepOutcome]) -> BackfillFigures:
        outcomes = list(steps.values())
        return cls(
            steps_succeeded=sum(o.status is StepStatus.SUCCEEDED for o in outcomes),
            steps_failed=sum(o.status is StepStatus.FAILED for o in outcomes),
            steps_not_run=sum(o.status is StepStatus.BLOCKED for o in outcomes),
            rows_written=sum(o.figures.rows_out for o in outcomes if o.figures),
            partitions_written=sum(o.figures.partitions_written_count for o in outcomes if o.figures),
            dag_runs_succeeded=sum(
                state == DAG_RUN_SUCCESS for o in outcomes for state in (o.dates or {}).values()
            ),
        )

    def text(self, *, total_steps: int) -> str:
        return (
            f"{self.steps_succeeded}/{total_steps} steps succeeded, {self.rows_written} rows in "
            f"{self.partitions_written} partitions written, {self.dag_runs_succeeded} DAG runs"
        )


ReportStatus = Literal["succeeded", "failed", "awaiting_publish"]


def report_status(steps: Mapping[str, StepOutcome]) -> ReportStatus:
    """succeeded: every step did; awaiting_publish: none failed and some step is held for
    publish (the blocked ones wait for it: the DAG blocks only what a held or failed step
    feeds, so with no failure every block is a wait); else failed."""
    statuses = [o.status for o in steps.values()]
    if all(status is StepStatus.SUCCEEDED for status in statuses):
        return "succeeded"
    if StepStatus.AWAITING_PUBLISH in statuses and StepStatus.FAILED not in statuses:
        return "awaiting_publish"
    return "failed"


def step_problems(steps: Mapping[str, StepOutcome]) -> list[StepProblem]:
    """Failed steps, then held and blocked ones, each with what happened."""
    order = (StepStatus.FAILED, StepStatus.AWAITING_PUBLISH, StepStatus.BLOCKED)
    return [
        StepProblem(step=step_id, status=outcome.status, message=outcome.detail or "")
        for status in order
        for step_id, outcome in steps.items()
        if outcome.status is status
    ]


class BackfillReport(Contract, document_name="backfill report", version_field="report_version"):
    report_version: Literal[1] = 1
    backfill_id: BackfillId
    dag_run_id: str
    status: Literal["succeeded", "failed", "awaiting_publish"] = Field(
        description="awaiting_publish: no step failed, and a staged step waits for a person's publish "
        "(the steps that did not run wait for it)"
    )
    counts: dict[StepStatus, int]
    figures: BackfillFigures
    steps: dict[str, StepOutcome]
    spark_reports: list[str] = Field(default_factory=list, description="The rounds' Spark run reports")
    written_at: datetime

    @model_validator(mode="after")
    def _consistent(self) -> BackfillReport:
        pending = [step_id for step_id, o in self.steps.items() if o.status is StepStatus.PENDING]
        if pending:
            raise ValueError(f"steps {', '.join(pending)} are still pending in a final report")
        expected = report_status(self.steps)
        if self.status != expected:
            raise ValueError(f"status is {self.status} but the steps say {expected}")
        return self

    @property
    def succeeded(self) -> bool:
        return self.status == "succeeded"

    @property
    def awaiting_publish(self) -> bool:
        return self.status == "awaiting_publish"

    @property
    def problems(self) -> list[StepProblem]:
        return step_problems(self.steps)

    @classmethod
    def build(
        cls,
        *,
        backfill_id: str,
        dag_run_id: str,
        steps: Mapping[str, StepOutcome],
        spark_reports: list[str],
        written_at: datetime,
    ) -> BackfillReport:
        """The report of finished steps: counts, figures and status follow from them."""
        counts = dict.fromkeys(StepStatus, 0)
        for outcome in steps.values():
            counts[outcome.status] += 1
        return cls(
            backfill_id=backfill_id,
            dag_run_id=dag_run_id,
            status=report_status(steps),
            counts=counts,
            figures=BackfillFigures.of(steps),
            steps=dict(steps),
            spark_reports=spark_reports,
            written_at=written_at,
        )
