"""Deployment settings, by component, read from environment variables (secrets by their
Secrets Manager id only). Every endpoint can point at a local double; the AWS endpoint is
boto3's own `AWS_ENDPOINT_URL`.

- `common`: what every component needs (status table, Slack, PagerDuty, replay allowlist)
- `trigger`: the trigger function's `DeploymentSettings` (common + bucket, Marquez, Airflow)
- the replay function's own `ReplaySettings` live with it, in `replay/settings.py` (settings import no component)
- `environment`: reading variables and `SettingsError`, which names every problem at once

    settings = DeploymentSettings.from_env()   # raises SettingsError listing every problem
"""

from backfill_orchestrator.settings.common import (
    DEFAULT_PAGERDUTY_EVENTS_URL,
    DEFAULT_SLACK_API_URL,
    CommonSettings,
    NotifySettings,
)
from backfill_orchestrator.settings.environment import EnvironmentReader, SettingsError
from backfill_orchestrator.settings.trigger import (
    DEFAULT_DAG_ID,
    MAX_DAG_ID_LENGTH,
    AirflowApiVersion,
    DeploymentSettings,
)

__all__ = [
    "DEFAULT_DAG_ID",
    "DEFAULT_PAGERDUTY_EVENTS_URL",
    "DEFAULT_SLACK_API_URL",
    "MAX_DAG_ID_LENGTH",
    "AirflowApiVersion",
    "CommonSettings",
    "DeploymentSettings",
    "EnvironmentReader",
    "NotifySettings",
    "SettingsError",
]
