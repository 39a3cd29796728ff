"""Slack interactivity Lambda: signed button presses (Approve, Reject, Cancel, Retry failed)
-> control documents for the trigger.

The logic lives in the shared layer (backfill_orchestrator.interactivity); this file only
names the entry point for the template's `Handler: app.handler`."""

from backfill_orchestrator.interactivity.handler import handler

__all__ = ["handler"]
