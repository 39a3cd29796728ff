"""Overlap protection: no two backfills rewrite the same (step, date) at the same time.

The claims table (partition key `pk`, sort key `sk`, both strings) holds three kinds of item:

- `pk=lock, sk=admission`: a short lease that serialises admissions (a crashed holder's lease
  runs out after `lock_seconds`);
- `pk=active, sk=<backfill id>`: an admitted backfill and the URI of its claim set;
- `pk=queued, sk=<submitted at>#<backfill id>`: a backfill waiting for the ones it overlaps,
  in submission order.

Admission reads the (few) active and queued backfills, compares claim sets in memory, and
writes one item: the cost grows with the number of backfills in flight, not with the size of
their plans. A claim cannot outlive its backfill: every admission drops the items of
backfills whose status is no longer live (terminal, or gone), and `release` drops them
eagerly when a backfill ends. A queued backfill overlapping an earlier queued one stays
behind it, so waiting backfills start in submission order."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Literal

from botocore.exceptions import BotoCoreError, ClientError
from cachetools import LRUCache

from backfill_orchestrator.claims.model import ClaimSet
from backfill_orchestrator.dates import compact_dates
from backfill_orchestrator.dynamo import attribute, plain_from_item
from backfill_orchestrator.errors import ServiceError

log = logging.getLogger(__name__)
OnOverlap = Literal["wait", "refuse"]
LOCK_KEY = {"pk": {"S": "lock"}, "sk": {"S": "admission"}}


class ClaimsUnavailableError(ServiceError, RuntimeError):
    """The claims table could not be read or written, or the admission lock stayed taken."""


@dataclass(frozen=True)
class Admitted:
    backfill_id: str


@dataclass(frozen=True)
class Queued:
    backfill_id: str
    blocking: list[str]  # the backfills it waits for, oldest first
    overlap: dict[str, frozenset[date]] = field(default_factory=dict)


@dataclass(frozen=True)
class Refused:
    backfill_id: str
    blocking: str
    overlap: dict[str, frozenset[date]] = field(default_factory=dict)

    def describe(self, limit: int = 5) -> str:
        shown = [f"{step} {compact_dates(days)}" for step, days in sorted(self.overlap.items())[:limit]]
        more = f" and {len(self.overlap) - limit} more steps" if len(self.overlap) > limit else ""
        return f"overlaps active backfill {self.blocking} on {'; '.join(shown)}{more}"


Admission = Admitted | Queued | Refused


@dataclass(frozen=True)
class _Entry:
    kind: Literal["active", "queued"]
    backfill_id: str
    sort_key: str
    claims_uri: str


class ClaimRegistry:
    def __init__(
        self,
        *,
        dynamodb_client: Any,
        table_name: str,
        load_claims: Callable[[str], ClaimSet],
        live_holders: Callable[[list[str]], set[str]],
        lock_seconds: int = 30,
        lock_wait_seconds: float | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ):
        """`load_claims(uri)` reads a stored claim set; `live_holders(ids)` says which of those
        backfills may still write (their status is not terminal), all in one read. The lock is
        waited for a little longer than its lease, so a crashed holder never makes admission fail."""
        self._ddb = dynamodb_client
        self._table = table_name
        self._load = load_claims
        self._live_holders = live_holders
        self._lock_seconds = lock_seconds
        self._lock_wait = lock_seconds + 5 if lock_wait_seconds is None else lock_wait_seconds
        self._clock = clock
        self._sleep = sleep
        self._cache: dict[str, ClaimSet] = {}

    # -- public ----------------------------------------------------------------------------
    def admit(
        self, *, backfill_id: str, claims: ClaimSet, claims_uri: str, submitted_at: str, on_overlap: OnOverlap
    ) -> Admission:
        """Admit the backfill if it overlaps no active one (nor an earlier queued one); else
        queue it (`wait`) or refuse it (`refuse`). Idempotent: admitting an admitted backfill
        answers Admitted again."""
        with self._admission_lock():
            active, queued = self._live_entries()
            if any(entry.backfill_id == backfill_id for entry in active):
                return Admitted(backfill_id)
            mine = next((entry for entry in queued if entry.backfill_id == backfill_id), None)
            my_key = mine.sort_key if mine else f"{submitted_at}#{backfill_id}"
            ahead = [
                entry for entry in queued if entry.sort_key < my_key and entry.backfill_id != backfill_id
            ]
            blocking: list[str] = []
            overlap: dict[str, frozenset[date]] = {}
            for entry in [*active, *ahead]:
                shared = claims.overlap(self._claims(entry.claims_uri))
                if shared:
                    blocking.append(entry.backfill_id)
                    for step_id, days in shared.items():
                        overlap[step_id] = overlap.get(step_id, frozenset()) | days
            if not blocking:
                self._put("active", backfill_id, claims_uri)
                if mine is not None:
                    self._delete("queued", mine.sort_key)
                self._cache[claims_uri] = claims
                return Admitted(backfill_id)
            if on_overlap == "refuse":
                return Refused(backfill_id, blocking[0], overlap)
            if mine is None:
                self._put("queued", my_key, claims_uri)
            return Queued(backfill_id, blocking, overlap)

    def release(self, backfill_id: str) -> list[str]:
        """Drop the backfill's claim (and queue place); return the queued backfills that
        could now start, in submission order (the caller starts them)."""
        with self._admission_lock():
            active, queued = self._live_entries()
            for entry in active:
                if entry.backfill_id == backfill_id:
                    self._delete("active", entry.sort_key)
            for entry in queued:
                if entry.backfill_id == backfill_id:
                    self._delete("queued", entry.sort_key)
            return self._ready(
                [e for e in active if e.backfill_id != backfill_id],
                [e for e in queued if e.backfill_id != backfill_id],
            )

    def startable(self) -> list[str]:
        """The periodic sweep: drop the claims of backfills that ended without releasing them
        (a crash), then return the queued backfills that can start now, in submission order
        (the caller starts them)."""
        with self._admission_lock():
            active, queued = self._live_entries()
            return self._ready(active, queued)

    def _ready(self, active: list[_Entry], queued: list[_Entry]) -> list[str]:
        holders = [self._claims(e.claims_uri) for e in active]
        ready: list[str] = []
        waiting: list[ClaimSet] = []
        for entry in queued:
            claims = self._claims(entry.claims_uri)
            if any(claims.overlap(other) for other in [*holders, *waiting]):
                waiting.append(claims)
            else:
                ready.append(entry.backfill_id)
                holders.append(claims)  # it will claim these; later ones queue behind it
        return ready

    def holders(self) -> dict[str, list[str]]:
        """{'active': [...], 'queued': [...]} (queued in submission order), live ones only."""
        active, queued = self._scan_entries()
        alive = self._alive([*active, *queued])
        return {
            "active": [e.backfill_id for e in active if e.backfill_id in alive],
            "queued": [e.backfill_id for e in queued if e.backfill_id in alive],
        }

    # -- entries ---------------------------------------------------------------------------
    def _live_entries(self) -> tuple[list[_Entry], list[_Entry]]:
        """Active and queued entries of live backfills; stale ones are deleted on the way."""
        active, queued = self._scan_entries()
        alive = self._alive([*active, *queued])
        live: tuple[list[_Entry], list[_Entry]] = ([], [])
        for bucket, entries in zip(live, (active, queued), strict=True):
            for entry in entries:
                if entry.backfill_id in alive:
                    bucket.append(entry)
                else:
                    log.info(
                        "dropping the %s claim of %s: the backfill has ended", entry.kind, entry.backfill_id
                    )
                    self._delete(entry.kind, entry.sort_key)
        return live

    def _alive(self, entries: list[_Entry]) -> set[str]:
        ids = sorted({entry.backfill_id for entry in entries})
        return self._live_holders(ids) if ids else set()

    def _scan_entries(self) -> tuple[list[_Entry], list[_Entry]]:
        return self._query("active"), self._query("queued")

    def _query(self, kind: Literal["active", "queued"]) -> list[_Entry]:
        entries: list[_Entry] = []
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": kind}},
            "ConsistentRead": True,
        }
        try:
            while True:
                page = self._ddb.query(**kwargs)
                for item in page.get("Items", []):
                    data = plain_from_item(item)
                    entries.append(_Entry(kind, data["backfill_id"], data["sk"], data["claims_uri"]))
                if "LastEvaluatedKey" not in page:
                    break
                kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        except (ClientError, BotoCoreError) as error:
            raise ClaimsUnavailableError(f"reading {kind} claims from {self._table}: {error}") from error
        return sorted(entries, key=lambda entry: entry.sort_key)

    def _put(self, kind: str, sort_key: str, claims_uri: str) -> None:
        backfill_id = sort_key.rsplit("#", 1)[-1]
        item = {
            "pk": {"S": kind},
            "sk": {"S": sort_key},
            "backfill_id": {"S": backfill_id},
            "claims_uri": {"S": claims_uri},
            "at": attribute(int(self._clock())),
        }
        try:
            self._ddb.put_item(TableName=self._table, Item=item)
        except (ClientError, BotoCoreError) as error:
            raise ClaimsUnavailableError(f"writing the {kind} claim of {backfill_id}: {error}") from error

    def _delete(self, kind: str, sort_key: str) -> None:
        try:
            self._ddb.delete_item(TableName=self._table, Key={"pk": {"S": kind}, "sk": {"S": sort_key}})
        except (ClientError, BotoCoreError) as error:
            raise ClaimsUnavailableError(f"deleting the {kind} claim {sort_key}: {error}") from error

    def _claims(self, uri: str) -> ClaimSet:
        if uri not in self._cache:  # a claim set never changes once written
            self._cache[uri] = self._load(uri)
        return self._cache[uri]

    # -- the admission lock ----------------------------------------------------------------
    def _admission_lock(self) -> _Lock:
        return _Lock(self)


class _Lock:
    """A conditional-put lease on the lock item; released by a conditional delete."""

    def __init__(self, registry: ClaimRegistry):
        self._registry = registry
        self._token = uuid.uuid4().hex

    def __enter__(self) -> None:
        registry = self._registry
        give_up = registry._clock() + registry._lock_wait
        delay = 0.05
        while True:
            now = int(registry._clock())
            try:
                registry._ddb.put_item(
                    TableName=registry._table,
                    Item={
                        **LOCK_KEY,
                        "token": {"S": self._token},
                        "lease_until": attribute(now + registry._lock_seconds),
                    },
                    ConditionExpression="attribute_not_exists(pk) OR lease_until < :now",
                    ExpressionAttributeValues={":now": attribute(now)},
                )
                return
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                    raise ClaimsUnavailableError(f"taking the admission lock: {error}") from error
            except BotoCoreError as error:
                raise ClaimsUnavailableError(f"taking the admission lock: {error}") from error
            if registry._clock() >= give_up:
                raise ClaimsUnavailableError(
                    f"the admission lock of {registry._table} stayed taken for {registry._lock_wait:.0f} s"
                )
            registry._sleep(delay)
            delay = min(delay * 2, 1.0)

    def __exit__(self, *exc: object) -> None:
        registry = self._registry
        try:
            registry._ddb.delete_item(
                TableName=registry._table,
                Key=LOCK_KEY,
                ConditionExpression="#token = :token",
                ExpressionAttributeNames={"#token": "token"},
                ExpressionAttributeValues={":token": {"S": self._token}},
            )
        except ClientError as error:  # lease ran out and another took it: theirs now
            log.warning("admission lock not released: %s", error.response.get("Error", {}).get("Code"))
        except BotoCoreError as error:
            log.warning("admission lock not released (it runs out by itself): %s", error)


def registry_for(
    *, dynamodb_client: Any, table_name: str, status_store: Any, s3_client: Any = None
) -> ClaimRegistry:
    """The registry as the trigger and the DAG use it: claim sets read from their documents,
    a holder live while its status record is in a live state (no record: not live)."""
    from backfill_orchestrator import documents
    from backfill_orchestrator.status.model import LIVE_STATES

    def live_holders(backfill_ids: list[str]) -> set[str]:  # one BatchGetItem, not a GetItem each
        return {
            backfill_id
            for backfill_id, state in status_store.states(backfill_ids).items()
            if state in LIVE_STATES
        }

    def load_claims(uri: str) -> ClaimSet:
        # Kept by the warm container when the URI names an object version (the trigger stores
        # claims that way): what it names never changes. A plain key may be rewritten (a
        # re-planned backfill), so it is read every time.
        with _CLAIM_SETS_LOCK:
            cached = _CLAIM_SETS.get(uri)
        if cached is None:
            cached = ClaimSet.from_json(documents.read_bytes(uri, s3_client=s3_client), source=uri)
            keep_claim_set(uri, cached)
        return cached

    return ClaimRegistry(
        dynamodb_client=dynamodb_client,
        table_name=table_name,
        load_claims=load_claims,
        live_holders=live_holders,
    )


def keep_claim_set(uri: str, claims: ClaimSet) -> None:
    """Keep a claim set this container wrote or read, when its URI names an object version
    (what it names never changes); a plain key may be rewritten, so it is not kept."""
    if "?versionId=" in uri and len(claims) <= MAX_KEPT_CLAIMS:
        with _CLAIM_SETS_LOCK:
            _CLAIM_SETS[uri] = claims


# The claim sets a container has read or written, by versioned URI, bounded by their (step,
# date) pairs rather than their number: one long plan's set can be large.
MAX_KEPT_CLAIMS = 200_000
_CLAIM_SETS: LRUCache[str, ClaimSet] = LRUCache(maxsize=MAX_KEPT_CLAIMS, getsizeof=len)
_CLAIM_SETS_LOCK = threading.Lock()
