"""The one vocabulary for a plan step's outcome, used by the Spark job's run report, the DAG's
ledger and backfill report, the status record's errors, the result file and notifications."""

from __future__ import annotations

from pydantic import Field

from backfill_orchestrator._compat import StrEnum
from backfill_orchestrator.contracts.base import Contract


class StepStatus(StrEnum):
    PENDING = "pending"  # not run yet
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # ran and failed (after its retries)
    BLOCKED = "blocked"  # not run: a step it depends on did not succeed
    # Spark only: staged and checked, held by the publish policy; live untouched, dependants
    # not run until it is published (docs/spark.md, "Safe publish")
    AWAITING_PUBLISH = "awaiting_publish"

    @property
    def done(self) -> bool:
        return self is not StepStatus.PENDING


class StepFigures(Contract):
    """What a Spark step did, as the run report counts it (zeros for DAG steps)."""

    seconds: float = Field(default=0.0, ge=0)
    rows_in: int = Field(default=0, ge=0)
    rows_out: int = Field(default=0, ge=0)
    partitions_written_count: int = Field(default=0, ge=0)


class StepProblem(Contract):
    """A step that did not succeed, as the status record, the result file and messages list it."""

    step: str
    status: StepStatus
    message: str = ""
