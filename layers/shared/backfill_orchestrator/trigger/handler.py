"""The trigger Lambda's entry point (functions/trigger/app.py re-exports `handler`).

Powertools: Logger (JSON; `backfill_id` on every line while an upload is handled, also for
the package's own loggers), Tracer (X-Ray), Metrics (EMF; namespace from
POWERTOOLS_METRICS_NAMESPACE): Received, Rejected, Triggered, DryRuns, Failed, Duplicates,
AlreadyKnown, AwaitingApproval, ControlPolicyRefused, SlackFailures, PagerDutyFailures,
ResultWriteFailures, MalformedEvents, SweepStarted.
Secrets are redacted from every log line (`backfill_orchestrator.redaction`).

The Tracer exists only when tracing is on (`tracing.lambda_tracer`: building one imports the
X-Ray SDK, even disabled). What every valid config needs is imported here, in Lambda's init
phase; what only some uploads need (control documents, replay dispatch) where it is used."""

from __future__ import annotations

import os
from dataclasses import asdict
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers

from backfill_orchestrator import redaction
from backfill_orchestrator.aws import AWS_CLIENT_CONFIG
from backfill_orchestrator.deadline import Deadline, deadline_scope
from backfill_orchestrator.settings import DeploymentSettings
from backfill_orchestrator.tracing import lambda_tracer, traced_handler
from backfill_orchestrator.trigger.events import is_sweep
from backfill_orchestrator.trigger.service import DEFAULT_LEASE_SECONDS
from backfill_orchestrator.trigger.wiring import TriggerWiring

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "backfill-trigger"))
tracer = lambda_tracer()  # None when tracing is off
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "BackfillOrchestrator"))
copy_config_to_registered_loggers(source_logger=logger, include={"backfill_orchestrator"})

# Kept back from the external calls' budget for recording an outcome when they run out of
# time: the FAILED write, the result file, the page and the Slack message.
FINISH_RESERVE_SECONDS = 20
END_MARGIN_SECONDS = 2  # every HTTP call, telling included, ends this long before Lambda's deadline
LEASE_MARGIN_SECONDS = 5  # the lease outlives the invocation by this much

_wiring: TriggerWiring | None = None


def wiring() -> TriggerWiring:
    """Built once per container from the environment (SettingsError if it is incomplete)."""
    global _wiring
    if _wiring is None:
        settings = DeploymentSettings.from_env()
        _wiring = TriggerWiring(
            settings,
            s3_client=boto3.client("s3", config=AWS_CLIENT_CONFIG),
            dynamodb_client=boto3.client("dynamodb", config=AWS_CLIENT_CONFIG),
            secrets_client=boto3.client("secretsmanager", config=AWS_CLIENT_CONFIG),
            mwaa_client_factory=lambda: boto3.client("mwaa", config=AWS_CLIENT_CONFIG),
            sqs_client_factory=lambda: boto3.client("sqs", config=AWS_CLIENT_CONFIG),
            ssm_client_factory=lambda: boto3.client("ssm", config=AWS_CLIENT_CONFIG),
            iam_client_factory=lambda: boto3.client("iam", config=AWS_CLIENT_CONFIG),
        )
    return _wiring


def reset() -> None:
    """Forget the cached wiring (tests change the environment between invocations)."""
    global _wiring
    _wiring = None


@logger.inject_lambda_context(clear_state=True)
@traced_handler(tracer)
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    redaction.install(logger)  # every invocation: covers handlers added since (the runtime's)
    if is_sweep(event):  # the schedule: start queued backfills whose blocker ended without releasing
        started = wiring().sweep()
        metrics.add_metric(name="SweepStarted", unit="Count", value=len(started))
        logger.info("sweep: %d queued backfills can start", len(started), extra={"started": started})
        return {"sweep": {"started": started}}
    service = wiring().service(metrics=metrics, logger=logger)
    remaining = (context.get_remaining_time_in_millis() if context is not None else DEFAULT_LEASE_SECONDS * 1000) / 1000
    # The lease covers the whole invocation, so a duplicate delivery (another request id) never
    # overlaps it; Lambda's own retries (same request id) take a dead attempt over at once.
    with deadline_scope(Deadline.after(remaining - END_MARGIN_SECONDS)):  # Slack/PagerDuty too
        results = service.handle_event(
            event,
            lease_seconds=int(remaining) + LEASE_MARGIN_SECONDS,
            request_id=getattr(context, "aws_request_id", None),
            deadline=Deadline.after(remaining - FINISH_RESERVE_SECONDS),  # Marquez/Airflow, while a mode runs
        )
    return {"results": [asdict(result) for result in results]}
