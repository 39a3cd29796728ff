"""The trigger Lambda's entry point (functions/trigger/app.py re-exports `handler`), in the
functions' one shape (`lambda_entry`): powertools around a typed handler, the wiring built once
per container from the environment (`TriggerWiring.from_env`), swapped by tests through
`trigger_wiring`.

Powertools: Logger (JSON; `backfill_id` on every line while an upload is handled, also for
the package's own loggers), Tracer (X-Ray, only when tracing is on), Metrics (EMF; namespace
from POWERTOOLS_METRICS_NAMESPACE): Received, Rejected, Triggered, DryRuns, Failed, Duplicates,
AlreadyKnown, AwaitingApproval, Queued, ControlPolicyRefused, SlackFailures, PagerDutyFailures,
ResultWriteFailures, MalformedEvents, ControlResumed, SweepFinished, SweepStarted. Secrets are redacted from every log line.

What every valid config needs is imported here, in Lambda's init phase; what only some uploads
need (control documents, replay dispatch, the X-Ray SDK with tracing off) where it is used."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from backfill_orchestrator.deadline import Deadline, deadline_scope
from backfill_orchestrator.lambda_entry import Container, Powertools
from backfill_orchestrator.trigger.events import is_sweep
from backfill_orchestrator.trigger.wiring import TriggerWiring

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

powertools = Powertools.for_function("backfill-trigger")
logger, metrics, tracer = powertools.logger, powertools.metrics, powertools.tracer
_container: Container[TriggerWiring] = Container(TriggerWiring.from_env)

# Kept back from the external calls' budget for recording an outcome when they run out of
# time: the FAILED write, the result file, the page and the Slack message.
FINISH_RESERVE_SECONDS = 20
END_MARGIN_SECONDS = 2  # every HTTP call, telling included, ends this long before Lambda's deadline
LEASE_MARGIN_SECONDS = 5  # the lease outlives the invocation by this much


def trigger_wiring(wiring: TriggerWiring | None = None) -> AbstractContextManager[None]:
    """`with trigger_wiring(wiring): handler(event, context)`: the handler uses `wiring` inside
    the block (None: one built from the environment on first use), the container's afterwards."""
    return _container.swapped(wiring)


@powertools.entry
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    wiring = _container.wiring()
    remaining = context.get_remaining_time_in_millis() / 1000
    if is_sweep(event):  # the schedule: finish live records whose run ended; start what waited
        with deadline_scope(Deadline.after(remaining - END_MARGIN_SECONDS)):
            swept = wiring.sweep(
                deadline=Deadline.after(remaining - FINISH_RESERVE_SECONDS), metrics=metrics, logger=logger
            )
        metrics.add_metric(name="SweepFinished", unit="Count", value=len(swept.finished))
        metrics.add_metric(name="SweepStarted", unit="Count", value=len(swept.started))
        logger.info(
            "sweep: %d records finished from their ended run, %d queued backfills started",
            len(swept.finished),
            len(swept.started),
            extra={"finished": swept.finished, "started": swept.started},
        )
        return {"sweep": {"finished": swept.finished, "started": swept.started}}
    service = wiring.service(metrics=metrics, logger=logger)
    # The lease covers the whole invocation, so a duplicate delivery (another request id) never
    # overlaps it; Lambda's own retries (same request id) take a dead attempt over at once.
    with deadline_scope(Deadline.after(remaining - END_MARGIN_SECONDS)):  # Slack/PagerDuty too
        results = service.handle_event(
            event,
            lease_seconds=int(remaining) + LEASE_MARGIN_SECONDS,
            request_id=context.aws_request_id,
            deadline=Deadline.after(remaining - FINISH_RESERVE_SECONDS),  # Marquez/Airflow, while a mode runs
        )
    return {"results": [asdict(result) for result in results]}
