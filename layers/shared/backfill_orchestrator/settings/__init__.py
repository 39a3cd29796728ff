"""Deployment settings, by component, read from environment variables (secrets by their
Secrets Manager id only). Every endpoint can point at a local double; the AWS endpoint is
boto3's own `AWS_ENDPOINT_URL`.

- `common`: what every component needs (status table, Slack, PagerDuty, replay allowlist)
- `trigger`: the trigger function's `DeploymentSettings` (common + bucket, Marquez, Airflow)
- `interactivity`: the Slack interactivity function's `InteractivitySettings`
- `preflight`: the deployment's side of preflight (`PreflightLimits`, part of the trigger's)
- the replay function's `ReplaySettings` (common + its own) live with it, in `replay/settings.py`,
  because they parse its archive layout (settings import no component)
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
from backfill_orchestrator.settings.interactivity import InteractivitySettings
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
    "InteractivitySettings",
    "NotifySettings",
    "SettingsError",
]
