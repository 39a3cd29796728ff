"""Replay Lambda: replay tasks from the replay-tasks queue (SQS event source with
ReportBatchItemFailures), or one task invoked directly (a replay DAG).

The logic lives in the shared layer (backfill_orchestrator.replay); this file only names the
entry point for the template's `Handler: app.handler`."""

from backfill_orchestrator.replay.handler import handler

__all__ = ["handler"]
