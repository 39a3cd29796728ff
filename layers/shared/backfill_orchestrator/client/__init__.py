"""The Python client: what a Databricks notebook (or a script, or the `backfill` CLI) does
with a backfill. One implementation; the CLI's subcommands call these functions.

    from backfill_orchestrator.client import submit_backfill, backfill_status
    result = submit_backfill("/Volumes/main/ops/configs/orders.yaml", bucket="acme-backfill-configs-prod")
    backfill_status(result.backfill_id, table="backfill-status")

Sources are dicts, YAML/JSON text, or paths (local, `/Volumes/...`, `dbfs:/...`, `s3://...`).
`validate_backfill`, `plan_backfill` and `submit_backfill` take the same arguments for what
they check against (`policy`, `marquez_url` or `lineage`, `catalog`, each defaulting to the
environment the trigger reads). Credentials: pass `session=` (a boto3 Session) or explicit
clients; otherwise boto3's default chain (the cluster's instance profile). This package
imports nothing Lambda-, Airflow- or Spark-specific and runs on Python 3.10+."""

from backfill_orchestrator.client.control_requests import (
    CONTROLS,
    Control,
    ControlOutcome,
    ControlStatus,
    ControlWriteError,
    InvalidControlRequestError,
    approve_backfill,
    caller_identity,
    cancel_backfill,
    discard_backfill,
    publish_backfill,
    reject_backfill,
    retry_backfill,
    undo_backfill,
)
from backfill_orchestrator.client.plan import PlanView, plan_backfill
from backfill_orchestrator.client.preflight import (
    OutsideIncomingPrefixError,
    check_prefix,
    deployment_policy,
    incoming_prefix,
    preflight_checked,
)
from backfill_orchestrator.client.sources import (
    ConfigFileNotFoundError,
    ConfigSource,
    PreparedConfig,
    looks_like_path,
    prepare_bytes,
    prepare_config,
)
from backfill_orchestrator.client.status import (
    BackfillNotFoundError,
    NoStatusTableError,
    backfill_status,
    list_backfills,
    watch_backfill,
)
from backfill_orchestrator.client.submit import (
    DEFAULT_PREFIX,
    Submission,
    SubmitError,
    submit_backfill,
    upload_prepared,
)
from backfill_orchestrator.client.validate import Checked, check_backfill, validate_backfill

__all__ = [
    "CONTROLS",
    "DEFAULT_PREFIX",
    "BackfillNotFoundError",
    "Checked",
    "ConfigFileNotFoundError",
    "ConfigSource",
    "Control",
    "ControlOutcome",
    "ControlStatus",
    "ControlWriteError",
    "InvalidControlRequestError",
    "NoStatusTableError",
    "OutsideIncomingPrefixError",
    "PlanView",
    "PreparedConfig",
    "Submission",
    "SubmitError",
    "approve_backfill",
    "backfill_status",
    "caller_identity",
    "cancel_backfill",
    "check_backfill",
    "check_prefix",
    "deployment_policy",
    "discard_backfill",
    "incoming_prefix",
    "list_backfills",
    "looks_like_path",
    "plan_backfill",
    "preflight_checked",
    "publish_backfill",
    "prepare_bytes",
    "prepare_config",
    "reject_backfill",
    "retry_backfill",
    "submit_backfill",
    "undo_backfill",
    "upload_prepared",
    "validate_backfill",
    "watch_backfill",
]
