"""Overlap protection: no two backfills rewrite the same (step, date) at the same time.

The claims table (partition key `pk`, sort key `sk`, both strings) is an index of claims by
(step, ISO week), with one item per backfill beside it:

- a key item, `pk=key#<step id>, sk=<YYYY-Www>`: every backfill that holds (`active`) or waits
  for (`queued`) days of that step in that week (`entries`, one JSON string: each backfill's
  kind, its place in the queue `<submitted at>#<id>`, its days as a 7-bit mask and when the
  entry was written); `ver`,
  which every write raises; and, while an admission decides, its lease (`lease`,
  `lease_until`);
- a holder item, `pk=holder, sk=<backfill id>`: its kind, place and claim set (URI, digest).

An admission reads its holder item and the key items of the (step, week) pairs its plan
touches (one BatchGetItem). When no entry on those keys holds or waits for any of its days
(the common case, however many backfills share its keys on other days) it has nothing to
decide: it writes its entry on every key at once, each write conditional on the version it
read (a key that changed meanwhile is read again and written again while still nothing
meets its days there), then its holder item, which says it is done (`_admit_unopposed`). Of
two admissions whose days meet on a key, the one that writes that key second sees the
other's entry; one that meets a claim written meanwhile takes its entries back and decides
as below. No lease, no waiting: disjoint days of one key never wait for each other.

Otherwise it leases those keys (each written back as read, with the lease, on the condition
that its version is unchanged; all at once), decides from their entries, then writes its
holder item and its entry on each key (all at once), each entry write handing that key's
lease back. Such admissions wait for each other only when they touch a common key, and
never in a circle (`_lease`: a small plan holds nothing while it waits, a large one waits in
key order); a lease left by a crashed admission runs out after `lease_seconds`. A blocker
whose entries were written moments ago and which has no holder item yet is still being
admitted (or taking them back): the decision hands its leases back and looks again, until
such entries are older than a lease (then they stand as written). The cost of an admission
follows its own keys and the backfills on them (at most 7 active ones per key: active
claims never share a day), not the number of backfills in flight, and it reads no other
backfill's claim set. Single-item writes rather than TransactWriteItems: no item limit per
admission (30 steps over 90 days are 420 keys), and a transaction's cost on the local moto
server grows with the whole table (it copies it).

A backfill that overlaps an active one, or an earlier queued one, waits (QUEUED, its entries
`queued` on every key, so later ones queue behind it: submission order, none starved) or is
refused. A claim cannot outlive its backfill: an admission that finds itself blocked asks
whether the blockers' backfills are still live (one BatchGetItem on the status table) and
drops the entries of those that are not from the keys it writes; `release` drops a
backfill's entries when it ends (without waiting for leases: the version it raises sends a
lease holder that read the entry back to read again), and the periodic sweep (`startable`)
releases every holder whose backfill is no longer live, wherever its entries are."""

from __future__ import annotations

import contextlib
import json
import logging
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any, Literal, TypeVar, cast

from botocore.exceptions import BotoCoreError, ClientError
from cachetools import LRUCache

from backfill_orchestrator.claims.model import ClaimKey, ClaimSet
from backfill_orchestrator.dates import compact_dates
from backfill_orchestrator.dynamo import condition_failed
from backfill_orchestrator.errors import ServiceError

log = logging.getLogger(__name__)
_T = TypeVar("_T")
_A = TypeVar("_A")
OnOverlap = Literal["wait", "refuse"]
Kind = Literal["active", "queued"]
HOLDER_PK = "holder"
KEY_PK_PREFIX = "key#"
MAX_BATCH_KEYS = 100  # BatchGetItem's keys per request
MAX_POLL_SECONDS = 0.05  # a taken key is asked for again at most this long after (it is held briefly)
MAX_PARALLEL = 8  # claim keys written at once by one admission
ALL_OR_NONE_KEYS = 24  # a plan over more keys waits for taken ones in key order (see _lease)
MAX_ENTRIES_PER_KEY = 2_000  # about 120 bytes each: a key item stays far below DynamoDB's 400 KB


class ClaimsUnavailableError(ServiceError, RuntimeError):
    """The claims table could not be read or written, or the keys stayed contended too long."""


@dataclass(frozen=True)
class Admitted:
    backfill_id: str


