"""Control actions, one item each in the status table: what makes a control document act
exactly once however often, and however late, it is delivered.

The item is keyed `<backfill id>#action#<upload id>` (the control document's upload) and goes
`started` -> `done`, each step a conditional write:

- `begin`: the first delivery creates it `started`, with a lease for its invocation (its Lambda
  request id and remaining time, like the trigger's upload lease) and the record's state and
  run attempt as they were (`basis_state`, `basis_attempt`); a redelivery finds it and
    - `done`: a duplicate (`Finished`); nothing is acted on again;
    - `started`, lease held by another live invocation: that delivery is acting (`Held`);
    - `started`, lease run out, released (the delivery failed and raised), or held by the same
      request id (Lambda's retry of an attempt that died): taken over (`Begun`, `attempts` + 1),
      to finish what the earlier delivery started;
- `finish`: `done` with the outcome, the detail and who acted, only while this delivery still
  holds it (`attempts` unchanged);
- `release`: a delivery that failed gives its lease up at once, so the platform's retry (or a
  redrive from the on-failure queue, a new request id) resumes without waiting for it.

Items expire `REMEMBERED_FOR` (30 days) after they are created (DynamoDB's time to live on
`expires_at`): far beyond the last redelivery an upload can see (15 days), so a redelivered
document always finds its item. They carry no `state` nor `list_month`: the listing indexes
never see them. Why not powertools' idempotency utility: a Lambda retry of an attempt that
died must take the action over at once (it runs with the same request id, after the dead
attempt ended), which needs the lease's holder; and a failed delivery must keep what it did
(its item) so that the retry finishes it, where the utility deletes its record on failure and
runs the function again from nothing."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from botocore.exceptions import BotoCoreError, ClientError

from backfill_orchestrator._compat import StrEnum
from backfill_orchestrator.dynamo import condition_failed, plain_from_item
from backfill_orchestrator.status.history import SEPARATOR
from backfill_orchestrator.status.model import BackfillState, StatusRecord
from backfill_orchestrator.status.store import REMEMBERED_FOR, StatusStore, StatusStoreError


class Phase(StrEnum):
    STARTED = "started"
    DONE = "done"


@dataclass(frozen=True)
class ActionRecord:
    backfill_id: str
    upload_id: str
    action: str
    phase: Phase
    attempts: int  # deliveries that began or took it over: 2 and more is a resumption
    started_at: datetime  # when the first delivery began: a resumed action is judged as of then
    basis_state: BackfillState  # the record's state and run attempt when the action began
    basis_attempt: int
    lease_until: int = 0
    lease_holder: str | None = None
    outcome: str | None = None  # done: the control result (done, refused)
    detail: str | None = None
    actor: str | None = None  # who acted (the principal the policy checked)

    @property
    def resumed(self) -> bool:
        return self.attempts > 1

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> ActionRecord:
        data = plain_from_item(item)
        return cls(
            backfill_id=data["action_of"],
            upload_id=data["upload_id"],
            action=data["action"],
            phase=Phase(data["phase"]),
            attempts=int(data["attempts"]),
            started_at=datetime.fromisoformat(data["started_at"]),
            basis_state=BackfillState(data["basis_state"]),
            basis_attempt=int(data["basis_attempt"]),
            lease_until=int(data.get("lease_until") or 0),
            lease_holder=data.get("lease_holder"),
            outcome=data.get("outcome"),
            detail=data.get("detail"),
            actor=data.get("actor"),
        )


@dataclass(frozen=True)
class _Start:
    """What `begin` found: each kind of start carries the action's record."""

    action: ActionRecord


class Begun(_Start):
    """This delivery acts: the first one, or one resuming an action begun earlier."""


class Finished(_Start):
    """The action completed: a redelivery is a duplicate."""


class Held(_Start):
    """Another delivery is acting on it under its lease."""


ActionStart = Begun | Finished | Held


def action_key(backfill_id: str, upload_id: str) -> str:
    return f"{backfill_id}{SEPARATOR}action{SEPARATOR}{upload_id}"


