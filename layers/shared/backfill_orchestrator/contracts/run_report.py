"""The Spark job's run report: what it did, per spark step. The job writes it (next to the plan
by default); the DAG reads it to record each step's outcome.

Version 2 uses the one step vocabulary (`blocked`, not version 1's `skipped`); a version 1
report is refused as another format."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Final, Literal

from pydantic import Field, model_validator

from backfill_orchestrator.contracts.base import Contract
from backfill_orchestrator.contracts.fields import BackfillId
from backfill_orchestrator.contracts.steps import StepFigures, StepStatus

RUN_REPORT_VERSION: Final = 2
RunStatus = Literal["succeeded", "failed", "awaiting_publish"]


def _with_derived(data: Any, key: str, derive: Callable[[dict[str, Any]], Any]) -> Any:
    """A document's `key`, when it leaves it out, derived from the rest (before validation)."""
    if isinstance(data, dict) and key not in data:
        return {**data, key: derive(data)}
    return data


class StepResult(Contract):
    id: str
    transform: str
    wave: int = Field(ge=0)
    status: StepStatus = Field(
        description="succeeded (published), failed, blocked or awaiting_publish (a run report has no pending step)"
    )
    seconds: float = Field(ge=0)
    phase_seconds: dict[str, float] = Field(
        default_factory=dict,
        description="Where `seconds` went: read, transform, write, check, commit (spark_jobs.engine.phases)",
    )
    rows_in: int = Field(default=0, ge=0)
    rows_in_by_input: dict[str, int] = Field(default_factory=dict)
    rows_out: int = Field(default=0, ge=0)
    partitions_written: list[str] = Field(default_factory=list, description="`day=.../hour=.../feed=...`")
    partitions_written_count: int = Field(default=0, ge=0, description="len(partitions_written)")
    partitions_deleted: list[str] = Field(default_factory=list, description="In scope, no rows any more")
    bytes_written: int | None = Field(
        default=None, ge=0, description="Size of the written partitions; None: not measured"
    )
    output_table: str | None = Field(
        default=None, description="The table the step rewrote (for lineage events)"
    )
    input_tables: dict[str, str] = Field(default_factory=dict, description="Input name -> the table it reads")
    checks_uri: str | None = Field(
        default=None, description="The step's checks document (StepChecks): schema, rules, data diff"
    )
    manifest_uri: str | None = Field(
        default=None,
        description="The step's publish manifest (PublishManifest): what publish, discard, undo use",
    )
    hold_reasons: list[str] = Field(
        default_factory=list, max_length=20, description="awaiting_publish: why the policy held it"
    )
    error: str | None = Field(default=None, description="failed: what went wrong")
    blocked_by: list[str] = Field(
        default_factory=list, description="blocked: the upstream steps that did not succeed"
    )

    @model_validator(mode="before")
    @classmethod
    def _count_partitions(cls, data: Any) -> Any:
        return _with_derived(
            data, "partitions_written_count", lambda known: len(known.get("partitions_written") or [])
        )

    @model_validator(mode="after")
    def _consistent(self) -> StepResult:
        if self.partitions_written_count != len(self.partitions_written):
            raise ValueError(
                f"step {self.id}: partitions_written_count is {self.partitions_written_count} "
                f"but {len(self.partitions_written)} partitions are listed"
            )
        if self.status is StepStatus.PENDING:
            raise ValueError(
                f"step {self.id}: a run report step is succeeded, failed or blocked, not pending"
            )
        if self.status is StepStatus.BLOCKED and not self.blocked_by:
            raise ValueError(f"step {self.id}: a blocked step names the steps that blocked it (blocked_by)")
        return self

    @property
    def succeeded(self) -> bool:
        return self.status is StepStatus.SUCCEEDED

    @property
    def detail(self) -> str | None:
        """One line for people: the error, or what blocked the step."""
        if self.status is StepStatus.BLOCKED:
            return f"not run: upstream {', '.join(self.blocked_by)} did not succeed"
        if self.status is StepStatus.AWAITING_PUBLISH:
            return "staged, awaiting publish: " + "; ".join(self.hold_reasons[:3])
        return self.error

    @property
    def figures(self) -> StepFigures:
        return StepFigures.taken_from(self)


def run_status(steps: list[Any]) -> RunStatus:
    """succeeded: every step did; awaiting_publish: every step that did not succeed is held for
    publish, or blocked only by held steps (transitively); else failed. `steps`: StepResults
    or their dicts, in plan order."""
    rows = [
        (s.id, str(s.status), s.blocked_by)
        if isinstance(s, StepResult)
        else ((s or {}).get("id"), str((s or {}).get("status")), (s or {}).get("blocked_by") or [])
        for s in steps
    ]
    if all(status == StepStatus.SUCCEEDED for _, status, _ in rows):
        return "succeeded"
    waiting = {step_id for step_id, status, _ in rows if status == StepStatus.AWAITING_PUBLISH}
    if not waiting:
        return "failed"
    for step_id, status, blocked_by in rows:  # plan order: a step's parents come before it
        if status in (StepStatus.SUCCEEDED, StepStatus.AWAITING_PUBLISH):
            continue
        if status != StepStatus.BLOCKED or not blocked_by or not set(blocked_by) <= waiting:
            return "failed"
        waiting.add(step_id)
    return "awaiting_publish"


class RunReport(
    Contract, document_name="Spark run report", version_field="report_version", version=RUN_REPORT_VERSION
):
    report_version: Literal[2] = RUN_REPORT_VERSION
    backfill_id: BackfillId
    plan: str = Field(description="The plan document the job ran")
    warehouse: str
    application_id: str
    started_at: datetime
    finished_at: datetime
    seconds: float = Field(ge=0)
    status: RunStatus = Field(
        description="succeeded when every step succeeded; awaiting_publish when the rest is held "
        "for publish or blocked by a held step; else failed"
    )
    steps: list[StepResult] = Field(description="One per spark step, in plan order")
    external_steps: list[str] = Field(
        default_factory=list, description="The plan's non-spark steps, taken as done (the DAG orders kinds)"
    )

    @model_validator(mode="before")
    @classmethod
    def _derive_status(cls, data: Any) -> Any:
        return _with_derived(data, "status", lambda known: run_status(list(known.get("steps") or [])))

    @model_validator(mode="after")
    def _status_matches_steps(self) -> RunReport:
        seen: set[str] = set()
        for step in self.steps:
            if step.id in seen:
                raise ValueError(f"step {step.id} is reported twice")
            seen.add(step.id)
        expected = run_status(list(self.steps))
        not_ok = [step.id for step in self.steps if not step.succeeded]
        if self.status == "succeeded" and not_ok:
            raise ValueError(f"status is succeeded but steps {', '.join(not_ok)} did not succeed")
        if self.status != expected:
            raise ValueError(
                "status is failed but every step succeeded"
                if expected == "succeeded"
                else f"status is {self.status} but the steps say {expected}"
            )
        return self

    @property
    def succeeded(self) -> bool:
        return self.status == "succeeded"

    def step(self, step_id: str) -> StepResult:
        for step in self.steps:
            if step.id == step_id:
                return step
        raise KeyError(step_id)