@dataclass(frozen=True)
class Queued:
    backfill_id: str
    blocking: list[str]  # the backfills it waits for: active ones first, then earlier queued ones
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
class Entry:
    """One backfill's claim on one key."""

    kind: Kind
    order: str  # `<submitted at>#<backfill id>`: queue order
    mask: int
    at: int = 0  # when it was written (epoch seconds): a young entry without a holder item is being admitted


@dataclass(frozen=True)
class KeyItem:
    key: ClaimKey
    version: int  # 0: the item does not exist
    entries: dict[str, Entry]
    lease: str | None = None
    lease_until: int = 0


@dataclass(frozen=True)
class Holder:
    backfill_id: str
    kind: Kind
    order: str
    claims_uri: str
    digest: str


@dataclass
class _Blockers:
    """Who blocks an admission, and on which steps and days."""

    kinds: dict[str, Kind] = field(default_factory=dict)
    orders: dict[str, str] = field(default_factory=dict)
    overlap: dict[str, dict[str, set[date]]] = field(default_factory=dict)  # id -> step -> days
    written: dict[str, int] = field(default_factory=dict)  # id -> its newest blocking entry's `at`

    def add(self, backfill_id: str, entry: Entry, key: ClaimKey, mask: int) -> None:
        self.kinds[backfill_id], self.orders[backfill_id] = entry.kind, entry.order
        self.written[backfill_id] = max(self.written.get(backfill_id, 0), entry.at)
        self.overlap.setdefault(backfill_id, {}).setdefault(key.step_id, set()).update(key.days(mask))

    def ids(self) -> list[str]:
        """Active ones first (by id), then queued ones in queue order."""
        active = sorted(i for i, kind in self.kinds.items() if kind == "active")
        queued = sorted(
            (i for i, kind in self.kinds.items() if kind == "queued"), key=self.orders.__getitem__
        )
        return active + queued

    def union(self, ids: Iterable[str]) -> dict[str, frozenset[date]]:
        steps: dict[str, set[date]] = {}
        for backfill_id in ids:
            for step_id, days in self.overlap[backfill_id].items():
                steps.setdefault(step_id, set()).update(days)
        return {step_id: frozenset(days) for step_id, days in steps.items()}


class _Contended(ServiceError):
    """A key changed under a lease, an earlier admission's claims were dropped, a claim on its
    days appeared while it was writing unopposed, or a blocker is still being admitted: read
    and decide again (caught inside the registry; a service error if it escaped)."""


