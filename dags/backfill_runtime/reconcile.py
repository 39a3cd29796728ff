"""Options and steps of the daily `reconciliation` DAG (see dags/reconciliation_dag.py).

Options, section `[backfill]` (env `AIRFLOW__BACKFILL__<NAME>`, MWAA `backfill.<name>`):

- `reconciliation_window_days` (3): the trailing days checked, ending on the run's day;
- `reconciliation_rules`, `reconciliation_catalog`: the rules and job catalog (paths or s3:// URIs);
- `warehouse_uri`: the warehouse the Spark job reads (shared with the backfill DAG);
- `config_bucket`: the config bucket; `incoming_prefix` (`incoming/`), `backfills_prefix`
  (`backfills/`), `reconciliation_prefix` (`reconciliation/`): where configs are dropped, where
  the trigger keeps the plans of backfills in flight, where reports and staged configs go;
- `reconciliation_aws_conn_id` (`aws_reconciliation`): the Airflow AWS connection the configs
  are uploaded with. Give it a role of its own (`role_arn` in its extra): the trigger then sees
  that role as the submitter, and the policy and approval rules apply to it like to anyone;
- `reconciliation_owner` (`@data-platform`): the configs' owner;
- `reconciliation_command` (this Python running `spark_jobs.engine.reconcile_job`) and
  `reconciliation_timeout_seconds` (3 h): the local Spark runner;
- `status_table`: where the backfills in flight are listed (without it none are known)."""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from datetime import date

from backfill_runtime.options import SECTION, InvalidOptionError, _get, _int, warehouse_uri


@dataclass(frozen=True, kw_only=True)
class ReconciliationOptions:
    window_days: int
    rules: str
    catalog: str
    warehouse: str
    bucket: str
    incoming_prefix: str
    backfills_prefix: str
    reconciliation_prefix: str
    aws_conn_id: str
    owner: str
    command: list[str]
    timeout_seconds: int
    status_table: str

    @classmethod
    def from_config(cls) -> ReconciliationOptions:
        missing = [
            key
            for key in ("reconciliation_rules", "reconciliation_catalog", "config_bucket")
            if not _get(key, "")
        ]
        if missing:
            raise InvalidOptionError(f"[{SECTION}] reconciliation needs {', '.join(missing)}")
        default_command = f"{shlex.quote(sys.executable)} -m spark_jobs.engine.reconcile_job"
        return cls(
            window_days=_int("reconciliation_window_days", 3, minimum=1),
            rules=_get("reconciliation_rules", ""),
            catalog=_get("reconciliation_catalog", ""),
            warehouse=warehouse_uri(),
            bucket=_get("config_bucket", ""),
            incoming_prefix=_get("incoming_prefix", "incoming/"),
            backfills_prefix=_get("backfills_prefix", "backfills/"),
            reconciliation_prefix=_get("reconciliation_prefix", "reconciliation/"),
            aws_conn_id=_get("reconciliation_aws_conn_id", "aws_reconciliation"),
            owner=_get("reconciliation_owner", "@data-platform"),
            command=shlex.split(_get("reconciliation_command", default_command)),
            timeout_seconds=_int("reconciliation_timeout_seconds", 3 * 3600, minimum=60),
            status_table=_get("status_table", ""),
        )

    def _under(self, prefix: str, path: str) -> str:
        prefix = prefix.strip("/")
        return f"s3://{self.bucket}/{prefix + '/' if prefix else ''}{path}"

    def report_uri(self, day: date) -> str:
        return self._under(self.reconciliation_prefix, f"{day.isoformat()}/report.json")

    def staged_configs(self, day: date) -> str:
        return self._under(self.reconciliation_prefix, f"{day.isoformat()}/configs")

    def incoming_uri(self, name: str) -> str:
        return self._under(self.incoming_prefix, f"reconciliation/{name}.yaml")


def job_arguments(options: ReconciliationOptions, *, end: date, in_flight_plans: list[str]) -> list[str]:
    arguments = [
        "--warehouse",
        options.warehouse,
        "--rules",
        options.rules,
        "--catalog",
        options.catalog,
        "--report",
        options.report_uri(end),
        "--configs-out",
        options.staged_configs(end),
        "--window-days",
        str(options.window_days),
        "--end",
        end.isoformat(),
        "--owner",
        options.owner,
    ]
    for uri in in_flight_plans:
        arguments += ["--in-flight-plan", uri]
    return arguments


def notifier_from_options():  # -> backfill_orchestrator.notify.Notifier
    """The shared notifier factory with the `[backfill]` Slack/PagerDuty options, as the backfill
    DAG builds it; no status store: the summary is a message of its own, not a backfill's thread."""
    import boto3
    from aws_lambda_powertools.utilities.parameters import SecretsProvider

    from backfill_orchestrator.notify import build_notifier
    from backfill_orchestrator.redaction import install as install_redaction
    from backfill_orchestrator.secrets import SecretReader
    from backfill_orchestrator.settings import (
        DEFAULT_PAGERDUTY_EVENTS_URL,
        DEFAULT_SLACK_API_URL,
        NotifySettings,
    )

    install_redaction()
    settings = NotifySettings(
        slack_channel=_get("slack_channel", "") or None,
        slack_secret_id=_get("slack_secret_id", "") or None,
        slack_api_url=_get("slack_api_url", DEFAULT_SLACK_API_URL),
        pagerduty_secret_id=None,  # finding mismatches is the job working, never a page
        pagerduty_events_url=_get("pagerduty_events_url", DEFAULT_PAGERDUTY_EVENTS_URL),
    )
    secrets = SecretReader(
        provider=SecretsProvider(boto3_client=boto3.client("secretsmanager")),
        max_age=_int("secrets_max_age_seconds", 300, minimum=0),
    )
    return build_notifier(settings=settings, secrets=secrets, metrics=None, source="reconciliation-dag")


def submit_configs(options: ReconciliationOptions, *, report_uri: str, s3_client: object) -> list[str]:
    """Upload every config the report lists to the incoming prefix with `s3_client` (the DAG's
    own identity); returns where each went. Each is checked first: the trigger would refuse an
    invalid one anyway, and a half-submitted set is worse than none."""
    from backfill_orchestrator.config import parse_config
    from backfill_orchestrator.documents import read_bytes, write_bytes
    from backfill_orchestrator.reconciliation import ReconciliationReport

    report = ReconciliationReport.from_json(read_bytes(report_uri, s3_client=s3_client))
    staged = []
    for config in report.configs:
        body = read_bytes(config.uri, s3_client=s3_client)
        parse_config(body, source=config.uri)
        staged.append((options.incoming_uri(config.name), body))
    for target, body in staged:
        write_bytes(target, body, s3_client=s3_client, content_type="application/yaml")
    return [target for target, _ in staged]
