"""The Slack interactivity function's entry point (functions/slack_interactivity/app.py).

Powertools Logger and Metrics (EMF): SlackControlWritten, one counter per refusal
(SlackBadSignature, SlackStaleRequest, SlackReplayedRequest, SlackMalformedInteraction,
SlackUnknownUser, SlackUnknownBackfill, SlackNotPermitted, SlackSelfApproval,
SlackApprovalExpired, SlackActionNotAllowed), SlackServiceFailures, SlackResponseFailures."""

from __future__ import annotations

import os
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from aws_lambda_powertools.metrics import MetricUnit

from backfill_orchestrator import identity
from backfill_orchestrator.aws import AWS_CLIENT_CONFIG
from backfill_orchestrator.interactivity import service as service_module
from backfill_orchestrator.interactivity.errors import MalformedInteractionError
from backfill_orchestrator.interactivity.payload import request_from_http_event
from backfill_orchestrator.interactivity.service import InteractivityService
from backfill_orchestrator.interactivity.wiring import InteractivitySettings, build_service

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "backfill-slack-interactivity"))
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "BackfillOrchestrator"))
# Only this function's own package loggers: reconfiguring the whole `backfill_orchestrator` tree
# would take it from another handler imported in the same process (tests import them all).
copy_config_to_registered_loggers(source_logger=logger, include={service_module.logger.name, identity.logger.name})

_service: InteractivityService | None = None


def service() -> InteractivityService:
    """Built once per container (clients, secret and policy caches survive warm invocations)."""
    global _service
    if _service is None:
        _service = build_service(
            InteractivitySettings.from_env(),
            s3_client=boto3.client("s3", config=AWS_CLIENT_CONFIG),
            dynamodb_client=boto3.client("dynamodb", config=AWS_CLIENT_CONFIG),
            secrets_client=boto3.client("secretsmanager", config=AWS_CLIENT_CONFIG),
            ssm_client=boto3.client("ssm", config=AWS_CLIENT_CONFIG),
            count=_count,
        )
    return _service


def reset() -> None:
    """Forget the cached service (tests change the environment between invocations)."""
    global _service
    _service = None


def _count(name: str) -> None:
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    try:
        request = request_from_http_event(event)
    except MalformedInteractionError as error:
        _count(error.metric)
        return {"statusCode": 400, "body": str(error)}
    return service().handle(request)
