"""Per-task idempotency: one DynamoDB item per replay task holds its lease, its checkpoint
and its outcome, and every change is a conditional write.

- `acquire` takes the task's lease, unless another run holds a live one (TaskBusyError) or
  the task is done already (TaskAlreadyDoneError: a redelivery, which sends nothing).
- `checkpoint` records, after every batch, where to resume: everything before
  `resume_from` is resolved (sent or reported), plus any positions after it that were sent
  already (`resolved_ahead`, when a batch was cut short by failing entries). It is one
  conditional UpdateItem of only what changed, with nothing read back.
- `finish_item` is the write that ends the task, for a TransactWriteItems together with the
  status record's counters, so a task is counted exactly once.

A run that dies keeps its lease until the lease runs out (the Lambda's own deadline plus a
margin); the next delivery then resumes from the checkpoint. Why not powertools
idempotency: its record holds a lock and a final result but no checkpoint, so a task that
crashed half-way would be re-sent from the start once the lock expires.

Table: partition key `id` (string); TTL on `expiration`."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from botocore.exceptions import BotoCoreError, ClientError

from backfill_orchestrator.dynamo import attribute, condition_failed, plain_from_item
from backfill_orchestrator.errors import PolicyRefusal, ServiceError
from backfill_orchestrator.replay.archive import Position

TaskStateName = Literal["RUNNING", "DONE", "FAILED"]
ITEM_PREFIX = "replay-task#"
DEFAULT_RETENTION_SECONDS = 30 * 24 * 3600


class LedgerError(ServiceError, RuntimeError):
    """DynamoDB failed (throttled past botocore's retries, unreachable, no permission)."""


class TaskBusyError(ServiceError, RuntimeError):
    """Another run holds a live lease on this task; try again after `lease_until`."""

    def __init__(self, task_id: str, lease_until: float):
        self.task_id = task_id
        self.lease_until = lease_until
        super().__init__(f"task {task_id} is being replayed by another run (lease until {lease_until:.0f})")


class TaskAlreadyDoneError(PolicyRefusal, RuntimeError):
    """The task finished before: a redelivery, refused so nothing is sent twice (never retried).
    `state` holds its recorded outcome."""

    def __init__(self, state: TaskState):
        self.state = state
        super().__init__(f"task {state.task_id} is {state.state} already")


class LeaseLostError(ServiceError, RuntimeError):
    """This run no longer holds the task's lease (it expired and another run took over)."""


@dataclass(frozen=True)
class Failure:
    position: Position
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.position.key, "line": self.position.line, "reason": self.reason}


@dataclass(frozen=True)
class TaskState:
    task_id: str
    state: TaskStateName
    resume_from: Position | None = None
    resolved_ahead: frozenset[Position] = frozenset()
    sent: int = 0
    failed: int = 0
    failures: tuple[Failure, ...] = ()
    runs: int = 0
    lease_owner: str | None = None
    lease_until: float = 0.0
    counted_as_failed: bool = False
    result: dict[str, Any] = field(default_factory=dict)


def _state_from_item(item: dict[str, Any]) -> TaskState:
    data = plain_from_item(item)
    resume = data.get("resume_from")
    return TaskState(
        task_id=data["task_id"],
        state=data["state"],
        resume_from=Position(resume["key"], resume["line"]) if resume else None,
        resolved_ahead=frozenset(Position(p["key"], p["line"]) for p in data.get("resolved_ahead") or ()),
        sent=data.get("sent", 0),
        failed=data.get("failed", 0),
        failures=tuple(
            Failure(Position(f["key"], f["line"]), f["reason"]) for f in data.get("failures") or ()
        ),
        runs=data.get("runs", 0),
        lease_owner=data.get("lease_owner"),
        lease_until=float(data.get("lease_until", 0)),
        counted_as_failed=bool(data.get("counted_as_failed", False)),
        result=data.get("result") or {},
    )


def _position(position: Position) -> dict[str, Any]:
    return {"key": position.key, "line": position.line}