class ClaimRegistry:
    def __init__(
        self,
        *,
        dynamodb_client: Any,
        table_name: str,
        load_claims: Callable[[str], ClaimSet],
        live_holders: Callable[[list[str]], set[str]],
        lease_seconds: int = 30,
        wait_seconds: float | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ):
        """`load_claims(uri)` reads a stored claim set (a backfill's own, on release; a queued
        one's, to tell whether it can start); `live_holders(ids)` says which of those backfills
        may still write (their status is not terminal), all in one read. A leased key is
        waited for a little longer than a lease, so a crashed lease holder never makes
        admission fail."""
        self._ddb = dynamodb_client
        self._table = table_name
        self._load = load_claims
        self._live_holders = live_holders
        self._lease_seconds = lease_seconds
        self._wait = lease_seconds + 5 if wait_seconds is None else wait_seconds
        self._clock = clock
        self._sleep = sleep

    # -- public ----------------------------------------------------------------------------
    def admit(
        self, *, backfill_id: str, claims: ClaimSet, claims_uri: str, submitted_at: str, on_overlap: OnOverlap
    ) -> Admission:
        """Admit the backfill if it overlaps no active one (nor an earlier queued one); else
        queue it (`wait`) or refuse it (`refuse`). Idempotent: admitting an admitted backfill
        answers Admitted again; a queued one keeps its place."""
        masks = claims.buckets()
        digest = claims.digest()
        keys = list(masks)

        def attempt(token: str) -> Admission:
            items, mine = self._read(keys, holder=backfill_id)
            if mine is None and not any(
                _meets(items[key], mask) or _full(items[key]) for key, mask in masks.items()
            ):
                # Nothing to decide: nobody holds or waits for any of its days (a full key: the
                # leased path says so).
                holder = Holder(backfill_id, "active", f"{submitted_at}#{backfill_id}", claims_uri, digest)
                if self._admit_unopposed(holder, masks, items):
                    return Admitted(backfill_id)
                raise _Contended
            if mine is not None and mine.digest != digest:  # an earlier admission's claims (a retry's)
                self._drop_stale(backfill_id, mine, keep=masks)
                raise _Contended
            if (
                mine is not None
                and mine.kind == "active"
                and _entries_match(backfill_id, "active", masks, items)
            ):
                return Admitted(backfill_id)  # admitted before (a redelivery)
            leased = self._lease(keys, items, token)
            written = False
            try:
                order = mine.order if mine is not None else f"{submitted_at}#{backfill_id}"
                # An admitted backfill whose entries need writing again waits only for active ones.
                blockers = _blockers(
                    backfill_id, order, masks, leased, active_only=mine is not None and mine.kind == "active"
                )
                dead = self._dead(blockers.ids())
                live = [i for i in blockers.ids() if i not in dead]
                if self._being_admitted(blockers, live):
                    raise _Contended  # decided in a moment: hand the leases back and look again
                kind: Kind = "queued" if live else "active"
                answer: Admission
                if not live:
                    answer = Admitted(backfill_id)
                elif on_overlap == "refuse":
                    return Refused(backfill_id, live[0], blockers.union(live))
                else:
                    answer = Queued(backfill_id, live, blockers.union(live))
                same = mine is not None and mine.kind == kind
                if same and not dead and _entries_match(backfill_id, kind, masks, leased):
                    return answer  # queued before, still blocked: it keeps its place
                holder = Holder(backfill_id, kind, order, claims_uri, digest)
                self._write(holder, masks, leased, dead=dead, put_holder=not same)
                written = True  # each write handed its lease back
                return answer
            finally:
                if not written:
                    self._unlease(leased)

        token = uuid.uuid4().hex  # one for every attempt: a lease an attempt left is its own
        return self._retrying(lambda: attempt(token), what=f"admitting {backfill_id}")

    def release(self, backfill_id: str) -> list[str]:
        """Drop the backfill's claims and its holder item; return the queued backfills that
        could now start, in submission order (the caller starts them)."""
        return self._ready(sorted(self._release(backfill_id)))

    def startable(self) -> list[str]:
        """The periodic sweep: release the holders whose backfills ended without releasing
        (a crash), then return the queued backfills that can start now, in submission order
        (the caller starts them)."""
        holders = self._holders()
        alive = self._alive([h.backfill_id for h in holders])
        for holder in holders:
            if holder.backfill_id not in alive:
                log.info(
                    "dropping the %s claims of %s: the backfill has ended", holder.kind, holder.backfill_id
                )
                self._release(holder.backfill_id)
        return self._ready([h.backfill_id for h in holders if h.kind == "queued" and h.backfill_id in alive])

    def holders(self) -> dict[str, list[str]]:
        """{'active': [...], 'queued': [...]} (queued in submission order), live ones only."""
        holders = self._holders()
        alive = self._alive([h.backfill_id for h in holders])
        live = [h for h in holders if h.backfill_id in alive]
        return {
            "active": sorted(h.backfill_id for h in live if h.kind == "active"),
            "queued": [h.backfill_id for h in sorted(live, key=lambda h: h.order) if h.kind == "queued"],
        }

    def _release(self, backfill_id: str) -> set[str]:
        """Drop the backfill's entries, then its holder item; the queued backfills seen on its keys."""
        holder = self._holder(backfill_id)
        if holder is None:
            return set()
        waiting = self._remove(backfill_id, list(self._load(holder.claims_uri).buckets()))
        self._delete_holder(backfill_id)
        return waiting - {backfill_id}

    # -- deciding --------------------------------------------------------------------------
    def _dead(self, backfill_ids: list[str]) -> set[str]:
        return set(backfill_ids) - self._alive(backfill_ids) if backfill_ids else set()

    def _being_admitted(self, blockers: _Blockers, live: list[str]) -> bool:
        """Whether a live blocker wrote its entries moments ago and has no holder item yet: its
        admission is still writing them (the unopposed path writes the holder item last) or
        taking them back, so they say nothing final yet. After `lease_seconds` such entries
        stand as written (a crashed admission's, until its retry finishes it)."""
        recent = self._clock() - self._lease_seconds
        young = [i for i in live if blockers.written[i] >= recent]
        return bool(young) and len(self._holders_of(young)) < len(young)

    def _alive(self, backfill_ids: list[str]) -> set[str]:
        ids = sorted(set(backfill_ids))
        return self._live_holders(ids) if ids else set()

    def _ready(self, candidates: Sequence[str]) -> list[str]:
        """Which of these queued backfills could be admitted now, in submission order: read
        their holder items, their claim sets and their keys (nothing else)."""
        holders = [h for h in self._holders_of(candidates) if h.kind == "queued"]
        if not holders:
            return []
        masks = {h.backfill_id: self._load(h.claims_uri).buckets() for h in holders}
        keys = sorted({key for mine in masks.values() for key in mine})
        items, _ = self._read(keys, holder=None)
        verdicts = {
            h.backfill_id: _blockers(h.backfill_id, h.order, masks[h.backfill_id], items) for h in holders
        }
        everyone = {i for blockers in verdicts.values() for i in blockers.ids()} | set(masks)
        alive = self._alive(sorted(everyone))
        return [
            holder.backfill_id
            for holder in sorted(holders, key=lambda h: h.order)
            if holder.backfill_id in alive
            and not [i for i in verdicts[holder.backfill_id].ids() if i in alive]
        ]

    # -- reading ---------------------------------------------------------------------------
    def _read(
        self, keys: Sequence[ClaimKey], *, holder: str | None
    ) -> tuple[dict[ClaimKey, KeyItem], Holder | None]:
        """The key items (absent ones as empty, version 0) and, when asked, one holder item:
        one BatchGetItem for up to 99 keys and the holder."""
        wanted = [*([_holder_key(holder)] if holder is not None else []), *map(_key_of, keys)]
        items = {key: KeyItem(key, 0, {}) for key in keys}
        mine: Holder | None = None
        for raw in self._batch_get(wanted):
            if raw["pk"]["S"] == HOLDER_PK:
                mine = _holder_from(raw)
            else:
                item = _key_item_from(raw)
                items[item.key] = item
        return items, mine

    def _batch_get(self, keys: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """Consistent reads, 100 keys a request; keys DynamoDB left unprocessed asked again."""
        for start in range(0, len(keys), MAX_BATCH_KEYS):
            pending = keys[start : start + MAX_BATCH_KEYS]
            delay = 0.02
            while pending:
                try:
                    response = self._ddb.batch_get_item(
                        RequestItems={self._table: {"Keys": pending, "ConsistentRead": True}}
                    )
                except (ClientError, BotoCoreError) as error:
                    raise ClaimsUnavailableError(f"reading claims from {self._table}: {error}") from error
                yield from response.get("Responses", {}).get(self._table, [])
                pending = response.get("UnprocessedKeys", {}).get(self._table, {}).get("Keys", [])
                if pending:
                    self._sleep(delay)
                    delay = min(delay * 2, 1.0)

    def _holder(self, backfill_id: str) -> Holder | None:
        try:
            raw = self._ddb.get_item(TableName=self._table, Key=_holder_key(backfill_id), ConsistentRead=True)
        except (ClientError, BotoCoreError) as error:
            raise ClaimsUnavailableError(f"reading the holder item of {backfill_id}: {error}") from error
        return _holder_from(raw["Item"]) if "Item" in raw else None

    def _holders_of(self, backfill_ids: Sequence[str]) -> list[Holder]:
        return [_holder_from(raw) for raw in self._batch_get([_holder_key(i) for i in backfill_ids])]

    def _holders(self) -> list[Holder]:
        """Every holder item (the sweep and `holders` only: an admission never lists them)."""
        holders: list[Holder] = []
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": HOLDER_PK}},
            "ConsistentRead": True,
        }
        try:
            while True:
                page = self._ddb.query(**kwargs)
                holders.extend(_holder_from(item) for item in page.get("Items", []))
                if "LastEvaluatedKey" not in page:
                    return holders
                kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        except (ClientError, BotoCoreError) as error:
            raise ClaimsUnavailableError(f"listing the holders in {self._table}: {error}") from error

    # -- the unopposed path ----------------------------------------------------------------
    def _admit_unopposed(
        self, holder: Holder, masks: Mapping[ClaimKey, int], items: Mapping[ClaimKey, KeyItem]
    ) -> bool:
        """Admit without leases when no entry on its keys meets its days (as read): its entry
        is added to every key at once, each write conditional on the version read (a key
        that changed meanwhile comes back with the refusal and, while nothing meets its days
        there, is written again), then the holder item, on the condition that there is none, says it is
        done. Admissions of disjoint days on one key never wait for each other; of two whose
        days meet on a key, the one that writes it second sees the other's entry. False, with
        the entries it wrote taken back, when a claim on its days appeared meanwhile."""
        now = int(self._clock())
        entry = Entry(holder.kind, holder.order, 0, now)
        mine = {key: replace(entry, mask=mask) for key, mask in masks.items()}

        def add(key: ClaimKey) -> bool:
            item: KeyItem | None = items[key]
            while item is not None:
                if _meets(item, mine[key].mask) or _full(item):
                    return False
                written = replace(
                    item, version=item.version + 1, entries={**item.entries, holder.backfill_id: mine[key]}
                )
                item = self._put_key_or_current(written, expected=item.version)  # None: written
            return True

        keys = list(masks)
        added = [key for key, ok in zip(keys, _parallel(add, keys), strict=True) if ok]
        if len(added) == len(keys) and self._put_holder(holder, keys=len(keys), new=True):
            return True
        _parallel(lambda key: self._take_back(key, holder.backfill_id, mine[key]), added)
        return False

    def _take_back(self, key: ClaimKey, backfill_id: str, entry: Entry) -> None:
        """Remove an entry the unopposed path wrote, if it is still the one written; a key left
        with no entry and no lease goes."""
        item = self._get_key(key)
        while item.entries.get(backfill_id) == entry and self._without(item, backfill_id) is None:
            item = self._get_key(key)

    # -- leases ----------------------------------------------------------------------------
    def _lease(
        self, keys: Sequence[ClaimKey], items: Mapping[ClaimKey, KeyItem], token: str
    ) -> dict[ClaimKey, KeyItem]:
        """Lease every key, each by writing it back as read with the lease (on the condition
        that its version is still the one read); returns the items as leased (what the
        decision reads). A crashed holder's lease runs out after `lease_seconds`.

        A plan of up to ALL_OR_NONE_KEYS keys takes them all at once or none: when one is
        taken it hands back what it got and tries again shortly, holding nothing while it
        waits (so admissions never queue up behind a waiting one). A larger plan, which would
        rarely find all its keys free at once, takes them at once too, then waits for the
        taken ones in key order holding only the smaller ones: every such admission waits in
        the same order, so none waits in a circle, and it is never starved."""
        if len(keys) <= ALL_OR_NONE_KEYS:
            return self._lease_all_or_none(keys, items, token)
        leased: dict[ClaimKey, KeyItem] = {}
        try:
            now = self._clock()
            free = [key for key in keys if not self._held_by_another(items[key], token, now)]
            for key, item in zip(
                free, _parallel(lambda key: self._lease_one(items[key], token), free), strict=True
            ):
                if item is not None:
                    leased[key] = item
            missing = [key for key in keys if key not in leased]
            if missing:
                self._unlease({key: leased.pop(key) for key in list(leased) if key > missing[0]})
                give_up = self._clock() + self._wait
                for key in [key for key in keys if key not in leased]:
                    leased[key] = self._lease_waiting(key, token, give_up)
        except BaseException:
            self._unlease(leased)
            raise
        return {key: leased[key] for key in keys}

    def _lease_all_or_none(
        self, keys: Sequence[ClaimKey], items: Mapping[ClaimKey, KeyItem], token: str
    ) -> dict[ClaimKey, KeyItem]:
        current: Mapping[ClaimKey, KeyItem] = items
        give_up = self._clock() + self._wait
        delay = 0.01
        while True:
            now = self._clock()
            taken = [key for key in keys if self._held_by_another(current[key], token, now)]
            if not taken:
                got = _parallel(lambda item: self._lease_one(item, token), [current[key] for key in keys])
                leased = {key: item for key, item in zip(keys, got, strict=True) if item is not None}
                if len(leased) == len(keys):
                    return leased
                self._unlease(leased)
                taken = [key for key in keys if key not in leased]
            if now >= give_up:
                key = taken[0]
                raise ClaimsUnavailableError(
                    f"the claim key {key.step_id} {key.week} of {self._table} stayed leased for {self._wait:.0f} s"
                )
            self._sleep(random.uniform(delay / 2, delay))
            delay = min(delay * 2, MAX_POLL_SECONDS)
            current, _ = self._read(keys, holder=None)  # the handed-back keys changed too

    def _lease_waiting(self, key: ClaimKey, token: str, give_up: float) -> KeyItem:
        """Lease one key, waiting while another admission holds it (until `give_up`)."""
        delay = 0.01
        while True:
            item = self._get_key(key)
            now = self._clock()
            if not self._held_by_another(item, token, now):
                leased = self._lease_one(item, token)
                if leased is not None:
                    return leased
            if now >= give_up:
                raise ClaimsUnavailableError(
                    f"the claim key {key.step_id} {key.week} of {self._table} stayed leased for {self._wait:.0f} s"
                )
            self._sleep(random.uniform(delay / 2, delay))
            delay = min(delay * 2, MAX_POLL_SECONDS)

    def _lease_one(self, item: KeyItem, token: str) -> KeyItem | None:
        """The item leased, or None when it changed since it was read."""
        until = int(self._clock()) + self._lease_seconds
        mine = replace(item, version=item.version + 1, lease=token, lease_until=until)
        return mine if self._put_key(mine, expected=item.version) else None

    @staticmethod
    def _held_by_another(item: KeyItem, token: str, now: float) -> bool:
        return bool(item.lease) and item.lease != token and item.lease_until >= now

    def _unlease(self, leased: Mapping[ClaimKey, KeyItem]) -> None:
        """Hand the leases back unchanged (best effort: a lease left behind runs out by itself)."""

        def unlease(item: KeyItem) -> None:
            with contextlib.suppress(ClaimsUnavailableError):
                self._put_key(
                    replace(item, version=item.version + 1, lease=None, lease_until=0), expected=item.version
                )

        _parallel(unlease, list(leased.values()))

    # -- writing ---------------------------------------------------------------------------
    def _write(
        self,
        holder: Holder,
        masks: Mapping[ClaimKey, int],
        leased: Mapping[ClaimKey, KeyItem],
        *,
        dead: set[str],
        put_holder: bool,
    ) -> None:
        """The holder item (when `put_holder`) and this backfill's entry on every leased key
        (dropping dead holders' entries on the way), all at once, each entry handing its
        key's lease back on the condition that the key is as leased (a release may drop an
        entry under a lease: then lease, read and decide again)."""
        written: list[KeyItem] = []
        for key, mask in masks.items():
            item = leased[key]
            entries = {i: e for i, e in item.entries.items() if i not in dead}
            if holder.backfill_id not in entries and len(entries) >= MAX_ENTRIES_PER_KEY:
                raise ClaimsUnavailableError(
                    f"{len(entries)} backfills already hold or wait for {key.step_id} in {key.week}; "
                    f"at most {MAX_ENTRIES_PER_KEY} can"
                )
            entries[holder.backfill_id] = Entry(holder.kind, holder.order, mask, int(self._clock()))
            written.append(KeyItem(key, item.version + 1, entries))

        def write(item: KeyItem | None) -> bool:
            if item is None:
                self._put_holder(holder, keys=len(masks))
                return True
            return self._put_key(item, expected=item.version - 1)

        if not all(_parallel(write, [*([None] if put_holder else []), *written])):
            raise _Contended

    def _put_key(self, item: KeyItem, *, expected: int) -> bool:
        """Write a key item whole, on the condition that its version is `expected` (0: that it
        does not exist); False when it is not."""
        return self._put_key_or_current(item, expected=expected) is None

    def _put_key_or_current(self, item: KeyItem, *, expected: int) -> KeyItem | None:
        """`_put_key`, answering the item as it is when the condition fails (DynamoDB returns
        it with the refusal: no read more)."""
        condition = (
            {"ConditionExpression": "ver = :ver", "ExpressionAttributeValues": {":ver": {"N": str(expected)}}}
            if expected
            else {"ConditionExpression": "attribute_not_exists(pk)"}
        )
        try:
            self._ddb.put_item(
                TableName=self._table,
                Item=_key_item_to(item),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                **condition,
            )
        except ClientError as error:
            if condition_failed(error):
                current = cast(
                    "Mapping[str, Any] | None", error.response.get("Item")
                )  # botocore types it loosely
                return _key_item_from(current) if current else KeyItem(item.key, 0, {})
            raise ClaimsUnavailableError(
                f"writing the claim key {item.key} to {self._table}: {error}"
            ) from error
        except BotoCoreError as error:
            raise ClaimsUnavailableError(
                f"writing the claim key {item.key} to {self._table}: {error}"
            ) from error
        return None

    def _get_key(self, key: ClaimKey) -> KeyItem:
        try:
            raw = self._ddb.get_item(TableName=self._table, Key=_key_of(key), ConsistentRead=True)
        except (ClientError, BotoCoreError) as error:
            raise ClaimsUnavailableError(
                f"reading the claim key {key} from {self._table}: {error}"
            ) from error
        return _key_item_from(raw["Item"]) if "Item" in raw else KeyItem(key, 0, {})

    def _put_holder(self, holder: Holder, *, keys: int, new: bool = False) -> bool:
        """Write the holder item; with `new`, only when there is none (False when there is)."""
        item = {
            **_holder_key(holder.backfill_id),
            "backfill_id": {"S": holder.backfill_id},
            "kind": {"S": holder.kind},
            "order": {"S": holder.order},
            "claims_uri": {"S": holder.claims_uri},
            "digest": {"S": holder.digest},
            "keys": {"N": str(keys)},
            "at": {"N": str(int(self._clock()))},
        }
        condition = {"ConditionExpression": "attribute_not_exists(pk)"} if new else {}
        try:
            self._ddb.put_item(TableName=self._table, Item=item, **condition)
        except ClientError as error:
            if new and condition_failed(error):
                return False
            raise ClaimsUnavailableError(
                f"writing the holder item of {holder.backfill_id}: {error}"
            ) from error
        except BotoCoreError as error:
            raise ClaimsUnavailableError(
                f"writing the holder item of {holder.backfill_id}: {error}"
            ) from error
        return True

    def _remove(self, backfill_id: str, keys: Sequence[ClaimKey]) -> set[str]:
        """Remove the backfill's entry from these keys (leased or not: it only frees days; the
        version it raises makes a lease holder that read the entry read again); return the
        queued backfills the keys hold afterwards."""
        waiting: set[str] = set()
        items, _ = self._read(keys, holder=None)
        for key in keys:
            item = items[key]
            while backfill_id in item.entries:
                item = self._without(item, backfill_id) or self._get_key(key)
            waiting |= {i for i, entry in item.entries.items() if entry.kind == "queued"}
        return waiting

    def _without(self, item: KeyItem, backfill_id: str) -> KeyItem | None:
        """Take the backfill's entry out of the key in one conditional write (the key item goes
        when it is left with no entry and no lease): the key as left, None when it changed
        since `item` was read."""
        entries = {i: e for i, e in item.entries.items() if i != backfill_id}
        if not entries and not item.lease:
            written = self._delete_key(item)
        else:
            written = self._put_key(
                replace(item, version=item.version + 1, entries=entries), expected=item.version
            )
        return replace(item, entries=entries) if written else None

    def _delete_key(self, item: KeyItem) -> bool:
        """A key item nobody holds any more goes, unless it changed since it was read."""
        try:
            self._ddb.delete_item(
                TableName=self._table,
                Key=_key_of(item.key),
                ConditionExpression="ver = :ver",
                ExpressionAttributeValues={":ver": {"N": str(item.version)}},
            )
        except (ClientError, BotoCoreError) as error:
            if condition_failed(error):
                return False
            raise ClaimsUnavailableError(f"deleting the claim key {item.key}: {error}") from error
        return True

    def _drop_stale(self, backfill_id: str, holder: Holder, *, keep: Mapping[ClaimKey, int]) -> None:
        """An earlier admission of this backfill claimed other keys (a retry claims less):
        drop its entries outside the new claim set, and its holder item."""
        self._remove(backfill_id, [key for key in self._load(holder.claims_uri).buckets() if key not in keep])
        self._delete_holder(backfill_id)

    def _delete_holder(self, backfill_id: str) -> None:
        try:
            self._ddb.delete_item(TableName=self._table, Key=_holder_key(backfill_id))
        except (ClientError, BotoCoreError) as error:
            raise ClaimsUnavailableError(f"deleting the holder item of {backfill_id}: {error}") from error

    # -- retrying --------------------------------------------------------------------------
    def _retrying(self, attempt: Callable[[], _T], *, what: str) -> _T:
        """Run `attempt` until no key it leased changed under it (a lease ran out); given up
        after `wait_seconds` (the platform delivers the event again)."""
        give_up = self._clock() + self._wait
        delay = 0.02
        while True:
            try:
                return attempt()
            except _Contended:
                if self._clock() >= give_up:
                    raise ClaimsUnavailableError(
                        f"{what}: its claim keys in {self._table} kept changing for {self._wait:.0f} s"
                    ) from None
                log.info("%s: its claim keys changed meanwhile, or a blocker is being admitted; again", what)
                self._sleep(random.uniform(delay / 2, delay))
                delay = min(delay * 2, 0.2)


