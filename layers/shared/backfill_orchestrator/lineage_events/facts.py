"""What every component knows about a backfill attempt (plain data: importing it does not load
the openlineage client, which costs the trigger's cold start over a second)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from backfill_orchestrator.lineage_events.ids import backfill_run_id

DEFAULT_NAMESPACE = "backfill"
FinalState = Literal["COMPLETE", "FAIL", "ABORT"]


@dataclass(frozen=True, kw_only=True)
class BackfillFacts:
    backfill_id: str
    attempt: int = 1
    namespace: str = DEFAULT_NAMESPACE
    config_uri: str | None = None
    dates: Sequence[str] = ()
    hours: Sequence[int] | None = None
    feeds: Sequence[str] | None = None
    submitter: str | None = None
    trace_id: str | None = None

    @property
    def run_id(self) -> str:
        return backfill_run_id(backfill_id=self.backfill_id, attempt=self.attempt)


def rerun_parent_conf(facts: BackfillFacts) -> dict[str, str]:
    """The `openlineage` section of a rerun's conf: the Airflow OpenLineage provider (>= 2.8)
    reads it as the DAG run's parent, and never overwrites these keys when it injects its own."""
    return {
        "parentRunId": facts.run_id,
        "parentJobNamespace": facts.namespace,
        "parentJobName": facts.backfill_id,
        "rootParentRunId": facts.run_id,
        "rootParentJobNamespace": facts.namespace,
        "rootParentJobName": facts.backfill_id,
    }
