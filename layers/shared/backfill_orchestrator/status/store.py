"""The status table: one DynamoDB item per backfill id, changed only by conditional writes,
so that duplicate events, concurrent invocations and late DAG callbacks cannot make a
backfill go backwards or be processed twice.

    store = StatusStore(table_name="backfill-status", dynamodb_client=boto3.client("dynamodb"))
    store.transition("daily-fix-1a2b3c4d", BackfillState.RUNNING, detail="wave 1 of 3")
    record = store.get("daily-fix-1a2b3c4d")

Table: partition key `backfill_id` (string), nothing else required. Besides the records it holds
the chunks of their older history (`status/history.py`) and the items that remember uploads
and control actions (`status/actions.py`), under keys no backfill id can take (`<id>#...`).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, cast

from botocore.exceptions import BotoCoreError, ClientError

from backfill_orchestrator._compat import UTC
from backfill_orchestrator.dynamo import attribute, condition_failed, item_from_plain, plain_from_item
from backfill_orchestrator.errors import PolicyRefusal, ServiceError
from backfill_orchestrator.status.history import (
    HISTORY_CHUNK,
    SEPARATOR,
    chunk_keys,
    chunks_due,
    move_items,
)
from backfill_orchestrator.status.limits import bounded
from backfill_orchestrator.status.model import ALLOWED_FROM, BackfillState, StatusRecord

log = logging.getLogger(__name__)

# Attributes a caller may set along with a transition (the rest are managed here).
SETTABLE = frozenset(
    {
        "name",
        "owner",
        "mode",
        "dry_run",
        "source_uri",
        "errors",
        "reason",
        "retryable",
        "config_uri",
        "plan_uri",
        "plan_summary",
        "dag_id",
        "dag_run_id",
        "dag_run_url",
        "pagerduty_open",
        "tasks_total",
        "progress",
        "run_attempt",
        "submitted_by",
        "approval_requested_at",
        "approvers",
        "root_jobs",
        "approval_reasons",
        "approval",
        "publish",
    }
)
STATES_ROUNDS = 8  # BatchGetItem rounds for keys DynamoDB leaves unprocessed (throttling)
# How long an item remembering an upload (or a control action, status/actions.py) is kept: an
# upload's event is redelivered at most 15 days after it (Lambda's 6 hours, EventBridge's 24,
# then the on-failure queue's 14 days), so a redelivery always finds it. DynamoDB's time to
# live deletes items only after this (`expires_at`, template.yaml), never before.
REMEMBERED_FOR = timedelta(days=30)
# A history move whose conditions failed (another writer moved those entries) or that met a
# concurrent write of the record: nothing was moved; the next write moves what is still due.
MOVE_LOST = ("TransactionCanceledException", "TransactionConflictException")
# Progress counters, changed only by atomic ADD (`progress_item`, `add_progress`).
PROGRESS_COUNTERS = ("tasks_done", "tasks_failed", "tasks_empty", "messages_sent", "messages_failed")
# A fresh token in every write of a record, whichever attributes it changes (`version` counts
# transitions only): a record whose `revision` is the one a writer wrote is as it left it.
REVISION = "revision"


class StatusStoreError(ServiceError, RuntimeError):
    """DynamoDB failed (throttled past botocore's retries, unreachable, no permission)."""


class StatusItemTooLargeError(PolicyRefusal, ValueError):
    """DynamoDB refused the write as over its 400 KB item limit: the same write can never
    succeed, so it is a refusal (no retry, no page), not an outage."""

    location = "<root>"

    def __init__(self, backfill_id: str, doing: str):
        self.backfill_id = backfill_id
        super().__init__(
            f"the status record of {backfill_id} would exceed DynamoDB's 400 KB item limit ({doing}); "
            "split the backfill into smaller configs"
        )


class RecordExistsError(ServiceError):
    """`create` found a record for this id already; `existing` is that record. Callers handle
    it; one that escapes is retried like any conflict (the next delivery reads the record)."""

    def __init__(self, existing: StatusRecord):
        self.existing = existing
        super().__init__(f"backfill {existing.backfill_id} already exists ({existing.state})")


class RecordNotFoundError(ServiceError, LookupError):
    """No record for this backfill id (a transition on a record the table no longer has)."""


class TransitionRejectedError(ServiceError):
    """The record is not in a state the requested transition may follow (or was changed
    concurrently); `current` is the record as it is now. A conflict, retried when it escapes."""

    def __init__(self, backfill_id: str, target: BackfillState, current: StatusRecord | None):
        self.backfill_id = backfill_id
        self.target = target
        self.current = current
        where = current.state if current else "no record"
        super().__init__(f"backfill {backfill_id}: cannot go to {target} from {where}")


# Placeholders for the attributes this module manages itself (some are reserved words).
_MANAGED_NAMES = {
    f"#{name}": name
    for name in (
        "state",
        "version",
        "updated_at",
        "history",
        "retryable",
        "lease_until",
        "lease_holder",
        "attempts",
        REVISION,
    )
}


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _revision() -> str:
    """64 random bits: unique per write, nothing to keep secret. `random` (reseeded in a forked
    child) rather than os.urandom, whose system call gives the GIL away mid-request."""
    return f"{random.getrandbits(64):016x}"


@dataclass(frozen=True)
class _Write:
    """One conditional state write (`StatusStore._update`): the target, the condition on the
    record as it is (`#state`, `#version`, ... placeholders; `values` binds its values), and
    what the write sets besides the state, the version and the history."""

    target: BackfillState
    condition: str
    values: dict[str, Any]
    detail: str | None
    attributes: Mapping[str, Any] | None = None
    by: str | None = None
    extra_set: list[str] = field(default_factory=list)
    extra_values: dict[str, Any] = field(default_factory=dict)


def record_from_item(item: Mapping[str, Any]) -> StatusRecord:
    """A status record from its item (not from a chunk or a remembered upload: `is_record`)."""
    data = plain_from_item(dict(item))
    known = {name: data[name] for name in StatusRecord.__dataclass_fields__ if name in data}
    known["state"] = BackfillState(known["state"])
    for key in ("errors", "history", "approvers", "root_jobs", "approval_reasons"):
        known[key] = known.get(key) or []
    known["uploads"] = frozenset(known.get("uploads") or ())
    known["controls"] = frozenset(known.get("controls") or ())
    return StatusRecord(**known)


def is_record(item: Mapping[str, Any] | None) -> bool:
    """A backfill's record, not one of the other items the status table holds."""
    return item is not None and "state" in item and SEPARATOR not in item["backfill_id"]["S"]


class StatusStore:
    """Conditional reads and writes of status records. Every write bumps `version` and
    appends to `history` ({state, at, detail})."""

    def __init__(
        self,
        *,
        table_name: str,
        dynamodb_client: Any,
        clock: Callable[[], datetime] = _utc_now,
    ):
        self._table = table_name
        self._client = dynamodb_client
        self._clock = clock
        # The record this store wrote last, as written (id, version, item): `transition(held=...)`
        # replaces it whole while it is unchanged. One item: a writer holds one record at a time.
        self._written: tuple[str, int, dict[str, Any]] | None = None

    @property
    def table_name(self) -> str:
        return self._table

    @property
    def client(self) -> Any:
        """The DynamoDB client (the action ledger, status/actions.py, writes the same table)."""
        return self._client

    def now(self) -> datetime:
        return self._clock()

    # -- reads -------------------------------------------------------------------------
    def get(self, backfill_id: str, *, full_history: bool = False) -> StatusRecord | None:
        """The record (strongly consistent read), or None. Its `history` holds the latest entries;
        with `full_history`, every entry from the first (the chunks moved out of the record are
        read too: one BatchGetItem per 100 chunks, only when there are any). The CLI's and the
        client's status read it so; what polls (`watch`) reads the record alone."""
        try:
            response = self._client.get_item(
                TableName=self._table, Key=self._key(backfill_id), ConsistentRead=True
            )
        except (ClientError, BotoCoreError) as error:
            raise StatusStoreError(f"reading status of {backfill_id} from {self._table}: {error}") from error
        item = response.get("Item")
        if not is_record(item):
            return None
        record = record_from_item(item)
        if full_history and record.history_archived:
            record = replace(record, history=[*self._archived(record), *record.history])
        return record

    def _archived(self, record: StatusRecord) -> list[dict[str, Any]]:
        """The entries moved out of the record, oldest first (chunks never change once written)."""
        keys = chunk_keys(record.backfill_id, record.history_archived)
        chunks = {
            item["backfill_id"]["S"]: plain_from_item(item).get("entries") or []
            for item in self._batch_get(keys, doing=f"reading the history of {record.backfill_id}")
        }
        missing = [key for key in keys if key not in chunks]
        if missing:
            raise StatusStoreError(
                f"the history of {record.backfill_id} is incomplete: {len(missing)} chunks missing ({missing[0]}, ...)"
            )
        return [entry for key in keys for entry in chunks[key]]

    def states(
        self, backfill_ids: Collection[str], *, sleep: Callable[[float], None] = time.sleep
    ) -> dict[str, BackfillState]:
        """The state of each backfill that has a record (consistent reads of the state alone:
        BatchGetItem, 100 keys a request, keys DynamoDB left unprocessed asked again with
        backoff, at most STATES_ROUNDS times). One round trip where `get` per id costs one each."""
        wanted = sorted(set(backfill_ids))
        items = self._batch_get(
            wanted,
            doing=f"reading the states of {len(wanted)} backfills",
            projection=("backfill_id", "state"),
            sleep=sleep,
        )
        return {item["backfill_id"]["S"]: BackfillState(item["state"]["S"]) for item in items}

    def _batch_get(
        self,
        keys: list[str],
        *,
        doing: str,
        projection: tuple[str, ...] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> list[dict[str, Any]]:
        """Consistent BatchGetItem of these keys, 100 a request, unprocessed keys asked again
        with backoff (at most STATES_ROUNDS times); the items found."""
        found: list[dict[str, Any]] = []
        for start in range(0, len(keys), 100):
            pending: list[dict[str, Any]] = [self._key(key) for key in keys[start : start + 100]]
            for round_ in range(STATES_ROUNDS):
                request: dict[str, Any] = {"Keys": pending, "ConsistentRead": True}
                if projection:
                    names = {f"#p{i}": name for i, name in enumerate(projection)}
                    request["ProjectionExpression"] = ", ".join(names)
                    request["ExpressionAttributeNames"] = names
                try:
                    response = self._client.batch_get_item(RequestItems={self._table: request})
                except (ClientError, BotoCoreError) as error:
                    raise StatusStoreError(f"{doing} from {self._table}: {error}") from error
                found += response.get("Responses", {}).get(self._table, [])
                pending = response.get("UnprocessedKeys", {}).get(self._table, {}).get("Keys", [])
                if not pending:
                    break
                sleep(min(0.05 * 2**round_, 1.0))
            else:
                raise StatusStoreError(
                    f"{doing} from {self._table}: {len(pending)} keys still unprocessed after {STATES_ROUNDS} rounds"
                )
        return found

    # -- writes ------------------------------------------------------------------------
    def create(
        self,
        backfill_id: str,
        *,
        state: BackfillState = BackfillState.RECEIVED,
        upload_id: str | None = None,
        lease_seconds: int = 0,
        lease_holder: str | None = None,
        detail: str | None = None,
        attributes: Mapping[str, Any] | None = None,
    ) -> StatusRecord:
        """Create the record if none exists; raises RecordExistsError(existing) otherwise.
        `lease_holder` is the attempt's Lambda request id (see `reclaim`)."""
        now = self._clock()
        attrs = self._checked(attributes)
        item: dict[str, Any] = {
            **attrs,
            "backfill_id": backfill_id,
            "state": str(state),
            "version": 1,
            "attempts": 1,
            "created_at": now.isoformat(),
            "updated_at": now.isoformat(),
            "list_month": now.isoformat()[:7],  # the by_month listing index (status/listing.py)
            "lease_until": int(now.timestamp()) + lease_seconds,
            "lease_holder": lease_holder,
            "history": [self._history_entry(state, now, detail, by=attrs.get("submitted_by"))],
            REVISION: _revision(),
        }
        if upload_id:
            item["uploads"] = {upload_id}
        typed = item_from_plain(item)
        try:
            self._client.put_item(
                TableName=self._table,
                Item=typed,
                ConditionExpression="attribute_not_exists(backfill_id)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except (ClientError, BotoCoreError) as error:
            if condition_failed(error):
                existing = error.response.get("Item") or self._get_item_or_fail(backfill_id)
                raise RecordExistsError(record_from_item(cast(Mapping[str, Any], existing))) from None
            if self._is_too_large(error):
                raise StatusItemTooLargeError(backfill_id, "creating it") from None
            raise StatusStoreError(f"creating status of {backfill_id}: {error}") from error
        return self._hold(typed)

    def transition(
        self,
        backfill_id: str,
        target: BackfillState,
        *,
        detail: str | None = None,
        attributes: Mapping[str, Any] | None = None,
        expected_version: int | None = None,
        by: str | None = None,
        only_from: Collection[BackfillState] | None = None,
        slack_thread: tuple[str, str] | None = None,
        held: StatusRecord | None = None,
    ) -> StatusRecord:
        """Move to `target` if the current state allows it (ALLOWED_FROM, narrowed to
        `only_from` when given) and, when given, the version still is `expected_version`.
        Raises TransitionRejectedError otherwise. `by`: who made it happen (a control
        document's principal), kept in the history entry. `slack_thread` (channel, ts): the
        backfill's Slack thread, stored in the same write unless one is stored already
        (the returned record says which one stands).

        `held`: the record as this store last wrote it, from a writer that holds it (a
        trigger attempt's lease). While the stored item is still that one (its `revision`),
        the write replaces it whole with the same result (`_replace_held`): a PutItem, which
        DynamoDB evaluates without an update expression. Otherwise, as without it."""
        target = BackfillState(target)
        allowed = sorted(
            ALLOWED_FROM.get(target, frozenset())
            & set(ALLOWED_FROM.get(target, ()) if only_from is None else only_from)
        )
        if not allowed:
            raise ValueError(
                f"{target} is not a target of transition() from {sorted(only_from or ())} (see StatusStore.reclaim)"
            )
        names = {f":from{i}": {"S": str(state)} for i, state in enumerate(allowed)}
        condition = f"#state IN ({', '.join(names)})"
        values: dict[str, Any] = dict(names)
        if expected_version is not None:
            condition += " AND #version = :expected"
            values[":expected"] = {"N": str(expected_version)}
        if target is not BackfillState.FAILED:
            # Only a trigger's own FAILED may be taken over by a retry; any later state ends that.
            attributes = {"retryable": False, **(attributes or {})}
        thread_set, thread_values = _thread_clauses(slack_thread)
        write = _Write(target, condition, values, detail, attributes, by, thread_set, thread_values)
        if held is not None:
            replaced = self._replace_held(held, write, allowed, expected_version, slack_thread)
            if replaced is not None:
                return replaced
        return self._update(backfill_id, write)

    def reclaim(
        self,
        backfill_id: str,
        *,
        lease_seconds: int,
        detail: str,
        holder: str | None = None,
        current: StatusRecord | None = None,
        reopen: bool = False,
    ) -> StatusRecord | None:
        """Take the record over for another processing attempt, when that is safe; None when not.

        - REJECTED, with `reopen` (a new upload of the identical config): back to RECEIVED,
          evaluated again.
        - FAILED with `retryable` (the earlier attempt recorded its failure): back to RECEIVED.
        - RECEIVED or PLANNED whose attempt cannot still be running: its lease ran out, or it
          is held by `holder` itself. Lambda retries an async event with the same request id,
          and only after the previous attempt ended, so a lease held by our own request id
          belongs to a dead attempt. The state is kept (a PLANNED record keeps its plan, and
          the DAG's own transitions from PLANNED stay valid while we take over).

        `current` is the record as last read (read here when not given); the write is
        conditional on its state, so a concurrent change makes this return None."""
        now = self._clock()
        record = current or self.get(backfill_id)
        if record is None:
            return None
        values: dict[str, Any] = {
            ":lease": {"N": str(int(now.timestamp()) + lease_seconds)},
            ":one": {"N": "1"},
            ":seen": {"S": str(record.state)},
        }
        if record.state is BackfillState.FAILED:
            target = BackfillState.RECEIVED
            condition = "#state = :seen AND #retryable = :true"
            values[":true"] = {"BOOL": True}
        elif record.state is BackfillState.REJECTED and reopen:
            # The identical config uploaded again after a rejection: its cause may be fixed.
            target = BackfillState.RECEIVED
            condition = "#state = :seen"
        elif record.state in (BackfillState.RECEIVED, BackfillState.PLANNED):
            target = record.state
            condition = "#state = :seen AND (#lease_until < :now"
            values[":now"] = {"N": str(int(now.timestamp()))}
            if holder:
                condition += " OR #lease_holder = :holder"
                values[":holder"] = {"S": holder}
            condition += ")"
        else:
            return None
        extra = ["#lease_until = :lease", "#attempts = #attempts + :one"]
        if holder:
            extra.append("#lease_holder = :new_holder")
            values[":new_holder"] = {"S": holder}
        taken_over = {"reason": None, "retryable": False}
        try:
            return self._update(
                backfill_id, _Write(target, condition, values, detail, taken_over, extra_set=extra)
            )
        except TransitionRejectedError:
            return None

    def add_upload(self, backfill_id: str, upload_id: str) -> bool:
        """Remember another upload of the same config (the record's `uploads` holds its first);
        False when it is remembered already (the same S3 event delivered again). Each is an
        item of its own (`<id>#upload#<upload id>`, kept REMEMBERED_FOR), so the record does
        not grow with them however many there are."""
        now = self._clock()
        item = {
            "backfill_id": {"S": f"{backfill_id}{SEPARATOR}upload{SEPARATOR}{upload_id}"},
            "upload_of": {"S": backfill_id},
            "seen_at": {"S": now.isoformat()},
            "expires_at": {"N": str(int((now + REMEMBERED_FOR).timestamp()))},
        }
        try:
            self._client.put_item(
                TableName=self._table, Item=item, ConditionExpression="attribute_not_exists(backfill_id)"
            )
        except (ClientError, BotoCoreError) as error:
            if condition_failed(error):
                return False
            raise StatusStoreError(f"recording an upload of {backfill_id}: {error}") from error
        return True

    def set_slack_thread(self, backfill_id: str, *, channel: str, ts: str) -> str:
        """Store the Slack thread of this backfill unless one is stored already; returns the
        thread ts every component should reply to."""
        self._written = None
        try:
            self._client.update_item(
                TableName=self._table,
                Key=self._key(backfill_id),
                UpdateExpression="SET slack_channel = :channel, slack_thread_ts = :ts, #revision = :revision",
                ConditionExpression="attribute_exists(backfill_id) AND attribute_not_exists(slack_thread_ts)",
                ExpressionAttributeNames={"#revision": REVISION},
                ExpressionAttributeValues={
                    ":channel": {"S": channel},
                    ":ts": {"S": ts},
                    ":revision": {"S": _revision()},
                },
            )
        except (ClientError, BotoCoreError) as error:
            if condition_failed(error):
                current = self.get(backfill_id)
                return current.slack_thread_ts if current and current.slack_thread_ts else ts
            raise StatusStoreError(f"storing the Slack thread of {backfill_id}: {error}") from error
        return ts

    def annotate(
        self, backfill_id: str, attributes: Mapping[str, Any], *, slack_thread: tuple[str, str] | None = None
    ) -> None:
        """Set attributes without changing state (e.g. `pagerduty_open`); `slack_thread` as in
        `transition`."""
        attrs = self._checked(attributes)
        thread_set, thread_values = _thread_clauses(slack_thread)
        if not attrs and not thread_set:
            return
        self._written = None
        sets, names, values = self._set_clauses(attrs)
        sets += [*thread_set, "#revision = :revision"]
        names["#revision"] = REVISION
        values.update(thread_values)
        values[":revision"] = {"S": _revision()}
        try:
            self._client.update_item(
                TableName=self._table,
                Key=self._key(backfill_id),
                UpdateExpression="SET " + ", ".join(sets),
                ConditionExpression="attribute_exists(backfill_id)",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        except (ClientError, BotoCoreError) as error:
            if condition_failed(error):
                raise RecordNotFoundError(backfill_id) from None
            raise StatusStoreError(f"updating status of {backfill_id}: {error}") from error

    def progress_item(self, backfill_id: str, **deltas: int) -> dict[str, Any]:
        """A TransactWriteItems `Update` adding `deltas` to the progress counters
        (PROGRESS_COUNTERS) with ADD, for callers that must count in the same transaction as
        their own write (the replay ledger finishing a task). Requires the record to exist."""
        unknown = set(deltas) - set(PROGRESS_COUNTERS)
        if unknown:
            raise ValueError(f"not a progress counter: {', '.join(sorted(unknown))}")
        self._written = None
        adds = {name: value for name, value in deltas.items() if value}
        names = {f"#c{i}": name for i, name in enumerate(adds)}
        values: dict[str, Any] = {f":c{i}": {"N": str(value)} for i, value in enumerate(adds.values())}
        update = "SET #updated_at = :now_iso, #revision = :revision"
        if adds:
            update += " ADD " + ", ".join(f"#c{i} :c{i}" for i in range(len(adds)))
        return {
            "Update": {
                "TableName": self._table,
                "Key": self._key(backfill_id),
                "UpdateExpression": update,
                "ConditionExpression": "attribute_exists(backfill_id)",
                "ExpressionAttributeNames": {**names, "#updated_at": "updated_at", "#revision": REVISION},
                "ExpressionAttributeValues": {
                    **values,
                    ":now_iso": {"S": self._clock().isoformat()},
                    ":revision": {"S": _revision()},
                },
            }
        }

    def add_progress(self, backfill_id: str, **deltas: int) -> StatusRecord:
        """Add to the progress counters atomically (UpdateItem ADD); returns the new record."""
        update = self.progress_item(backfill_id, **deltas)["Update"]
        try:
            response = self._client.update_item(**update, ReturnValues="ALL_NEW")
        except (ClientError, BotoCoreError) as error:
            if condition_failed(error):
                raise RecordNotFoundError(backfill_id) from None
            raise StatusStoreError(f"counting progress of {backfill_id}: {error}") from error
        return record_from_item(response["Attributes"])

    # -- internals ---------------------------------------------------------------------
    def _update(self, backfill_id: str, write: _Write) -> StatusRecord:
        now, target = self._clock(), write.target
        attrs = self._checked(write.attributes)
        sets, attr_names, attr_values = self._set_clauses(attrs)
        sets += [
            "#state = :target",
            "#updated_at = :now_iso",
            "#version = #version + :inc",
            "#history = list_append(if_not_exists(#history, :empty), :entry)",
            "#revision = :revision",
            *write.extra_set,
        ]
        values = {
            **write.values,
            **attr_values,
            **write.extra_values,
            ":target": {"S": str(target)},
            ":now_iso": {"S": now.isoformat()},
            ":inc": {"N": "1"},
            ":empty": {"L": []},
            ":entry": {"L": [attribute(self._history_entry(target, now, write.detail, by=write.by))]},
            ":revision": {"S": _revision()},
        }
        update = "SET " + ", ".join(sets)
        condition = f"attribute_exists(backfill_id) AND ({write.condition})"
        # DynamoDB refuses placeholders that the expressions do not use.
        used = {k: v for k, v in _MANAGED_NAMES.items() if k in update or k in condition}
        request = {
            "TableName": self._table,
            "Key": self._key(backfill_id),
            "UpdateExpression": update,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": {**attr_names, **used},
            "ExpressionAttributeValues": values,
            "ReturnValues": "ALL_NEW",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        try:
            response = self._send_update(backfill_id, request, target=target)
        except StatusItemTooLargeError:
            # A record written before its history was bounded, or one at the edge: move its
            # older history out and write again, once.
            if not self._move_history_now(backfill_id):
                raise StatusItemTooLargeError(backfill_id, f"moving it to {target}") from None
            response = self._send_update(backfill_id, request, target=target)
        return self._bounded(response["Attributes"])

    def _hold(self, item: dict[str, Any]) -> StatusRecord:
        """The record of an item this store has just written, kept for `transition(held=...)`."""
        record = record_from_item(item)
        self._written = (record.backfill_id, record.version, item)
        return record

    def _replace_held(
        self,
        held: StatusRecord,
        write: _Write,
        allowed: Collection[BackfillState],
        expected_version: int | None,
        slack_thread: tuple[str, str] | None,
    ) -> StatusRecord | None:
        """`write` (a transition's) as one PutItem of the whole item that `_update` would
        leave, built from the item this store wrote last, conditioned on that item's
        `revision` (every writer of a record sets a fresh one) and its moved history
        (`history_archived`): it applies only to the record exactly as this store left it.
        None when the held record is not that item, when its state does not allow the
        transition, or when the item changed since (or the put is too large): the caller
        sends the update, which decides against the record as it is."""
        written, self._written = self._written, None
        if written is None or written[:2] != (held.backfill_id, held.version):
            return None
        _, version, item = written
        if REVISION not in item or BackfillState(item["state"]["S"]) not in allowed:
            return None
        if expected_version is not None and expected_version != version:
            return None
        now = self._clock()
        entry = self._history_entry(write.target, now, write.detail, by=write.by)
        new = {name: attribute(value) for name, value in self._checked(write.attributes).items()}
        new = {
            **item,
            **new,
            "state": {"S": str(write.target)},
            "updated_at": {"S": now.isoformat()},
            "version": {"N": str(version + 1)},
            "history": {"L": [*item.get("history", {}).get("L", []), attribute(entry)]},
            REVISION: {"S": _revision()},
        }
        if slack_thread is not None:  # the first thread stored stands, as `_thread_clauses` has it
            new.setdefault("slack_channel", {"S": slack_thread[0]})
            new.setdefault("slack_thread_ts", {"S": slack_thread[1]})
        archived = item.get("history_archived")
        values = {":revision": item[REVISION], **({":archived": archived} if archived else {})}
        try:
            self._client.put_item(
                TableName=self._table,
                Item=new,
                ConditionExpression="#revision = :revision AND "
                + ("#archived = :archived" if archived else "attribute_not_exists(#archived)"),
                ExpressionAttributeNames={"#revision": REVISION, "#archived": "history_archived"},
                ExpressionAttributeValues=values,
            )
        except (ClientError, BotoCoreError) as error:
            if condition_failed(error) or self._is_too_large(error):
                return None
            raise StatusStoreError(f"moving {held.backfill_id} to {write.target}: {error}") from error
        return self._bounded(new)

    def _send_update(
        self, backfill_id: str, request: dict[str, Any], *, target: BackfillState
    ) -> dict[str, Any]:
        """Send the transition's write; one whose condition fails is rejected with the record
        as it is (TransitionRejectedError)."""
        try:
            return cast(dict[str, Any], self._client.update_item(**request))
        except (ClientError, BotoCoreError) as error:
            if condition_failed(error):
                old = error.response.get("Item")
                if old is None and self.get(backfill_id) is None:
                    raise RecordNotFoundError(backfill_id) from None
                raise TransitionRejectedError(
                    backfill_id,
                    target,
                    record_from_item(cast(Mapping[str, Any], old)) if old else self.get(backfill_id),
                ) from None
            if self._is_too_large(error):
                raise StatusItemTooLargeError(backfill_id, f"moving it to {target}") from None
            raise StatusStoreError(f"moving {backfill_id} to {target}: {error}") from error

    # -- the history's bound (status/history.py) -------------------------------------------
    def _bounded(self, item: dict[str, Any]) -> StatusRecord:
        """The record just written, with its older history moved out when it has grown enough
        (one transaction, every HISTORY_CHUNK transitions). A move that fails leaves the entries
        where they are, for the next write to move: the transition itself has happened."""
        chunks = chunks_due(len(item.get("history", {}).get("L", [])))
        if not chunks:
            return self._hold(item)
        self._written = None  # the move changes the item
        record = record_from_item(item)
        raw = item["history"]["L"]
        try:
            moved = self._move_history(record.backfill_id, raw, record.history_archived, chunks)
        except StatusStoreError as error:
            log.warning("older history of %s not moved out yet: %s", record.backfill_id, str(error)[:300])
            return record
        if not moved:
            return record
        count = chunks * HISTORY_CHUNK
        return replace(
            record, history=record.history[count:], history_archived=record.history_archived + count
        )

    def _move_history(self, backfill_id: str, raw: list[Any], archived: int, chunks: int) -> bool:
        """Move the first `chunks` chunks of the in-item history (`raw`, as stored) out; False
        when another writer moved them first (the transaction's conditions failed)."""
        try:
            self._client.transact_write_items(
                TransactItems=move_items(self._table, backfill_id, raw, archived, chunks)
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in MOVE_LOST:
                return False
            raise StatusStoreError(f"moving the older history of {backfill_id}: {error}") from error
        except BotoCoreError as error:
            raise StatusStoreError(f"moving the older history of {backfill_id}: {error}") from error
        return True

    def _move_history_now(self, backfill_id: str) -> bool:
        """Before writing again a record DynamoDB refused as too large: move out every chunk
        its history allows. True when anything was moved."""
        moved_any = False
        while True:
            try:
                item = self._client.get_item(
                    TableName=self._table, Key=self._key(backfill_id), ConsistentRead=True
                ).get("Item")
            except (ClientError, BotoCoreError) as error:
                raise StatusStoreError(
                    f"reading status of {backfill_id} from {self._table}: {error}"
                ) from error
            if not is_record(item):
                return moved_any
            assert item is not None
            record = record_from_item(item)
            chunks = chunks_due(len(record.history))
            if not chunks or not self._move_history(
                backfill_id, item["history"]["L"], record.history_archived, chunks
            ):
                return moved_any
            moved_any = True

    @staticmethod
    def _checked(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
        attrs = dict(attributes or {})
        unknown = set(attrs) - SETTABLE
        if unknown:
            raise ValueError(f"not settable on a status record: {', '.join(sorted(unknown))}")
        return bounded(attrs)

    @staticmethod
    def _set_clauses(attrs: Mapping[str, Any]) -> tuple[list[str], dict[str, str], dict[str, Any]]:
        # Every name goes through a placeholder: `name`, `owner` and `mode` are reserved words.
        sets: list[str] = []
        names: dict[str, str] = {}
        values: dict[str, Any] = {}
        for index, (name, value) in enumerate(sorted(attrs.items())):
            sets.append(f"#a{index} = :a{index}")
            names[f"#a{index}"] = name
            values[f":a{index}"] = attribute(value)
        return sets, names, values

    @staticmethod
    def _history_entry(
        state: BackfillState, now: datetime, detail: str | None, *, by: str | None = None
    ) -> dict[str, Any]:
        entry: dict[str, Any] = {"state": str(state), "at": now.isoformat()}
        if detail:
            entry["detail"] = detail[:1000]
        if by:
            entry["by"] = by[:200]
        return entry

    @staticmethod
    def _key(backfill_id: str) -> dict[str, Any]:
        return {"backfill_id": {"S": backfill_id}}

    @staticmethod
    def _is_too_large(error: ClientError | BotoCoreError) -> bool:
        if not isinstance(error, ClientError):
            return False
        details = error.response.get("Error", {})
        return (
            details.get("Code") == "ValidationException" and "size" in str(details.get("Message", "")).lower()
        )

    def _get_item_or_fail(self, backfill_id: str) -> dict[str, Any]:
        response = self._client.get_item(
            TableName=self._table, Key=self._key(backfill_id), ConsistentRead=True
        )
        return response["Item"]


def _thread_clauses(slack_thread: tuple[str, str] | None) -> tuple[list[str], dict[str, Any]]:
    """SET clauses (and their values) storing a Slack thread (channel, ts) unless the record
    has one: the first thread stored is the one every component replies to
    (`set_slack_thread`'s rule)."""
    if slack_thread is None:
        return [], {}
    channel, ts = slack_thread
    return [
        "slack_channel = if_not_exists(slack_channel, :thread_channel_new)",
        "slack_thread_ts = if_not_exists(slack_thread_ts, :thread_ts_new)",
    ], {":thread_channel_new": {"S": channel}, ":thread_ts_new": {"S": ts}}