def _blockers(
    backfill_id: str,
    order: str,
    masks: Mapping[ClaimKey, int],
    items: Mapping[ClaimKey, KeyItem],
    *,
    active_only: bool = False,
) -> _Blockers:
    """Every other backfill active on a shared day, or queued before this one on one."""
    blockers = _Blockers()
    for key, mask in masks.items():
        item = items.get(key)
        if item is None:
            continue
        for other, entry in item.entries.items():
            shared = entry.mask & mask
            ahead = entry.kind == "active" or (not active_only and entry.order < order)
            if other != backfill_id and shared and ahead:
                blockers.add(other, entry, key, shared)
    return blockers


def _meets(item: KeyItem, mask: int) -> bool:
    """Whether any entry on the key, its own included, holds or waits for one of these days."""
    return any(entry.mask & mask for entry in item.entries.values())


def _full(item: KeyItem) -> bool:
    return len(item.entries) >= MAX_ENTRIES_PER_KEY


def _entries_match(
    backfill_id: str, kind: Kind, masks: Mapping[ClaimKey, int], items: Mapping[ClaimKey, KeyItem]
) -> bool:
    """Whether every key already holds this backfill's entry of this kind (nothing to write)."""
    for key, mask in masks.items():
        entry = items[key].entries.get(backfill_id) if key in items else None
        if entry is None or entry.kind != kind or entry.mask != mask:
            return False
    return True


