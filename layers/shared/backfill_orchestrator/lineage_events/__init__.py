"""OpenLineage events for backfills (issue 17): one backfill attempt is one run of the job
`<backfill id>` in a configurable namespace; each Spark step is a child run (ParentRunFacet ->
the backfill run) and each DAG rerun carries the backfill run as its parent in its conf.

Run ids are UUID v5 of the backfill id and attempt (and step), so the trigger, the DAG and a
canceller compute the same ids without passing state. Emission never raises: a lineage
backend that is down is logged and counted (`LineageEventsFailed`), never fails a backfill."""

from backfill_orchestrator.lineage_events.emitter import (
    LineageEmitter,
    LineageSettings,
    backfill_aborted,
    backfill_finished,
    backfill_started,
    backfill_undone,
    dag_reruns,
    spark_steps,
)
from backfill_orchestrator.lineage_events.facts import BackfillFacts, rerun_parent_conf
from backfill_orchestrator.lineage_events.ids import backfill_run_id, step_run_id, undo_run_id

__all__ = [
    "BackfillFacts",
    "LineageEmitter",
    "LineageSettings",
    "backfill_aborted",
    "backfill_finished",
    "backfill_run_id",
    "backfill_started",
    "backfill_undone",
    "dag_reruns",
    "rerun_parent_conf",
    "spark_steps",
    "step_run_id",
    "undo_run_id",
]
