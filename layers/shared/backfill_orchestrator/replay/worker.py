"""What the replay Lambda does with one SQS record or one direct invocation: parse the task,
run it, and hand over to a continuation message when the run ran short of time.

SQS path (BatchProcessor, ReportBatchItemFailures): a record that raises is reported as a
batch item failure and delivered again later; the tasks queue sends it to the DLQ after
`max_receive_count` deliveries, so the last delivery runs with `final_attempt` (a failure
is then counted on the status record and paged before the message moves to the DLQ).

Direct path (a DAG invoking the function with one task): the event is the task document,
or `{"task": {...}, "final_attempt": true}`. The answer says what happened; `retry: true`
asks the caller to invoke again (time ran short, or another run holds the task)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from botocore.exceptions import BotoCoreError, ClientError

from backfill_orchestrator.errors import ServiceError
from backfill_orchestrator.notify.notifier import MetricsSink
from backfill_orchestrator.replay.runner import ReplayContext, TaskResult, run_task
from backfill_orchestrator.replay.task import InvalidReplayTaskError, ReplayTask, parse_task
from backfill_orchestrator.replay.task_leases import TaskBusyError

logger = logging.getLogger(__name__)


class ContinuationError(ServiceError, RuntimeError):
    """The continuation message could not be queued (the record is retried instead)."""


class ReplayWorker:
    def __init__(
        self,
        *,
        context: ReplayContext,
        tasks_queue_url: str,
        max_receive_count: int,
        metrics: MetricsSink | None = None,
    ):
        self._ctx = context
        self._tasks_queue_url = tasks_queue_url
        self._max_receive_count = max_receive_count
        self._metrics = metrics

    # -- SQS ---------------------------------------------------------------------------
    def process_record(self, record: SQSRecord, *, remaining: Callable[[], float]) -> dict[str, Any]:
        """Raises to make the record a batch item failure."""
        try:
            task = parse_task(record.body)
        except InvalidReplayTaskError as error:
            logger.error("replay task message %s is invalid: %s", record.message_id, error)
            self._count("ReplayTasksInvalid")
            raise
        receive_count = int(record.attributes.approximate_receive_count or 1)
        final_attempt = receive_count >= self._max_receive_count
        try:
            result = run_task(task, self._ctx, remaining=remaining, final_attempt=final_attempt)
        except TaskBusyError as error:
            logger.info("%s; delivery %d will be retried", error, receive_count)
            self._count("ReplayTasksBusy")
            raise
        except InvalidReplayTaskError as error:
            logger.error("replay task %s is invalid: %s", task.task_id, error)
            self._count("ReplayTasksInvalid")
            raise
        except Exception as error:
            last = " (last delivery: counted failed, paged)" if final_attempt else ""
            logger.error(
                "replay task %s failed on delivery %d%s: %s", task.task_id, receive_count, last, error
            )
            self._count("ReplayTasksFailed")
            raise
        if result.status == "continued":
            self._continue(task)
        self._account(result)
        return result.as_dict()

    def _continue(self, task: ReplayTask) -> None:
        # A fresh message (receive count 1): a long task is not mistaken for a failing one.
        try:
            self._ctx.sqs.send_message(QueueUrl=self._tasks_queue_url, MessageBody=task.to_json())
        except (ClientError, BotoCoreError) as error:
            raise ContinuationError(f"could not queue the continuation of {task.task_id}: {error}") from error

    # -- direct invocation ---------------------------------------------------------------
    def process_direct(self, event: Any, *, remaining: Callable[[], float]) -> dict[str, Any]:
        """Invalid input and busy tasks are answers, not errors; a failed run raises (so an
        Airflow task fails and retries), with its checkpoint saved."""
        final_attempt = False
        document = event
        if isinstance(event, dict) and "task" in event:
            unknown = sorted(set(event) - {"task", "final_attempt"})
            if unknown or not isinstance(event.get("final_attempt", False), bool):
                what = (
                    f"unknown key(s) {', '.join(unknown)}"
                    if unknown
                    else "final_attempt must be true or false"
                )
                return {"status": "invalid", "errors": [{"location": "<root>", "message": what}]}
            document, final_attempt = event["task"], event.get("final_attempt", False)
        try:
            task = parse_task(document)
            result = run_task(task, self._ctx, remaining=remaining, final_attempt=final_attempt)
        except InvalidReplayTaskError as error:
            return {"status": "invalid", "errors": [issue.as_dict() for issue in error.issues]}
        except TaskBusyError as error:
            return {"status": "busy", "task_id": error.task_id, "retry": True, "message": str(error)}
        self._account(result)
        return {**result.as_dict(), "retry": result.status == "continued"}

    # -- metrics -------------------------------------------------------------------------
    def _account(self, result: TaskResult) -> None:
        self._count(f"ReplayTasks{result.status.title().replace('_', '')}")
        if result.calls:
            self._count("ReplayBatchCalls", result.calls)

    def _count(self, name: str, value: float = 1) -> None:
        if self._metrics is not None:
            self._metrics.add_metric(name=name, unit="Count", value=value)
