"""Deployment settings: everything about a deployment that is not a secret, read from env vars.

Every component (trigger Lambda, replay Lambda, generic DAG, CLI) reads its endpoints from
here so that one set of variable names is documented once (docs/trigger.md) and each
endpoint can point at a local double. The AWS endpoint is boto3's own `AWS_ENDPOINT_URL`.

    settings = DeploymentSettings.from_env()   # raises SettingsError listing every problem
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlparse

from backfill_orchestrator.config import ConfigPolicy
from backfill_orchestrator.errors import ServiceError

AirflowApiVersion = Literal["v2", "v1"]

DEFAULT_SLACK_API_URL = "https://slack.com/api"
DEFAULT_PAGERDUTY_EVENTS_URL = "https://events.pagerduty.com/v2/enqueue"
DEFAULT_DAG_ID = "backfill"
# MWAA's Path is at most 64 characters: "/dags/" + dag_id + "/dagRuns/" + a 33-character
# backfill id leaves 16 characters for the DAG id.
MAX_DAG_ID_LENGTH = 16


class SettingsError(ServiceError, ValueError):
    """The environment does not describe a usable deployment; lists every problem by variable."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("invalid deployment settings:\n" + "\n".join(f"  {p}" for p in problems))


@dataclass(frozen=True, kw_only=True)
class DeploymentSettings:
    """Non-secret deployment config. Secrets are referenced by their Secrets Manager id only."""

    config_bucket: str
    status_table: str
    incoming_prefix: str = "incoming/"
    results_prefix: str = "results/"
    backfills_prefix: str = "backfills/"
    marquez_url: str
    marquez_web_url: str | None = None
    marquez_api_key_secret_id: str | None = None
    airflow_url: str | None = None
    airflow_ui_url: str | None = None
    mwaa_environment: str | None = None
    airflow_api_version: AirflowApiVersion = "v2"
    airflow_secret_id: str | None = None
    backfill_dag_id: str = DEFAULT_DAG_ID
    slack_api_url: str = DEFAULT_SLACK_API_URL
    slack_secret_id: str | None = None
    slack_channel: str | None = None
    pagerduty_events_url: str = DEFAULT_PAGERDUTY_EVENTS_URL
    pagerduty_secret_id: str | None = None
    job_catalog_uri: str | None = None
    allowed_namespaces: frozenset[str] | None = None
    replay_targets: Mapping[str, str] = field(default_factory=dict)
    replay_tasks_queue_url: str | None = None  # where the trigger queues replay tasks (docs/replay.md)
    secrets_max_age_seconds: int = 300

    # -- derived ---------------------------------------------------------------------
    @property
    def uses_mwaa(self) -> bool:
        return self.mwaa_environment is not None

    @property
    def lineage_web_url(self) -> str:
        """Where people look at lineage (Marquez web); defaults to the API's URL."""
        return self.marquez_web_url or self.marquez_url

    def config_policy(self) -> ConfigPolicy:
        return ConfigPolicy(
            allowed_namespaces=self.allowed_namespaces,
            replay_targets=frozenset(self.replay_targets) if self.replay_targets else None,
        )

    # -- loading ---------------------------------------------------------------------
    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> DeploymentSettings:
        """Read the settings; raises SettingsError naming every bad or missing variable.

        Required: CONFIG_BUCKET, STATUS_TABLE, MARQUEZ_URL and exactly one of AIRFLOW_URL /
        MWAA_ENVIRONMENT (AIRFLOW_SECRET_ID too for AIRFLOW_URL). Optional: INCOMING_PREFIX,
        RESULTS_PREFIX, BACKFILLS_PREFIX, MARQUEZ_WEB_URL, MARQUEZ_API_KEY_SECRET_ID,
        AIRFLOW_UI_URL, AIRFLOW_API_VERSION (v2|v1), BACKFILL_DAG_ID, SLACK_API_URL,
        SLACK_SECRET_ID, SLACK_CHANNEL, PAGERDUTY_EVENTS_URL, PAGERDUTY_SECRET_ID,
        JOB_CATALOG_URI, ALLOWED_NAMESPACES (comma-separated), REPLAY_TARGETS (JSON object
        name -> SQS queue URL), REPLAY_TASKS_QUEUE_URL, SECRETS_MAX_AGE_SECONDS. Empty values
        count as unset."""
        env = os.environ if environ is None else environ
        problems: list[str] = []

        def get(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        def required(name: str) -> str:
            value = get(name)
            if value is None:
                problems.append(f"{name}: required")
                return ""
            return value

        def url(name: str, default: str | None = None) -> str | None:
            value = get(name) or default
            if value is None:
                return None
            parsed = urlparse(value)
            if parsed.scheme not in ("http", "https") or not parsed.netloc:
                problems.append(f"{name}: expected an http(s) URL, got {value!r}")
            return value.rstrip("/")

        def prefix(name: str, default: str) -> str:
            value = get(name) or default
            if value.startswith("/"):
                problems.append(f"{name}: an S3 key prefix must not start with '/', got {value!r}")
            return value if value.endswith("/") else value + "/"

        config_bucket = required("CONFIG_BUCKET")
        status_table = required("STATUS_TABLE")
        marquez_url = url("MARQUEZ_URL")
        if marquez_url is None:
            problems.append("MARQUEZ_URL: required")
        airflow_url = url("AIRFLOW_URL")
        mwaa_environment = get("MWAA_ENVIRONMENT")
        if (airflow_url is None) == (mwaa_environment is None):
            problems.append("AIRFLOW_URL / MWAA_ENVIRONMENT: set exactly one (the Airflow REST API or an MWAA environment)")
        airflow_secret_id = get("AIRFLOW_SECRET_ID")
        if airflow_url is not None and airflow_secret_id is None:
            problems.append("AIRFLOW_SECRET_ID: required with AIRFLOW_URL (the API user's credentials)")
        api_version = get("AIRFLOW_API_VERSION") or "v2"
        if api_version not in ("v2", "v1"):
            problems.append(f"AIRFLOW_API_VERSION: expected v2 (Airflow 3) or v1 (Airflow 2), got {api_version!r}")
        dag_id = get("BACKFILL_DAG_ID") or DEFAULT_DAG_ID
        if len(dag_id) > MAX_DAG_ID_LENGTH:
            problems.append(
                f"BACKFILL_DAG_ID: at most {MAX_DAG_ID_LENGTH} characters so that "
                f"/dags/<dag_id>/dagRuns/<backfill id> fits MWAA's 64-character Path, got {dag_id!r}"
            )
        namespaces_text = get("ALLOWED_NAMESPACES")
        allowed = (
            frozenset(part.strip() for part in namespaces_text.split(",") if part.strip())
            if namespaces_text
            else None
        )
        replay_targets = _replay_targets(get("REPLAY_TARGETS"), problems)
        max_age_text = get("SECRETS_MAX_AGE_SECONDS") or "300"
        try:
            max_age = int(max_age_text)
            if max_age < 0:
                raise ValueError
        except ValueError:
            problems.append(f"SECRETS_MAX_AGE_SECONDS: expected a whole number of seconds, got {max_age_text!r}")
            max_age = 300

        settings = cls(
            config_bucket=config_bucket,
            status_table=status_table,
            incoming_prefix=prefix("INCOMING_PREFIX", "incoming/"),
            results_prefix=prefix("RESULTS_PREFIX", "results/"),
            backfills_prefix=prefix("BACKFILLS_PREFIX", "backfills/"),
            marquez_url=marquez_url or "",
            marquez_web_url=url("MARQUEZ_WEB_URL"),
            marquez_api_key_secret_id=get("MARQUEZ_API_KEY_SECRET_ID"),
            airflow_url=airflow_url,
            airflow_ui_url=url("AIRFLOW_UI_URL"),
            mwaa_environment=mwaa_environment,
            airflow_api_version=api_version,  # type: ignore[arg-type]
            airflow_secret_id=airflow_secret_id,
            backfill_dag_id=dag_id,
            slack_api_url=url("SLACK_API_URL", DEFAULT_SLACK_API_URL) or DEFAULT_SLACK_API_URL,
            slack_secret_id=get("SLACK_SECRET_ID"),
            slack_channel=get("SLACK_CHANNEL"),
            pagerduty_events_url=url("PAGERDUTY_EVENTS_URL", DEFAULT_PAGERDUTY_EVENTS_URL)
            or DEFAULT_PAGERDUTY_EVENTS_URL,
            pagerduty_secret_id=get("PAGERDUTY_SECRET_ID"),
            job_catalog_uri=get("JOB_CATALOG_URI"),
            allowed_namespaces=allowed,
            replay_targets=replay_targets,
            replay_tasks_queue_url=url("REPLAY_TASKS_QUEUE_URL"),
            secrets_max_age_seconds=max_age,
        )
        if len({settings.incoming_prefix, settings.results_prefix, settings.backfills_prefix}) < 3:
            problems.append("INCOMING_PREFIX / RESULTS_PREFIX / BACKFILLS_PREFIX: must be three different prefixes")
        elif settings.results_prefix.startswith(settings.incoming_prefix) or settings.backfills_prefix.startswith(
            settings.incoming_prefix
        ):
            # Results written under the incoming prefix would trigger the function again.
            problems.append("RESULTS_PREFIX / BACKFILLS_PREFIX: must not lie under INCOMING_PREFIX")
        if problems:
            raise SettingsError(problems)
        return settings


def _replay_targets(text: str | None, problems: list[str]) -> dict[str, str]:
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        problems.append(f"REPLAY_TARGETS: not JSON ({error.msg} at column {error.colno})")
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        problems.append("REPLAY_TARGETS: expected a JSON object of target name -> SQS queue URL")
        return {}
    return value
