"""What every component needs: the status table, where Slack and PagerDuty are (and the ids
of their secrets), the replay allowlist and tasks queue, and how long secrets are cached.
The trigger's `DeploymentSettings` extends this; the replay function reads only this (plus
`ReplaySettings`); the DAG builds `NotifySettings` from its `[backfill]` options."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from backfill_orchestrator.settings.environment import EnvironmentReader

DEFAULT_SLACK_API_URL = "https://slack.com/api"
DEFAULT_PAGERDUTY_EVENTS_URL = "https://events.pagerduty.com/v2/enqueue"
DEFAULT_SECRETS_MAX_AGE_SECONDS = 300


@dataclass(frozen=True, kw_only=True)
class NotifySettings:
    """Where notifications go; secrets by their Secrets Manager id only."""

    slack_channel: str | None = None
    slack_secret_id: str | None = None
    slack_api_url: str = DEFAULT_SLACK_API_URL
    pagerduty_secret_id: str | None = None
    pagerduty_events_url: str = DEFAULT_PAGERDUTY_EVENTS_URL


@dataclass(frozen=True, kw_only=True)
class CommonSettings:
    status_table: str
    slack_api_url: str = DEFAULT_SLACK_API_URL
    slack_secret_id: str | None = None
    slack_channel: str | None = None
    pagerduty_events_url: str = DEFAULT_PAGERDUTY_EVENTS_URL
    pagerduty_secret_id: str | None = None
    replay_targets: Mapping[str, str] = field(default_factory=dict)
    replay_tasks_queue_url: str | None = None  # where the trigger queues replay tasks (docs/replay.md)
    secrets_max_age_seconds: int = DEFAULT_SECRETS_MAX_AGE_SECONDS

    @property
    def notify(self) -> NotifySettings:
        return NotifySettings(
            slack_channel=self.slack_channel,
            slack_secret_id=self.slack_secret_id,
            slack_api_url=self.slack_api_url,
            pagerduty_secret_id=self.pagerduty_secret_id,
            pagerduty_events_url=self.pagerduty_events_url,
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> CommonSettings:
        """Required: STATUS_TABLE. Optional: SLACK_API_URL, SLACK_SECRET_ID, SLACK_CHANNEL,
        PAGERDUTY_EVENTS_URL, PAGERDUTY_SECRET_ID, REPLAY_TARGETS (JSON object name -> SQS
        queue URL), REPLAY_TASKS_QUEUE_URL, SECRETS_MAX_AGE_SECONDS. Raises SettingsError
        naming every bad or missing variable."""
        reader = EnvironmentReader(environ)
        settings = cls(**cls.read_fields(reader))
        reader.check()
        return settings

    @staticmethod
    def read_fields(reader: EnvironmentReader) -> dict[str, Any]:
        """This class's fields from the environment (problems noted on `reader`)."""
        return {
            "status_table": reader.required("STATUS_TABLE"),
            "slack_api_url": reader.url("SLACK_API_URL", DEFAULT_SLACK_API_URL) or DEFAULT_SLACK_API_URL,
            "slack_secret_id": reader.get("SLACK_SECRET_ID"),
            "slack_channel": reader.get("SLACK_CHANNEL"),
            "pagerduty_events_url": reader.url("PAGERDUTY_EVENTS_URL", DEFAULT_PAGERDUTY_EVENTS_URL)
            or DEFAULT_PAGERDUTY_EVENTS_URL,
            "pagerduty_secret_id": reader.get("PAGERDUTY_SECRET_ID"),
            "replay_targets": reader.string_map("REPLAY_TARGETS", meaning="target name -> SQS queue URL"),
            "replay_tasks_queue_url": reader.url("REPLAY_TASKS_QUEUE_URL"),
            "secrets_max_age_seconds": reader.whole(
                "SECRETS_MAX_AGE_SECONDS",
                DEFAULT_SECRETS_MAX_AGE_SECONDS,
                low=0,
                high=86400,
                unit=" of seconds",
            ),
        }