# -- items -------------------------------------------------------------------------------
def _key_of(key: ClaimKey) -> dict[str, Any]:
    return {"pk": {"S": KEY_PK_PREFIX + key.step_id}, "sk": {"S": key.week}}


def _holder_key(backfill_id: str) -> dict[str, Any]:
    return {"pk": {"S": HOLDER_PK}, "sk": {"S": backfill_id}}


def _key_item_from(raw: Mapping[str, Any]) -> KeyItem:
    entries = {
        backfill_id: Entry("active" if kind == "active" else "queued", order, mask, *at)
        for backfill_id, (kind, order, mask, *at) in json.loads(raw.get("entries", {}).get("S", "{}")).items()
    }
    return KeyItem(
        key=ClaimKey(raw["pk"]["S"][len(KEY_PK_PREFIX) :], raw["sk"]["S"]),
        version=int(raw.get("ver", {}).get("N", "0")),
        entries=entries,
        lease=raw["lease"]["S"] if "lease" in raw else None,
        lease_until=int(raw["lease_until"]["N"]) if "lease_until" in raw else 0,
    )


def _key_item_to(item: KeyItem) -> dict[str, Any]:
    """The entries as one JSON string: compact, and read and written whole anyway."""
    entries = {i: [e.kind, e.order, e.mask, e.at] for i, e in sorted(item.entries.items())}
    raw: dict[str, Any] = {
        **_key_of(item.key),
        "ver": {"N": str(item.version)},
        "entries": {"S": json.dumps(entries, separators=(",", ":"))},
    }
    if item.lease:
        raw["lease"], raw["lease_until"] = {"S": item.lease}, {"N": str(item.lease_until)}
    return raw


def _holder_from(raw: Mapping[str, Any]) -> Holder:
    return Holder(
        backfill_id=raw["sk"]["S"],
        kind="active" if raw["kind"]["S"] == "active" else "queued",
        order=raw["order"]["S"],
        claims_uri=raw["claims_uri"]["S"],
        digest=raw["digest"]["S"],
    )


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _parallel(call: Callable[[_A], _T], items: Sequence[_A]) -> list[_T]:
    """`call` on every item at once (a few threads the process shares), results in order;
    every call has ended before the first error, if any, is raised."""
    global _POOL
    if len(items) <= 1:
        return [call(item) for item in items]
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=MAX_PARALLEL, thread_name_prefix="claims")
    futures = [_POOL.submit(call, item) for item in items]
    wait(futures)
    return [future.result() for future in futures]


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