class TaskLedger:
    def __init__(
        self,
        *,
        table_name: str,
        dynamodb_client: Any,
        clock: Callable[[], float] = time.time,
        retention_seconds: int = DEFAULT_RETENTION_SECONDS,
    ):
        self.table_name = table_name
        self._client = dynamodb_client
        self._clock = clock
        self._retention = retention_seconds

    @staticmethod
    def _key(task_id: str) -> dict[str, Any]:
        return {"id": {"S": ITEM_PREFIX + task_id}}

    def get(self, task_id: str) -> TaskState | None:
        try:
            item = self._client.get_item(
                TableName=self.table_name, Key=self._key(task_id), ConsistentRead=True
            ).get("Item")
        except (ClientError, BotoCoreError) as error:
            raise LedgerError(f"reading replay task {task_id} from {self.table_name}: {error}") from error
        return _state_from_item(item) if item else None

    def acquire(self, task_id: str, *, backfill_id: str, owner: str, lease_seconds: float) -> TaskState:
        """Take the lease; returns the task's state (its checkpoint, if a run came before)."""
        now = self._clock()
        try:
            response = self._client.update_item(
                TableName=self.table_name,
                Key=self._key(task_id),
                UpdateExpression=(
                    "SET #state = :running, lease_owner = :owner, lease_until = :until, task_id = :task_id, "
                    "backfill_id = :backfill_id, expiration = :expiration, started_at = if_not_exists(started_at, :now) "
                    "ADD runs :one"
                ),
                # A FAILED task (counted, paged, in the DLQ) may be redriven: it resumes too.
                ConditionExpression="attribute_not_exists(id) OR (#state IN (:running, :failed) AND lease_until < :now)",
                ExpressionAttributeNames={"#state": "state"},
                ExpressionAttributeValues={
                    ":running": {"S": "RUNNING"},
                    ":failed": {"S": "FAILED"},
                    ":owner": {"S": owner},
                    ":until": attribute(now + lease_seconds),
                    ":now": attribute(now),
                    ":task_id": {"S": task_id},
                    ":backfill_id": {"S": backfill_id},
                    ":expiration": {"N": str(int(now) + self._retention)},
                    ":one": {"N": "1"},
                },
                ReturnValues="ALL_NEW",
            )
        except (ClientError, BotoCoreError) as error:
            if not condition_failed(error):
                raise LedgerError(f"acquiring replay task {task_id}: {error}") from error
            current = self.get(task_id)
            if current is None:  # deleted in between (TTL): try once more from scratch
                return self.acquire(
                    task_id, backfill_id=backfill_id, owner=owner, lease_seconds=lease_seconds
                )
            if current.state == "DONE":
                raise TaskAlreadyDoneError(current) from None
            raise TaskBusyError(task_id, current.lease_until) from None
        return _state_from_item(response["Attributes"])

    def checkpoint(
        self,
        task_id: str,
        *,
        owner: str,
        resume_from: Position,
        sent: int,
        resolved_ahead: frozenset[Position] | None = None,
        failed: int | None = None,
        failures: tuple[Failure, ...] | None = None,
    ) -> None:
        """One conditional UpdateItem, nothing read back. `resolved_ahead`, `failed` and
        `failures` are written only when given (the caller passes them when they changed),
        so the usual checkpoint is two numbers and a position."""
        values: dict[str, Any] = {":resume": attribute(_position(resume_from)), ":sent": {"N": str(sent)}}
        update = "SET resume_from = :resume, sent = :sent"
        if resolved_ahead is not None:
            values[":ahead"] = attribute([_position(p) for p in sorted(resolved_ahead)])
            update += ", resolved_ahead = :ahead"
        if failed is not None:
            values[":failed"] = {"N": str(failed)}
            update += ", failed = :failed"
        if failures is not None:
            values[":failures"] = attribute([f.as_dict() for f in failures])
            update += ", failures = :failures"
        self._owned_update(task_id, owner=owner, update=update, values=values, doing="checkpointing")

    def release(self, task_id: str, *, owner: str) -> None:
        """Give the lease up now (the checkpoint stays), so the next run need not wait."""
        self._owned_update(
            task_id,
            owner=owner,
            update="SET lease_until = :zero",
            values={":zero": {"N": "0"}},
            doing="releasing",
        )

    def finish_item(
        self, task_id: str, *, owner: str, state: Literal["DONE", "FAILED"], result: dict[str, Any]
    ) -> dict[str, Any]:
        """The TransactWriteItems entry that ends the task (only while this run holds the lease)."""
        return {
            "Update": {
                "TableName": self.table_name,
                "Key": self._key(task_id),
                "UpdateExpression": (
                    "SET #state = :state, #result = :result, lease_until = :zero, finished_at = :now, "
                    "counted_as_failed = :counted_as_failed"
                ),
                "ConditionExpression": "lease_owner = :owner AND #state = :running",
                "ExpressionAttributeNames": {"#state": "state", "#result": "result"},
                "ExpressionAttributeValues": {
                    ":state": {"S": state},
                    ":result": attribute(result),
                    ":zero": {"N": "0"},
                    ":now": attribute(self._clock()),
                    ":counted_as_failed": {"BOOL": state == "FAILED"},
                    ":owner": {"S": owner},
                    ":running": {"S": "RUNNING"},
                },
            }
        }

    def finish(
        self,
        task_id: str,
        *,
        owner: str,
        state: Literal["DONE", "FAILED"],
        result: dict[str, Any],
        with_items: list[dict[str, Any]] | None = None,
    ) -> None:
        """End the task, atomically with `with_items` (e.g. the status counters)."""
        items = [self.finish_item(task_id, owner=owner, state=state, result=result), *(with_items or [])]
        try:
            self._client.transact_write_items(TransactItems=items)
        except ClientError as error:
            reasons = error.response.get("CancellationReasons") or []
            if reasons and reasons[0].get("Code") == "ConditionalCheckFailed":
                raise LeaseLostError(f"replay task {task_id}: lease lost before finishing") from None
            raise LedgerError(f"finishing replay task {task_id}: {error}") from error
        except BotoCoreError as error:
            raise LedgerError(f"finishing replay task {task_id}: {error}") from error

    def _owned_update(
        self, task_id: str, *, owner: str, update: str, values: dict[str, Any], doing: str
    ) -> None:
        try:
            self._client.update_item(
                TableName=self.table_name,
                Key=self._key(task_id),
                UpdateExpression=update,
                ConditionExpression="lease_owner = :owner AND #state = :running",
                ExpressionAttributeNames={"#state": "state"},
                ExpressionAttributeValues={**values, ":owner": {"S": owner}, ":running": {"S": "RUNNING"}},
            )
        except (ClientError, BotoCoreError) as error:
            if condition_failed(error):
                raise LeaseLostError(f"replay task {task_id}: lease lost while {doing}") from None
            raise LedgerError(f"{doing} replay task {task_id}: {error}") from error
