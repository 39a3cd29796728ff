"""Trigger Lambda: S3 config upload -> validated, planned, triggered backfill.

The logic lives in the shared layer (backfill_orchestrator.trigger); this file only names
the entry point for the template's `Handler: app.handler`."""

from backfill_orchestrator.trigger.handler import handler

__all__ = ["handler"]
