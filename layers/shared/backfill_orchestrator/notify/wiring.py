"""Slack and PagerDuty as a deployment configures them (secrets from Secrets Manager, endpoints
from the settings), built the same way for every Lambda component (the trigger, the replay
function), so all of them post to the same thread the same way."""

from __future__ import annotations

import logging

import requests

from backfill_orchestrator.notify.notifier import MetricsSink, Notifier
from backfill_orchestrator.notify.pagerduty import PagerDutyClient
from backfill_orchestrator.notify.slack import SlackClient, SlackWebApi, SlackWebhook
from backfill_orchestrator.secrets import SecretFormatError, SecretReader, SecretUnavailableError
from backfill_orchestrator.settings import DeploymentSettings
from backfill_orchestrator.status import StatusStore

log = logging.getLogger(__name__)


class NotifierWiring:
    def __init__(
        self,
        settings: DeploymentSettings,
        *,
        secrets: SecretReader,
        slack_session: requests.Session,
        pagerduty_session: requests.Session,
    ):
        self.settings = settings
        self._secrets = secrets
        self._slack_session = slack_session
        self._pagerduty_session = pagerduty_session

    def notifier(self, *, status: StatusStore, metrics: MetricsSink) -> Notifier:
        """Built per invocation, so rotated secrets apply once the secrets cache expires."""
        return Notifier(
            slack=self._slack(metrics),
            pagerduty=self._pagerduty(metrics),
            status_store=status,
            default_channel=self.settings.slack_channel,
            metrics=metrics,
        )

    def _slack(self, metrics: MetricsSink) -> SlackClient | None:
        secret_id = self.settings.slack_secret_id
        if not secret_id:
            return None
        try:
            credentials = self._secrets.slack(secret_id)
        except (SecretUnavailableError, SecretFormatError) as error:
            log.warning("Slack is off for this invocation: %s", error)
            metrics.add_metric(name="SlackFailures", unit="Count", value=1)
            return None
        if credentials.bot_token is not None:
            return SlackWebApi(token=credentials.bot_token, api_url=self.settings.slack_api_url, session=self._slack_session)
        assert credentials.webhook_url is not None
        return SlackWebhook(url=credentials.webhook_url, session=self._slack_session)

    def _pagerduty(self, metrics: MetricsSink) -> PagerDutyClient | None:
        secret_id = self.settings.pagerduty_secret_id
        if not secret_id:
            return None
        try:
            routing_key = self._secrets.pagerduty_routing_key(secret_id)
        except (SecretUnavailableError, SecretFormatError) as error:
            log.error("PagerDuty is off for this invocation: %s", error)
            metrics.add_metric(name="PagerDutyFailures", unit="Count", value=1)
            return None
        return PagerDutyClient(
            routing_key=routing_key, events_url=self.settings.pagerduty_events_url, session=self._pagerduty_session
        )
