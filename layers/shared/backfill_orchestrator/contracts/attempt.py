"""What earlier attempts of a backfill finished, for a retry of its failed work: the trigger
writes it from the last backfill report, the DAG's `start` reads it and runs only the rest
(failed steps, the steps they blocked, and DAG reruns of dates that did not succeed)."""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import Field

from backfill_orchestrator.contracts.base import Contract
from backfill_orchestrator.contracts.fields import BackfillId


class AttemptDone(
    Contract, document_name="attempt document", version_field="attempt_version", max_bytes=16 * 1024 * 1024
):
    attempt_version: Literal[1] = 1
    backfill_id: BackfillId
    attempt: int = Field(ge=2, description="The attempt this document prepares")
    steps_done: list[str] = Field(
        default_factory=list, description="Steps that succeeded in an earlier attempt"
    )
    dates_done: dict[str, list[date]] = Field(
        default_factory=dict,
        description="airflow_dag steps that did not succeed as a whole: the dates whose rerun did",
    )
