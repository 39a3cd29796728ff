"""The result file beside a dropped config (`results/<path>.result.json`): what became of the
upload. The trigger writes it (accepted, dry run, rejected, already known, failed) and, for a
triggered batch backfill, the DAG rewrites it as the backfill runs (RUNNING, then SUCCEEDED or
FAILED with the report's figures), so someone with only S3 access sees the outcome."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from backfill_orchestrator._compat import StrEnum
from backfill_orchestrator.contracts.backfill_report import BackfillFigures
from backfill_orchestrator.contracts.base import Contract
from backfill_orchestrator.contracts.publish import MAX_HELD_STEPS, HeldStep
from backfill_orchestrator.contracts.states import BackfillState
from backfill_orchestrator.contracts.steps import StepProblem


# queued: waiting for an overlapping backfill; awaiting_approval: for a second person (policy);
# awaiting_publish: it ran, and a staged step waits for a person's publish or discard;
# done/refused: what became of a control document
class ResultOutcome(StrEnum):
    """What became of the upload: the trigger's `Disposition`s that write a result file, and
    the `ControlResult`s of a control document."""

    ACCEPTED = "accepted"
    DRY_RUN = "dry_run"
    REJECTED = "rejected"
    ALREADY_KNOWN = "already_known"
    FAILED = "failed"
    QUEUED = "queued"
    AWAITING_APPROVAL = "awaiting_approval"
    AWAITING_PUBLISH = "awaiting_publish"
    DONE = "done"
    REFUSED = "refused"


# Shown even when empty: a reader tells "no backfill id" (an invalid config) from a missing key.
_ALWAYS = frozenset({"source", "outcome", "backfill_id", "state", "status_id"})


class LocatedError(Contract):
    location: str
    message: str


class PlanSummary(Contract):
    waves: list[list[str]]
    steps: int = Field(ge=0)
    warnings: list[str] = Field(default_factory=list)
    estimate: dict[str, Any] | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="The preflight's estimate, without its per-step figures",
    )


class ResultFile(
    Contract, document_name="result file", version_field="result_version", max_bytes=4 * 1024 * 1024
):
    result_version: Literal[1] = 1
    source: str = Field(description="The uploaded config, s3://bucket/incoming/...")
    outcome: ResultOutcome = Field(description="What became of the upload")
    backfill_id: str | None = Field(description="None for an invalid config (it has no identity)")
    state: BackfillState | None = Field(
        description="The backfill's state when this file was written; None if the upload failed before it was recorded"
    )
    status_id: str | None = Field(description="The status record's key; None when there is no record")
    errors: list[LocatedError] | None = Field(default=None, description="rejected: every located error")
    reason: str | None = None
    action: str | None = Field(default=None, description="control documents: the action asked for")
    retrying: str | None = Field(default=None, description="failed: set when the trigger retries by itself")
    config_uri: str | None = None
    plan_uri: str | None = None
    plan: PlanSummary | None = None
    dag_id: str | None = None
    dag_run_id: str | None = None
    dag_run_url: str | None = None
    report_uri: str | None = Field(default=None, description="SUCCEEDED/FAILED: the backfill report")
    figures: BackfillFigures | None = Field(
        default=None, description="SUCCEEDED/FAILED: the backfill's figures"
    )
    failed_steps: list[StepProblem] | None = Field(
        default=None, description="FAILED: steps that failed or did not run"
    )
    held_steps: list[HeldStep] | None = Field(
        default=None,
        max_length=MAX_HELD_STEPS,
        description="AWAITING_PUBLISH: the steps held for publish, why, and the top of each diff",
    )
    status_command: str | None = Field(default=None, description="How to follow it from a terminal")
    written_at: datetime

    def to_json(self) -> str:
        import json

        document: dict[str, Any] = {
            key: value
            for key, value in self.model_dump(mode="json").items()
            if value is not None or key in _ALWAYS
        }
        return json.dumps(document, indent=2) + "\n"