class ActionLedger:
    """The action items of one status table (the StatusStore's table and client)."""

    def __init__(self, store: StatusStore):
        self._store = store
        self._table = store.table_name
        self._client = store.client

    def begin(
        self,
        record: StatusRecord,
        upload_id: str,
        *,
        action: str,
        lease_seconds: int,
        holder: str | None,
    ) -> ActionStart:
        now = self._store.now()
        item = {
            "backfill_id": {"S": action_key(record.backfill_id, upload_id)},
            "action_of": {"S": record.backfill_id},
            "upload_id": {"S": upload_id},
            "action": {"S": action},
            "phase": {"S": str(Phase.STARTED)},
            "attempts": {"N": "1"},
            "started_at": {"S": now.isoformat()},
            "basis_state": {"S": str(record.state)},
            "basis_attempt": {"N": str(record.run_attempt)},
            "lease_until": {"N": str(int(now.timestamp()) + lease_seconds)},
            "expires_at": {"N": str(int((now + REMEMBERED_FOR).timestamp()))},
            **({"lease_holder": {"S": holder}} if holder else {}),
        }
        try:
            self._client.put_item(
                TableName=self._table,
                Item=item,
                ConditionExpression="attribute_not_exists(backfill_id)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if not condition_failed(error):
                raise StatusStoreError(f"recording a {action} of {record.backfill_id}: {error}") from error
            existing = cast(dict[str, Any], error.response.get("Item")) or self._read(
                record.backfill_id, upload_id
            )
            return self._take_over(ActionRecord.from_item(existing), now, lease_seconds, holder)
        except BotoCoreError as error:
            raise StatusStoreError(f"recording a {action} of {record.backfill_id}: {error}") from error
        return Begun(ActionRecord.from_item(item))

    def _take_over(
        self, action: ActionRecord, now: datetime, lease_seconds: int, holder: str | None
    ) -> ActionStart:
        if action.phase is Phase.DONE:
            return Finished(action)
        ours = holder is not None and action.lease_holder == holder  # Lambda's retry of a dead attempt
        if action.lease_until >= int(now.timestamp()) and not ours:
            return Held(action)
        values: dict[str, Any] = {
            ":started": {"S": str(Phase.STARTED)},
            ":attempts": {"N": str(action.attempts)},
            ":one": {"N": "1"},
            ":lease": {"N": str(int(now.timestamp()) + lease_seconds)},
        }
        update = "SET #lease_until = :lease, #attempts = #attempts + :one"
        if holder:
            update += ", #lease_holder = :holder"
            values[":holder"] = {"S": holder}
        else:
            update += " REMOVE #lease_holder"
        applied, item = self._update_started(action, update, values, "resuming")
        if applied:
            return Begun(ActionRecord.from_item(item))
        # Another delivery took it over or finished it meanwhile.
        changed = ActionRecord.from_item(item or self._read(action.backfill_id, action.upload_id))
        return Finished(changed) if changed.phase is Phase.DONE else Held(changed)

    def finish(self, action: ActionRecord, *, outcome: str, detail: str, actor: str | None) -> bool:
        """Record the action done; False when another delivery took it over meanwhile (its
        lease ran out under this one): that one reports it."""
        values: dict[str, Any] = {
            ":done": {"S": str(Phase.DONE)},
            ":started": {"S": str(Phase.STARTED)},
            ":attempts": {"N": str(action.attempts)},
            ":outcome": {"S": outcome},
            ":detail": {"S": detail[:2000]},
            ":at": {"S": self._store.now().isoformat()},
        }
        update = "SET #phase = :done, #outcome = :outcome, #detail = :detail, #finished_at = :at"
        if actor:
            update += ", #actor = :actor"
            values[":actor"] = {"S": actor[:200]}
        applied, _ = self._update_started(
            action, update + " REMOVE #lease_until, #lease_holder", values, "finishing"
        )
        return applied

    def release(self, action: ActionRecord) -> bool:
        """Give the lease up (the delivery failed and raises): any redelivery resumes at once."""
        values = {
            ":started": {"S": str(Phase.STARTED)},
            ":attempts": {"N": str(action.attempts)},
            ":zero": {"N": "0"},
        }
        applied, _ = self._update_started(action, "SET #lease_until = :zero", values, "releasing")
        return applied

    def _update_started(
        self, action: ActionRecord, update: str, values: dict[str, Any], doing: str
    ) -> tuple[bool, dict[str, Any]]:
        """Apply `update` while the action is still the started attempt this delivery saw
        (`values` binds :started and :attempts): (True, the new item), or (False, the item as
        it is now, empty when DynamoDB did not return it) when another delivery changed it."""
        try:
            response = self._client.update_item(
                TableName=self._table,
                Key={"backfill_id": {"S": action_key(action.backfill_id, action.upload_id)}},
                UpdateExpression=update,
                ConditionExpression="#phase = :started AND #attempts = :attempts",
                ExpressionAttributeNames=_names(update, "#phase #attempts"),
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except (ClientError, BotoCoreError) as error:
            if condition_failed(error):
                return False, cast(dict[str, Any], error.response.get("Item") or {})
            raise StatusStoreError(f"{doing} a {action.action} of {action.backfill_id}: {error}") from error
        return True, cast(dict[str, Any], response["Attributes"])

    def _read(self, backfill_id: str, upload_id: str) -> dict[str, Any]:
        try:
            response = self._client.get_item(
                TableName=self._table,
                Key={"backfill_id": {"S": action_key(backfill_id, upload_id)}},
                ConsistentRead=True,
            )
        except (ClientError, BotoCoreError) as error:
            raise StatusStoreError(f"reading an action of {backfill_id}: {error}") from error
        if "Item" not in response:  # created, then gone: expired between two reads
            raise StatusStoreError(f"the action item of {backfill_id} for upload {upload_id} vanished")
        return cast(dict[str, Any], response["Item"])


def _names(*expressions: str) -> dict[str, str]:
    """Placeholders for every attribute name the expressions use (`#name` stands for `name`):
    several of them (`action`, `attempts`, ...) are DynamoDB reserved words."""
    return {name: name[1:] for text in expressions for name in re.findall(r"#\w+", text)}
