"""The one way to build a Notifier (Slack thread + PagerDuty) from a deployment's settings
and secrets: the trigger Lambda, the replay Lambda and the Airflow DAG all call
`build_notifier`, so every component posts to the same thread the same way.

A secret that cannot be read turns that channel off for this build (logged without the
secret, counted as `SlackFailures` / `PagerDutyFailures`): notifications never fail a
backfill, not even while they are being set up."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from slack_sdk.http_retry import RetryHandler

from backfill_orchestrator.errors import BackfillError
from backfill_orchestrator.http import HttpSession
from backfill_orchestrator.notify.notifier import Deferred, MetricsSink, Notifier
from backfill_orchestrator.notify.pagerduty import PagerDutyClient
from backfill_orchestrator.notify.slack import SlackClient, SlackWebApi, SlackWebhook
from backfill_orchestrator.secrets import SecretReader
from backfill_orchestrator.settings.common import NotifySettings
from backfill_orchestrator.status import StatusStore

log = logging.getLogger(__name__)
Client = TypeVar("Client")


def build_notifier(
    *,
    settings: NotifySettings,
    secrets: SecretReader,
    metrics: MetricsSink | None,
    status_store: StatusStore | None = None,
    source: str = "backfill-orchestrator",
    pagerduty_session: HttpSession | None = None,
    slack_retry_handlers: list[RetryHandler] | None = None,
) -> Notifier:
    """`status_store` remembers each backfill's thread (without it every message is
    top-level); `source` is PagerDuty's payload.source (which component paged)."""
    return Notifier(
        slack=_slack(settings, secrets, metrics, slack_retry_handlers),
        pagerduty=_pagerduty(settings, secrets, metrics, source, pagerduty_session),
        status_store=status_store,
        default_channel=settings.slack_channel,
        metrics=metrics,
    )


def _slack(
    settings: NotifySettings,
    secrets: SecretReader,
    metrics: MetricsSink | None,
    handlers: list[RetryHandler] | None,
) -> Deferred[SlackClient] | None:
    secret_id = settings.slack_secret_id
    if not secret_id:
        log.info("no Slack secret is configured: no Slack messages")
        return None

    def build() -> SlackClient:
        credentials = secrets.slack(secret_id)
        if credentials.bot_token is not None:
            return SlackWebApi(token=credentials.bot_token, api_url=settings.slack_api_url, handlers=handlers)
        assert credentials.webhook_url is not None  # SecretReader.slack returns one of the two
        return SlackWebhook(url=credentials.webhook_url, handlers=handlers)

    return _or_off("Slack", build, metrics=metrics, metric="SlackFailures")


def _pagerduty(
    settings: NotifySettings,
    secrets: SecretReader,
    metrics: MetricsSink | None,
    source: str,
    session: HttpSession | None,
) -> Deferred[PagerDutyClient] | None:
    secret_id = settings.pagerduty_secret_id
    if not secret_id:
        log.info("no PagerDuty secret is configured: no PagerDuty events")
        return None
    return _or_off(
        "PagerDuty",
        lambda: PagerDutyClient(
            routing_key=secrets.pagerduty_routing_key(secret_id),
            events_url=settings.pagerduty_events_url,
            source=source,
            session=session,
        ),
        metrics=metrics,
        metric="PagerDutyFailures",
    )


def _or_off(
    name: str, build: Callable[[], Client], *, metrics: MetricsSink | None, metric: str
) -> Deferred[Client]:
    """The client, made on first use (its secret read then), or None (that channel off) when
    its secret cannot be read."""

    def made() -> Client | None:
        try:
            return build()
        except Exception as error:  # noqa: BLE001 - setting up notifications must not fail a backfill
            log.error("%s is off for now: %s", name, _safe(error))
            _count(metrics, metric)
            return None

    return Deferred(made)


def _safe(error: Exception) -> str:
    """Our own errors say what is wrong without secrets; anything else only by its type."""
    return str(error) if isinstance(error, BackfillError) else type(error).__name__


def _count(metrics: MetricsSink | None, name: str) -> None:
    if metrics is not None:
        metrics.add_metric(name=name, unit="Count", value=1)
