"""Notifications shared by every component: Slack (Block Kit, one thread per backfill) and
PagerDuty Events v2 (dedup_key = backfill id). Build with `build_notifier`; see
`notifier.Notifier` for the rules."""

from backfill_orchestrator.notify.factory import build_notifier
from backfill_orchestrator.notify.messages import (
    already_known_message,
    backfill_message,
    rejection_message,
    status_message,
)
from backfill_orchestrator.notify.notifier import MetricsSink, Notifier
from backfill_orchestrator.notify.pagerduty import PagerDutyClient, PagerDutyError
from backfill_orchestrator.notify.slack import (
    PostedMessage,
    SlackClient,
    SlackError,
    SlackMessage,
    SlackWebApi,
    SlackWebhook,
)

__all__ = [
    "MetricsSink",
    "Notifier",
    "PagerDutyClient",
    "PagerDutyError",
    "PostedMessage",
    "SlackClient",
    "SlackError",
    "SlackMessage",
    "SlackWebApi",
    "SlackWebhook",
    "already_known_message",
    "backfill_message",
    "build_notifier",
    "rejection_message",
    "status_message",
]
