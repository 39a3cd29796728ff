"""The trigger's side of replay: resolve the config's target through the deployment's
allowlist, split the config into tasks and queue them on the replay-tasks queue.

    tasks = plan_replay(config, targets=settings.replay_targets)   # InvalidConfigError: replay.target
    queue_tasks(tasks, sqs=sqs, queue_url=tasks_queue_url)          # SendMessageBatch, 10 a call

Validation (plan_replay) is separate from the side effect (queue_tasks), so an unknown
target queues nothing. Queueing the same tasks twice is harmless: the replay function's
ledger runs each task id once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from backfill_orchestrator.config import BackfillConfig, ConfigIssue, InvalidConfigError
from backfill_orchestrator.errors import ServiceError
from backfill_orchestrator.replay.archive import Position
from backfill_orchestrator.replay.sender import (
    BatchSender,
    ReplayMessage,
    SendIncompleteError,
    TargetQueueError,
    batches,
    message_size,
)
from backfill_orchestrator.replay.task import ReplayTask, split_tasks

MAX_TASK_BYTES = 256 * 1024


class QueueTasksError(ServiceError, RuntimeError):
    """SQS refused a replay task message (after retries); the trigger fails retryably."""


def unknown_target_issue(target: str, targets: Mapping[str, str]) -> ConfigIssue:
    known = ", ".join(sorted(targets)) or "none configured"
    return ConfigIssue("replay.target", f"unknown target {target!r}; this deployment allows: {known}")


def plan_replay(config: BackfillConfig, *, targets: Mapping[str, str]) -> list[ReplayTask]:
    """The config's tasks; InvalidConfigError (`replay.target`) if the target is not allowed."""
    assert config.replay is not None, "a replay config has a replay section (checked by the validator)"
    if config.replay.target not in targets:
        raise InvalidConfigError([unknown_target_issue(config.replay.target, targets)])
    return split_tasks(config)


def queue_tasks(
    tasks: list[ReplayTask], *, sqs: Any, queue_url: str, sender_options: dict[str, Any] | None = None
) -> int:
    """Send every task to the replay-tasks queue; returns how many were sent."""
    messages = []
    for index, task in enumerate(tasks):
        body = task.to_json()
        messages.append(ReplayMessage(Position(task.task_id, index), body, {}, message_size(body, {})))
    sender = BatchSender(sqs=sqs, queue_url=queue_url, **(sender_options or {}))
    sent = 0
    for batch in batches(messages, max_bytes=MAX_TASK_BYTES):
        try:
            outcome = sender.send(batch.messages)
        except (SendIncompleteError, TargetQueueError) as error:
            raise QueueTasksError(f"queueing replay tasks on {queue_url}: {error}") from error
        if outcome.rejected:
            raise QueueTasksError(
                f"SQS refused replay task {outcome.rejected[0].position.key}: {outcome.rejected[0].reason}"
            )
        sent += len(outcome.sent)
    return sent
