"""The replay Lambda's entry point (functions/replay/app.py re-exports `handler`), in the
functions' one shape (`lambda_entry`): powertools around a typed handler, the wiring built once
per container from the environment (`ReplayWiring.from_env`), swapped by tests through
`replay_wiring`.

Two kinds of event: replay tasks from the replay-tasks queue (the SQS event source with
ReportBatchItemFailures: powertools' BatchProcessor reports each record that raises), or one
task invoked directly (a replay DAG; see ReplayWorker.process_direct).

Powertools Logger (JSON, also for the package's loggers), Tracer (only when tracing is on),
Metrics (EMF): ReplayTasksDone, ReplayTasksAlreadyDone, ReplayTasksContinued, ReplayTasksBusy,
ReplayTasksInvalid, ReplayTasksFailed, ReplayBatchCalls, SlackFailures, PagerDutyFailures.
Secrets are redacted from every log line."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from backfill_orchestrator.lambda_entry import Container, Powertools
from backfill_orchestrator.replay.wiring import ReplayWiring

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

powertools = Powertools.for_function("backfill-replay")
logger, metrics, tracer = powertools.logger, powertools.metrics, powertools.tracer
_container: Container[ReplayWiring] = Container(ReplayWiring.from_env)
processor = BatchProcessor(event_type=EventType.SQS)


def replay_wiring(wiring: ReplayWiring | None = None) -> AbstractContextManager[None]:
    """`with replay_wiring(wiring): handler(event, context)`: the handler uses `wiring` inside
    the block (None: one built from the environment on first use), the container's afterwards."""
    return _container.swapped(wiring)


def is_sqs_event(event: Any) -> bool:
    return isinstance(event, dict) and isinstance(event.get("Records"), list)


@powertools.entry
def handler(event: dict[str, Any], context: LambdaContext) -> Mapping[str, Any]:
    worker = _container.wiring().worker(metrics=metrics)
    remaining: Callable[[], float] = lambda: context.get_remaining_time_in_millis() / 1000  # noqa: E731
    if not is_sqs_event(event):
        return worker.process_direct(event, remaining=remaining)

    def record_handler(record: SQSRecord) -> dict[str, Any]:
        """One task from the replay-tasks queue; raising makes it a batch item failure."""
        with logger.append_context_keys(message_id=record.message_id):
            return worker.process_record(record, remaining=remaining)

    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
