"""The replay Lambda's entry points (functions/replay/app.py puts them behind powertools'
BatchProcessor). Powertools Logger (JSON, also for the package's loggers), Tracer, Metrics
(EMF): ReplayTasksDone, ReplayTasksAlreadyDone, ReplayTasksContinued, ReplayTasksBusy,
ReplayTasksInvalid, ReplayTasksFailed, ReplayBatchCalls, SlackFailures, PagerDutyFailures.
Secrets are redacted from every log line (`backfill_orchestrator.redaction`)."""

from __future__ import annotations

import functools
import os
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from backfill_orchestrator import redaction
from backfill_orchestrator.aws import AWS_CLIENT_CONFIG
from backfill_orchestrator.replay.runner import DEFAULT_REMAINING_SECONDS
from backfill_orchestrator.replay.settings import ReplaySettings
from backfill_orchestrator.replay.wiring import ReplayWiring
from backfill_orchestrator.replay.worker import ReplayWorker
from backfill_orchestrator.settings import CommonSettings

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "backfill-replay"))
tracer = Tracer()
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "BackfillOrchestrator"))
copy_config_to_registered_loggers(source_logger=logger, include={"backfill_orchestrator"})

_wiring: ReplayWiring | None = None


def wiring() -> ReplayWiring:
    """Built once per container from the environment (SettingsError if it is incomplete)."""
    global _wiring
    if _wiring is None:
        _wiring = ReplayWiring(
            CommonSettings.from_env(),
            ReplaySettings.from_env(),
            s3_client=boto3.client("s3", config=AWS_CLIENT_CONFIG),
            sqs_client=boto3.client("sqs", config=AWS_CLIENT_CONFIG),
            dynamodb_client=boto3.client("dynamodb", config=AWS_CLIENT_CONFIG),
            secrets_client=boto3.client("secretsmanager", config=AWS_CLIENT_CONFIG),
        )
    return _wiring


def reset() -> None:
    """Forget the cached wiring (tests change the environment between invocations)."""
    global _wiring
    _wiring = None


def _remaining(context: Any):
    if context is None or not hasattr(context, "get_remaining_time_in_millis"):
        return lambda: DEFAULT_REMAINING_SECONDS
    return lambda: context.get_remaining_time_in_millis() / 1000


def _worker() -> ReplayWorker:
    return wiring().worker(metrics=metrics)


def is_sqs_event(event: Any) -> bool:
    return isinstance(event, dict) and isinstance(event.get("Records"), list)


def record_handler(record: SQSRecord, lambda_context: Any = None) -> dict[str, Any]:
    """One task from the replay-tasks queue; raising makes it a batch item failure."""
    with logger.append_context_keys(message_id=record.message_id):
        return _worker().process_record(record, remaining=_remaining(lambda_context))


def direct_invocation(event: Any, context: Any) -> dict[str, Any]:
    """One task invoked directly (a replay DAG); see ReplayWorker.process_direct."""
    return _worker().process_direct(event, remaining=_remaining(context))


def lambda_entry(function):  # noqa: ANN001, ANN201 - a decorator
    """Powertools logging, tracing and metrics around the Lambda handler; secrets redacted
    from every log handler present at each invocation."""

    @functools.wraps(function)
    def redacted(event: Any, context: Any) -> Any:
        redaction.install(logger)
        return function(event, context)

    wrapped = metrics.log_metrics(redacted)
    wrapped = tracer.capture_lambda_handler(capture_response=False)(wrapped)
    return logger.inject_lambda_context(clear_state=True)(wrapped)
