"""The Slack interactivity function's entry point (functions/slack_interactivity/app.py), in
the functions' one shape (`lambda_entry`): powertools around a typed handler, the wiring built
once per container from the environment (`InteractivityWiring.from_env`), swapped by tests
through `interactivity_wiring`.

Powertools Logger (JSON, also for the package's loggers), Tracer (only when tracing is on),
Metrics (EMF): SlackControlWritten, one counter per refusal (SlackBadSignature,
SlackStaleRequest, SlackReplayedRequest, SlackMalformedInteraction, SlackUnknownUser,
SlackUnknownBackfill, SlackNotPermitted, SlackSelfApproval, SlackApprovalExpired,
SlackActionNotAllowed), SlackServiceFailures, SlackResponseFailures. Secrets are redacted from
every log line."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit

from backfill_orchestrator.interactivity.errors import MalformedInteractionError
from backfill_orchestrator.interactivity.payload import request_from_http_event
from backfill_orchestrator.interactivity.wiring import InteractivityWiring
from backfill_orchestrator.lambda_entry import Container, Powertools

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

powertools = Powertools.for_function("backfill-slack-interactivity")
logger, metrics, tracer = powertools.logger, powertools.metrics, powertools.tracer
_container: Container[InteractivityWiring] = Container(InteractivityWiring.from_env)


def interactivity_wiring(wiring: InteractivityWiring | None = None) -> AbstractContextManager[None]:
    """`with interactivity_wiring(wiring): handler(event, context)`: the handler uses `wiring`
    inside the block (None: one built from the environment on first use), the container's afterwards."""
    return _container.swapped(wiring)


def _count(name: str) -> None:
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)


@powertools.entry
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    try:
        request = request_from_http_event(event)
    except MalformedInteractionError as error:
        _count(error.metric)
        return {"statusCode": 400, "body": str(error)}
    return _container.wiring().service(count=_count).handle(request)
