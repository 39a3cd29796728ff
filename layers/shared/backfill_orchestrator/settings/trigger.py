"""The trigger function's deployment settings: the common ones (status table, Slack,
PagerDuty, replay) plus the config bucket and its prefixes, Marquez, Airflow/MWAA, the job
catalog and the namespace allowlist. One set of variable names is documented once
(docs/trigger.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from backfill_orchestrator.config import ConfigPolicy
from backfill_orchestrator.config.model import DEFAULT_SPARK_PROFILES
from backfill_orchestrator.lineage_events.emitter import (
    NAMESPACE_VARIABLE,
    TRANSPORT_VARIABLE,
    LineageSettings,
)
from backfill_orchestrator.settings.common import CommonSettings
from backfill_orchestrator.settings.environment import EnvironmentReader
from backfill_orchestrator.settings.preflight import PreflightLimits
from backfill_orchestrator.spark_profiles import profile_names as spark_profile_names

AirflowApiVersion = Literal["v2", "v1"]

DEFAULT_DAG_ID = "backfill"
# MWAA's Path is at most 64 characters: "/dags/" + dag_id + "/dagRuns/" + a 33-character
# backfill id leaves 16 characters for the DAG id.
MAX_DAG_ID_LENGTH = 16


def comma_set(text: str | None) -> frozenset[str] | None:
    return frozenset(part.strip() for part in text.split(",") if part.strip()) if text else None


@dataclass(frozen=True, kw_only=True)
class DeploymentSettings(CommonSettings):
    """Non-secret deployment config. Secrets are referenced by their Secrets Manager id only."""

    config_bucket: str
    incoming_prefix: str = "incoming/"
    results_prefix: str = "results/"
    backfills_prefix: str = "backfills/"
    control_prefix: str = "control/"
    claims_table: str | None = (
        None  # overlap protection (claims/); None: overlapping backfills are not held back
    )
    on_overlap: Literal["wait", "refuse"] = "wait"  # what a backfill overlapping an active one does
    marquez_url: str
    marquez_web_url: str | None = None
    marquez_api_key_secret_id: str | None = None
    airflow_url: str | None = None
    airflow_ui_url: str | None = None
    mwaa_environment: str | None = None
    airflow_api_version: AirflowApiVersion = "v2"
    airflow_secret_id: str | None = None
    backfill_dag_id: str = DEFAULT_DAG_ID
    job_catalog_uri: str | None = None
    allowed_namespaces: frozenset[str] | None = None
    spark_profiles: frozenset[str] = DEFAULT_SPARK_PROFILES
    spark_profiles_uri: str | None = (
        None  # the DAG's profiles file; when set, its names replace spark_profiles
    )
    preflight: PreflightLimits = field(default_factory=PreflightLimits)
    # The approval gate (docs/policy.md): the policy document (None: no policy, today's
    # behaviour), how long it is cached, and the principals whose control documents act for
    # their `requested_by` (the Slack interactivity function's role: globs over principal names).
    policy_uri: str | None = None
    policy_cache_seconds: int = 60
    # After failing a cancelled backfill's DAG run, how long to watch that it stays failed: a
    # scheduler that had loaded the run before the PATCH may still mark it successful.
    cancel_confirm_seconds: int = 3
    control_delegates: frozenset[str] = frozenset()
    # The sweep (trigger/reconcile.py): a live record whose DAG run ended in Airflow this long
    # ago without its `finish` recording it is finished from the run; at most this many live
    # records are checked per sweep (the least recently updated first).
    sweep_grace_seconds: int = 900
    sweep_max_records: int = 200
    # The backfills' OpenLineage events (OPENLINEAGE_TRANSPORT, OPENLINEAGE_NAMESPACE; no transport: off).
    lineage_events: LineageSettings = field(default_factory=LineageSettings)
    # Safe publish's controls (trigger/publish_actions.py): the publish root when a record does
    # not name its own (the DAG records it), and the catalog tables are swapped in (none: every
    # table by path; glue: the Glue API). None: publish, discard and undo are refused.
    publish_root: str | None = None
    publish_catalog: Literal["none", "glue"] = "none"

    # -- derived ---------------------------------------------------------------------
    @property
    def uses_mwaa(self) -> bool:
        return self.mwaa_environment is not None

    @property
    def lineage_web_url(self) -> str:
        """Where people look at lineage (Marquez web); defaults to the API's URL."""
        return self.marquez_web_url or self.marquez_url

    def config_policy(self) -> ConfigPolicy:
        """The allowlists a config is checked against. With SPARK_PROFILES_URI the profile names
        come from the same file the DAG resolves them in (read through a short cache)."""
        return ConfigPolicy(
            allowed_namespaces=self.allowed_namespaces,
            replay_targets=frozenset(self.replay_targets) if self.replay_targets else None,
            spark_profiles=spark_profile_names(self.spark_profiles_uri)
            if self.spark_profiles_uri
            else self.spark_profiles,
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
        CONTROL_PREFIX (control documents, default control/), CLAIMS_TABLE (overlap
        protection), ON_OVERLAP (wait|refuse, default wait), SWEEP_GRACE_SECONDS (900),
        SWEEP_MAX_RECORDS (200), PUBLISH_ROOT, PUBLISH_CATALOG (none|glue, default none),
        JOB_CATALOG_URI, ALLOWED_NAMESPACES (comma-separated), SPARK_PROFILES (comma-separated),
        SPARK_PROFILES_URI (the DAG's profiles file: its names replace SPARK_PROFILES),
        the preflight's (PreflightLimits.read), OPENLINEAGE_TRANSPORT and OPENLINEAGE_NAMESPACE
        (an unusable transport turns the events off and is logged, never refused), REPLAY_TARGETS (JSON object
        name -> SQS queue URL), REPLAY_TASKS_QUEUE_URL, SECRETS_MAX_AGE_SECONDS. Empty values
        count as unset."""
        env = EnvironmentReader(environ)
        problems = env.problems
        common = CommonSettings.read_fields(env)
        config_bucket = env.required("CONFIG_BUCKET")
        marquez_url = env.url("MARQUEZ_URL")
        if marquez_url is None:
            problems.append("MARQUEZ_URL: required")
        airflow_url = env.url("AIRFLOW_URL")
        mwaa_environment = env.get("MWAA_ENVIRONMENT")
        if (airflow_url is None) == (mwaa_environment is None):
            problems.append(
                "AIRFLOW_URL / MWAA_ENVIRONMENT: set exactly one (the Airflow REST API or an MWAA environment)"
            )
        airflow_secret_id = env.get("AIRFLOW_SECRET_ID")
        if airflow_url is not None and airflow_secret_id is None:
            problems.append("AIRFLOW_SECRET_ID: required with AIRFLOW_URL (the API user's credentials)")
        api_version = env.get("AIRFLOW_API_VERSION") or "v2"
        if api_version not in ("v2", "v1"):
            problems.append(
                f"AIRFLOW_API_VERSION: expected v2 (Airflow 3) or v1 (Airflow 2), got {api_version!r}"
            )
        dag_id = env.get("BACKFILL_DAG_ID") or DEFAULT_DAG_ID
        if len(dag_id) > MAX_DAG_ID_LENGTH:
            problems.append(
                f"BACKFILL_DAG_ID: at most {MAX_DAG_ID_LENGTH} characters so that "
                f"/dags/<dag_id>/dagRuns/<backfill id> fits MWAA's 64-character Path, got {dag_id!r}"
            )
        on_overlap = env.get("ON_OVERLAP") or "wait"
        if on_overlap not in ("wait", "refuse"):
            problems.append(f"ON_OVERLAP: expected wait or refuse, got {on_overlap!r}")
        publish_catalog = env.get("PUBLISH_CATALOG") or "none"
        if publish_catalog not in ("none", "glue"):
            problems.append(f"PUBLISH_CATALOG: expected none or glue, got {publish_catalog!r}")
        allowed = comma_set(env.get("ALLOWED_NAMESPACES"))
        policy_uri = env.get("POLICY_URI")
        if policy_uri and not policy_uri.startswith(("s3://", "ssm:")):
            problems.append(
                f"POLICY_URI: expected s3://bucket/key or ssm:/parameter/name, got {policy_uri!r}"
            )

        settings = cls(
            **common,
            config_bucket=config_bucket,
            incoming_prefix=env.prefix("INCOMING_PREFIX", "incoming/"),
            results_prefix=env.prefix("RESULTS_PREFIX", "results/"),
            backfills_prefix=env.prefix("BACKFILLS_PREFIX", "backfills/"),
            control_prefix=env.prefix("CONTROL_PREFIX", "control/"),
            claims_table=env.get("CLAIMS_TABLE"),
            on_overlap=on_overlap,  # type: ignore[arg-type]
            publish_root=env.get("PUBLISH_ROOT"),
            publish_catalog=publish_catalog,  # type: ignore[arg-type]
            marquez_url=marquez_url or "",
            marquez_web_url=env.url("MARQUEZ_WEB_URL"),
            marquez_api_key_secret_id=env.get("MARQUEZ_API_KEY_SECRET_ID"),
            airflow_url=airflow_url,
            airflow_ui_url=env.url("AIRFLOW_UI_URL"),
            mwaa_environment=mwaa_environment,
            airflow_api_version=api_version,  # type: ignore[arg-type]
            airflow_secret_id=airflow_secret_id,
            backfill_dag_id=dag_id,
            job_catalog_uri=env.get("JOB_CATALOG_URI"),
            allowed_namespaces=allowed,
            spark_profiles=comma_set(env.get("SPARK_PROFILES")) or DEFAULT_SPARK_PROFILES,
            spark_profiles_uri=env.get("SPARK_PROFILES_URI"),
            preflight=PreflightLimits.read(env),
            policy_uri=policy_uri,
            policy_cache_seconds=env.whole(
                "POLICY_CACHE_SECONDS", 60, low=0, high=86_400, unit=" of seconds"
            ),
            cancel_confirm_seconds=env.whole("CANCEL_CONFIRM_SECONDS", 3, low=0, high=60, unit=" of seconds"),
            control_delegates=comma_set(env.get("CONTROL_DELEGATES")) or frozenset(),
            sweep_grace_seconds=env.whole("SWEEP_GRACE_SECONDS", 900, low=0, high=86_400, unit=" of seconds"),
            sweep_max_records=env.whole("SWEEP_MAX_RECORDS", 200, low=1, high=5_000, unit=" of records"),
            lineage_events=LineageSettings.parse(env.get(TRANSPORT_VARIABLE), env.get(NAMESPACE_VARIABLE)),
        )
        prefixes = (
            settings.incoming_prefix,
            settings.results_prefix,
            settings.backfills_prefix,
            settings.control_prefix,
        )
        if len(set(prefixes)) < 4:
            problems.append(
                "INCOMING_PREFIX / RESULTS_PREFIX / BACKFILLS_PREFIX / CONTROL_PREFIX: must be different prefixes"
            )
        elif settings.results_prefix.startswith(
            settings.incoming_prefix
        ) or settings.backfills_prefix.startswith(settings.incoming_prefix):
            # Results written under the incoming prefix would trigger the function again.
            problems.append("RESULTS_PREFIX / BACKFILLS_PREFIX: must not lie under INCOMING_PREFIX")
        env.check()
        return settings
