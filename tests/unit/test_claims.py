"""Overlap protection on moto: admit, queue in submission order, refuse, release, stale claims."""

from __future__ import annotations

import json
from datetime import date, timedelta
from types import SimpleNamespace
from typing import Any

import boto3
import pytest

from backfill_orchestrator.claims import (
    Admitted,
    ClaimRegistry,
    ClaimSet,
    ClaimsUnavailableError,
    Queued,
    Refused,
)
from backfill_orchestrator.claims.model import InvalidClaimsDocumentError
from tests.support.aws import create_table

D = date(2021, 6, 1)


def days(*offsets: int) -> frozenset[date]:
    return frozenset(D + timedelta(days=n) for n in offsets)


def claims(**steps: frozenset[date]) -> ClaimSet:
    return ClaimSet(steps)


class World:
    """A registry on moto with an in-memory status (live backfills) and claim documents."""

    def __init__(self, now: list[float]):
        self.ddb = boto3.client("dynamodb", region_name="us-east-1")
        create_table(self.ddb, "ClaimsTable", table_name="claims")
        self.documents: dict[str, str] = {}
        self.live: set[str] = set()
        self.now = now
        self.registry = self.make_registry()

    def make_registry(self, **kwargs) -> ClaimRegistry:
        return ClaimRegistry(
            dynamodb_client=self.ddb,
            table_name="claims",
            load_claims=lambda uri: ClaimSet.from_json(self.documents[uri], source=uri),
            live_holders=lambda backfill_ids: {i for i in backfill_ids if i in self.live},
            clock=lambda: self.now[0],
            sleep=lambda s: self.now.__setitem__(0, self.now[0] + s),
            **kwargs,
        )

    def admit(self, backfill_id: str, claim_set: ClaimSet, *, at: str, on_overlap="wait", registry=None):
        uri = f"s3://b/backfills/{backfill_id}/claims.json?versionId={len(self.documents)}"
        self.documents[uri] = claim_set.to_json()
        self.live.add(backfill_id)
        return (registry or self.registry).admit(
            backfill_id=backfill_id, claims=claim_set, claims_uri=uri, submitted_at=at, on_overlap=on_overlap
        )


@pytest.fixture
def world(mocked_aws) -> World:
    return World([1_000_000.0])


def test_claim_sets_round_trip_and_overlap():
    first = claims(etl_orders=days(0, 1, 2, 9), email=days(3))
    again = ClaimSet.from_json(first.to_json())
    assert again == first and len(again) == 5
    assert '"etl_orders":[["2021-06-01","2021-06-03"],["2021-06-10","2021-06-10"]]' in first.to_json()
    assert first.overlap(claims(etl_orders=days(2, 5), other=days(0))) == {"etl_orders": days(2)}
    assert first.overlap(claims(etl_orders=days(5))) == {}
    with pytest.raises(InvalidClaimsDocumentError, match="claims_version"):
        ClaimSet.from_json('{"claims_version": 9, "steps": {}}', source="x")


def test_from_plan_takes_every_steps_dates_minus_what_is_done():
    plan = SimpleNamespace(
        steps=[SimpleNamespace(id="a", dates=sorted(days(0, 1))), SimpleNamespace(id="b", dates=[D])]
    )
    assert ClaimSet.from_plan(plan) == claims(a=days(0, 1), b=days(0))
    assert ClaimSet.from_plan(plan, skip={"b": [D], "a": [D]}) == claims(a=days(1))


def test_disjoint_backfills_are_admitted_side_by_side(world):
    assert world.admit("a-1", claims(s=days(0, 1)), at="2026-01-01T00:00:00") == Admitted("a-1")
    assert world.admit("b-1", claims(s=days(2)), at="2026-01-01T00:00:01") == Admitted("b-1")
    assert world.admit("c-1", claims(t=days(0, 1)), at="2026-01-01T00:00:02") == Admitted("c-1")
    assert world.registry.holders() == {"active": ["a-1", "b-1", "c-1"], "queued": []}


def test_admission_is_idempotent(world):
    assert world.admit("a-1", claims(s=days(0)), at="t1") == Admitted("a-1")
    assert world.admit("a-1", claims(s=days(0)), at="t1") == Admitted("a-1")
    assert world.registry.holders()["active"] == ["a-1"]


def test_refuse_names_the_blocking_backfill_and_the_overlap(world):
    world.admit("a-1", claims(s=days(0, 1, 2)), at="t1")
    refused = world.admit("b-1", claims(s=days(2, 3), t=days(0)), at="t2", on_overlap="refuse")
    assert isinstance(refused, Refused)
    assert refused.blocking == "a-1" and refused.overlap == {"s": days(2)}
    assert refused.describe() == "overlaps active backfill a-1 on s 2021-06-03"
    assert world.registry.holders() == {"active": ["a-1"], "queued": []}  # nothing recorded for b


def test_waiting_backfills_start_in_submission_order(world):
    world.admit("a-1", claims(s=days(0, 1)), at="t1")
    assert world.admit("b-1", claims(s=days(1)), at="t2") == Queued("b-1", ["a-1"], {"s": days(1)})
    # c overlaps only b (queued, earlier): it queues behind b rather than jumping ahead
    assert isinstance(world.admit("c-1", claims(s=days(1, 5)), at="t3"), Queued)
    # d overlaps nothing: never blocked
    assert world.admit("d-1", claims(u=days(1)), at="t4") == Admitted("d-1")
    assert world.registry.holders() == {"active": ["a-1", "d-1"], "queued": ["b-1", "c-1"]}

    world.live.discard("a-1")
    assert world.registry.release("a-1") == ["b-1"]  # c still overlaps b
    assert world.admit("b-1", claims(s=days(1)), at="t2") == Admitted("b-1")
    assert world.registry.holders() == {"active": ["b-1", "d-1"], "queued": ["c-1"]}
    world.live.discard("b-1")
    assert world.registry.release("b-1") == ["c-1"]
    assert world.admit("c-1", claims(s=days(1, 5)), at="t3") == Admitted("c-1")


def key_item(world: World, step: str, week: str) -> dict[str, Any]:
    return world.ddb.get_item(TableName="claims", Key={"pk": {"S": f"key#{step}"}, "sk": {"S": week}}).get(
        "Item", {}
    )


def entries(world: World, step: str, week: str) -> list[str]:
    return sorted(json.loads(key_item(world, step, week).get("entries", {}).get("S", "{}")))


def test_a_claim_cannot_outlive_its_backfill(world):
    """A backfill that ended without releasing (a crash) blocks nobody: an admission it blocks
    drops its entries from the keys it writes; the sweep drops the rest and its holder item."""
    world.admit("a-1", claims(s=days(0), t=days(40)), at="t1")
    world.live.discard("a-1")  # e.g. FAILED, CANCELLED or the record is gone
    assert world.admit("b-1", claims(s=days(0)), at="t2") == Admitted("b-1")
    assert world.registry.holders()["active"] == ["b-1"]
    assert entries(world, "s", "2021-W22") == ["b-1"]  # a-1's entry dropped where b-1 wrote
    assert entries(world, "t", "2021-W27") == ["a-1"]  # a key b-1 never touched: left to the sweep
    assert world.registry.startable() == []
    assert entries(world, "t", "2021-W27") == []
    holders = world.ddb.query(
        TableName="claims",
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "holder"}},
    )["Items"]
    assert [item["sk"]["S"] for item in holders] == ["b-1"]


def test_a_cancelled_queued_backfill_leaves_the_queue(world):
    world.admit("a-1", claims(s=days(0)), at="t1")
    world.admit("b-1", claims(s=days(0)), at="t2")
    world.live.discard("b-1")
    world.live.discard("a-1")
    assert world.registry.release("a-1") == []


def test_an_admitted_backfill_admitted_again_stays_admitted_even_behind_an_earlier_submission(world):
    """A redelivery of an admitted backfill is Admitted again, although a backfill submitted
    earlier but admitted later now waits for it (it must not be demoted to the queue)."""
    assert world.admit("b-1", claims(s=days(0)), at="t2") == Admitted("b-1")
    assert world.admit("a-1", claims(s=days(0)), at="t1") == Queued("a-1", ["b-1"], {"s": days(0)})
    assert world.admit("b-1", claims(s=days(0)), at="t2") == Admitted("b-1")
    assert world.registry.holders() == {"active": ["b-1"], "queued": ["a-1"]}


def test_a_retry_claiming_less_drops_the_entries_of_its_earlier_admission(world):
    world.admit("a-1", claims(s=days(0), t=days(40)), at="t1")
    world.live.discard("a-1")  # FAILED; its release never ran
    world.live.add("a-1")  # retried: it claims only what did not succeed
    assert world.admit("a-1", claims(s=days(0)), at="t9") == Admitted("a-1")
    assert entries(world, "s", "2021-W22") == ["a-1"] and entries(world, "t", "2021-W27") == []
    assert world.admit("b-1", claims(t=days(40)), at="t10") == Admitted("b-1")


def test_an_admission_reads_only_the_keys_of_its_plan_however_many_are_in_flight(world):
    """120 backfills in flight on other steps and weeks, and one on the Monday of each of its
    keys: admitting one more that overlaps none of them is one conditional write per key of
    its own (all at once) and its holder item. Nothing read or leased: no listing of the
    holders, no other backfill's claim set, no status read."""
    for n in range(120):
        world.admit(f"x-{n}", claims(**{f"step{n % 10}": days(60 + n)}), at=f"t{n:04d}")
    steps = ("s", "t", "u", "v", "w", "x")
    for step in steps:  # the same (step, week) keys, another day
        assert world.admit(f"monday-{step}", claims(**{step: days(-1)}), at="t0") == Admitted(
            f"monday-{step}"
        )
    calls: list[tuple[str, str]] = []

    def record(model: Any, params: dict[str, Any], **_: Any) -> None:
        key = params.get("Key") or params.get("Item") or {}
        calls.append((model.name, f"{key.get('pk', {}).get('S')} {key.get('sk', {}).get('S')}"))

    world.ddb.meta.events.register("before-parameter-build.dynamodb.*", record)
    loaded: list[str] = []
    states: list[list[str]] = []
    registry = ClaimRegistry(
        dynamodb_client=world.ddb,
        table_name="claims",
        load_claims=lambda uri: loaded.append(uri) or ClaimSet.from_json(world.documents[uri]),  # type: ignore[func-returns-value]
        live_holders=lambda ids: states.append(ids) or set(ids),  # type: ignore[func-returns-value]
    )
    plan = claims(**{name: days(0, 1, 2, 3, 4, 5) for name in steps})  # Tuesday to Sunday: one week
    assert world.admit("new-1", plan, at="t9999", registry=registry) == Admitted("new-1")
    assert calls[0] == ("BatchGetItem", "None None")  # its holder item (none yet) and its keys
    assert set(calls[1:7]) == {("PutItem", f"key#{step} 2021-W22") for step in steps}  # its entries
    assert calls[7:] == [("PutItem", "holder new-1")]  # last: the admission is done
    assert loaded == [] and states == []
    assert entries(world, "s", "2021-W22") == ["monday-s", "new-1"]


def hooked_registry(world: World, event: str, hook: Any) -> ClaimRegistry:
    """A second registry on the same table whose DynamoDB client runs `hook` on botocore's `event`."""
    client = boto3.client("dynamodb", region_name="us-east-1")
    client.meta.events.register(event, hook)
    world.ddb = client
    hooked = world.make_registry()
    world.ddb = world.registry._ddb
    return hooked


def racing_registry(world: World, interleave: Any) -> ClaimRegistry:
    """A registry whose DynamoDB calls run `interleave(model)` after each answer."""
    return hooked_registry(world, "after-call.dynamodb.*", interleave)


@pytest.mark.parametrize("other", [claims(s=days(40)), claims(s=days(1))], ids=["another key", "another day"])
def test_an_admission_deciding_under_a_lease_never_holds_up_one_that_overlaps_nothing(
    world: World, other: ClaimSet
) -> None:
    """a-1 meets the entry of an ended backfill on its day, so it decides under the lease of
    its key (reading, then asking whether the blocker is live). Meanwhile b-1, on another key
    or on another day of the leased key, is admitted without waiting; a-1 then finds its key
    changed, reads it again and is admitted too."""
    world.admit("gone-1", claims(s=days(0)), at="t0")
    world.live.discard("gone-1")
    calls: list[str] = []

    def interleave(model: Any, **_: Any) -> None:
        calls.append(model.name)
        if calls == ["BatchGetItem", "PutItem"]:  # a-1 holds the lease of its key
            started = world.now[0]
            assert world.admit("b-1", other, at="t2") == Admitted("b-1")
            assert world.now[0] == started  # it never waited

    assert world.admit(
        "a-1", claims(s=days(0)), at="t1", registry=racing_registry(world, interleave)
    ) == Admitted("a-1")
    assert world.registry.holders() == {"active": ["a-1", "b-1"], "queued": []}
    assert [item for item in world.ddb.scan(TableName="claims")["Items"] if "lease" in item] == []


def scanned_leases(world: World) -> list[dict[str, Any]]:
    return [item for item in world.ddb.scan(TableName="claims")["Items"] if "lease" in item]


def test_admissions_of_other_days_of_one_key_racing_each_other_never_wait(world: World) -> None:
    """b-1 writes the key between a-1's read and a-1's write (other days of the same step and
    week): a-1's write is refused with the key as it is now, still meets nothing and writes.
    Neither leases anything nor waits."""
    calls: list[str] = []

    def interleave(model: Any, **_: Any) -> None:
        calls.append(model.name)
        if calls == ["BatchGetItem"]:
            assert world.admit("b-1", claims(s=days(1, 2)), at="t2") == Admitted("b-1")

    started = world.now[0]
    racing = racing_registry(world, interleave)
    assert world.admit("a-1", claims(s=days(0)), at="t1", registry=racing) == Admitted("a-1")
    # refused once (the refusal carries the key as it is: no read), written again, then the holder
    assert calls == ["BatchGetItem", "PutItem", "PutItem", "PutItem"]
    assert world.now[0] == started and scanned_leases(world) == []
    assert entries(world, "s", "2021-W22") == ["a-1", "b-1"]
    assert world.registry.holders() == {"active": ["a-1", "b-1"], "queued": []}


def test_an_admission_that_meets_a_claim_written_meanwhile_takes_its_entries_back_and_queues(
    world: World,
) -> None:
    """a-1 read two keys where nothing met its days; before it wrote, b-1 claimed its day on
    the second. a-1's entry on the first is taken back and it decides under leases: it waits
    for b-1, which it now sees, in the queue (never active beside it)."""
    calls: list[str] = []

    def interleave(model: Any, **_: Any) -> None:
        calls.append(model.name)
        if calls == ["BatchGetItem"]:
            assert world.admit("b-1", claims(t=days(0)), at="t2") == Admitted("b-1")

    racing = racing_registry(world, interleave)
    plan = claims(s=days(0), t=days(0))
    assert world.admit("a-1", plan, at="t1", registry=racing) == Queued("a-1", ["b-1"], {"t": days(0)})
    assert world.registry.holders() == {"active": ["b-1"], "queued": ["a-1"]}
    item = json.loads(key_item(world, "s", "2021-W22")["entries"]["S"])
    assert item["a-1"][0] == "queued"  # its place on the key it did not share
    assert scanned_leases(world) == []


def dying_registry(world: World) -> ClaimRegistry:
    """A registry whose process is killed as it writes a holder item (after the entries)."""

    def die(params: dict[str, Any], **_: Any) -> None:
        if params["Item"]["pk"]["S"] == "holder":
            raise RuntimeError("killed")

    return hooked_registry(world, "before-parameter-build.dynamodb.PutItem", die)


def test_an_admission_killed_before_its_holder_item_is_finished_once_by_its_retry(world: World) -> None:
    dying = dying_registry(world)
    plan = claims(s=days(0), t=days(0, 1))
    with pytest.raises(RuntimeError, match="killed"):
        world.admit("a-1", plan, at="t1", registry=dying)
    assert entries(world, "s", "2021-W22") == ["a-1"] and world.registry.holders()["active"] == []
    assert world.admit("a-1", plan, at="t1") == Admitted("a-1")  # the platform delivers it again
    assert world.admit("a-1", plan, at="t1") == Admitted("a-1")  # and once more: nothing changes
    assert world.registry.holders() == {"active": ["a-1"], "queued": []}
    assert entries(world, "s", "2021-W22") == ["a-1"] and entries(world, "t", "2021-W22") == ["a-1"]
    assert world.admit("b-1", claims(t=days(1)), at="t2") == Queued("b-1", ["a-1"], {"t": days(1)})


@pytest.mark.parametrize("retried", [True, False], ids=["its retry finishes it", "no retry comes"])
def test_an_overlapping_admission_waits_for_one_that_is_still_writing_its_entries(
    world: World, retried: bool
) -> None:
    """a-1 wrote its entries but not yet its holder item (still writing, or killed). b-1,
    which overlaps it, neither queues behind nor jumps ahead of a half-made admission: it
    holds nothing and looks again until a-1's holder item is there, and then queues behind
    it; when no retry comes, a-1's entries stand as written once they are older than a lease."""
    with pytest.raises(RuntimeError, match="killed"):
        world.admit("a-1", claims(s=days(0)), at="t1", registry=dying_registry(world))
    seen: list[list[str]] = []

    def sleep(seconds: float) -> None:
        seen.append([i["pk"]["S"] for i in scanned_leases(world)])
        if retried and len(seen) == 3:
            assert world.admit("a-1", claims(s=days(0)), at="t1") == Admitted("a-1")
        world.now[0] += seconds

    waiting = ClaimRegistry(
        dynamodb_client=world.ddb,
        table_name="claims",
        load_claims=lambda uri: ClaimSet.from_json(world.documents[uri]),
        live_holders=lambda ids: {i for i in ids if i in world.live},
        clock=lambda: world.now[0],
        sleep=sleep,
    )
    started = world.now[0]
    assert world.admit("b-1", claims(s=days(0, 1)), at="t2", registry=waiting) == Queued(
        "b-1", ["a-1"], {"s": days(0)}
    )
    assert len(seen) >= 3 and all(held == [] for held in seen)  # it held no lease while it waited
    if not retried:
        assert world.now[0] >= started + 30
    assert world.registry.holders()["queued"] == ["b-1"]


def test_a_release_under_a_lease_sends_the_lease_holder_back_to_read_again(world):
    """c-1 has leased its key and read a-1's active entry there (it would queue); a-1 ends and
    releases meanwhile: c-1's write finds the key changed, so it reads again and is admitted,
    rather than queue behind a backfill that has gone (and wait for the sweep)."""
    world.admit("a-1", claims(s=days(10)), at="t1")
    calls: list[str] = []

    def interleave(model: Any, **_: Any) -> None:
        calls.append(model.name)
        if calls == ["BatchGetItem", "PutItem"]:
            world.live.discard("a-1")
            assert world.registry.release("a-1") == []  # c-1 has not written anything yet

    racing = racing_registry(world, interleave)
    assert world.admit("c-1", claims(s=days(10, 11)), at="t3", registry=racing) == Admitted("c-1")
    assert calls.count("BatchGetItem") == 2  # a second attempt
    assert world.registry.holders() == {"active": ["c-1"], "queued": []}


def wide_plan(steps: int, *, first: int = 0) -> ClaimSet:
    """Two weeks of `steps` steps: 2 x steps (step, week) keys."""
    return claims(**{f"w{n:03d}": days(first, first + 31) for n in range(steps)})


def test_a_plan_over_more_keys_than_a_dynamodb_transaction_takes_is_admitted(world):
    wide = wide_plan(51)
    assert len(wide.buckets()) == 102  # TransactWriteItems takes 100 items
    assert world.admit("wide-1", wide, at="t1") == Admitted("wide-1")
    assert world.admit("small-1", claims(w050=days(31)), at="t2") == Queued(
        "small-1", ["wide-1"], {"w050": days(31)}
    )
    assert world.admit("wide-2", wide_plan(51, first=1), at="t3") == Admitted("wide-2")  # other days
    assert world.admit("wide-3", wide_plan(51), at="t4") == Queued(
        "wide-3", ["wide-1", "small-1"], wide.steps
    )
    leases = [item for item in world.ddb.scan(TableName="claims")["Items"] if "lease" in item]
    assert leases == []  # every lease handed back by the write
    world.live.discard("wide-1")
    assert world.registry.release("wide-1") == ["small-1"]  # wide-3 still waits for small-1


def lease(world: World, step: str, week: str, *, seconds: int, claimed: bool = True) -> None:
    """A key leased by an admission that crashed; `claimed`: every day of it held by the
    entry of a backfill that has ended (so an admission there decides under the lease)."""
    gone = {"entries": {"S": '{"gone-1":["active","t0#gone-1",127,0]}'}} if claimed else {}
    world.ddb.put_item(
        TableName="claims",
        Item={
            "pk": {"S": f"key#{step}"},
            "sk": {"S": week},
            "ver": {"N": "1"},
            "lease": {"S": "dead"},
            "lease_until": {"N": str(int(world.now[0]) + seconds)},
            **gone,
        },
    )


def test_a_crashed_lease_holder_blocks_its_keys_for_at_most_the_lease(world):
    lease(world, "s", "2021-W22", seconds=30)
    # waits (on the fake clock) until the dead holder's lease is over, then admits
    assert world.admit("a-1", claims(s=days(0)), at="t1") == Admitted("a-1")
    assert world.now[0] >= 1_000_030
    assert entries(world, "s", "2021-W22") == ["a-1"]  # the ended backfill's entry dropped
    # a leased key whose days nobody claims is admitted at once (nothing to decide)
    lease(world, "t", "2021-W22", seconds=30, claimed=False)
    before = world.now[0]
    assert world.admit("b-1", claims(t=days(0)), at="t2") == Admitted("b-1")
    assert world.now[0] == before


def test_a_lease_that_stays_taken_is_a_service_error(world):
    lease(world, "s", "2021-W22", seconds=3600)
    with pytest.raises(ClaimsUnavailableError, match="stayed leased for 35 s"):
        world.admit("a-1", claims(s=days(0)), at="t1")


def test_the_kept_claim_sets_are_bounded_by_their_pairs_and_only_versioned_uris_are_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from backfill_orchestrator.claims import registry

    monkeypatch.setattr(registry, "_CLAIM_SETS", registry.LRUCache(maxsize=4, getsizeof=len))
    monkeypatch.setattr(registry, "MAX_KEPT_CLAIMS", 4)
    day = date(2021, 6, 4)
    three = ClaimSet({"a": frozenset({day, date(2021, 6, 5), date(2021, 6, 6)})})
    one = ClaimSet({"b": frozenset({day})})
    registry.keep_claim_set("s3://b/backfills/x/claims.json", one)  # a plain key may be rewritten: not kept
    registry.keep_claim_set(
        "s3://b/backfills/big/claims.json?versionId=1",
        ClaimSet({"c": frozenset(three.steps["a"] | {date(2021, 6, 7), date(2021, 6, 8)})}),
    )
    assert len(registry._CLAIM_SETS) == 0  # 5 pairs: over the bound, never kept
    registry.keep_claim_set("s3://b/backfills/y/claims.json?versionId=1", three)
    registry.keep_claim_set("s3://b/backfills/z/claims.json?versionId=1", one)
    registry.keep_claim_set(
        "s3://b/backfills/w/claims.json?versionId=1", one
    )  # 5 pairs in all: the oldest goes
    assert set(registry._CLAIM_SETS) == {
        "s3://b/backfills/z/claims.json?versionId=1",
        "s3://b/backfills/w/claims.json?versionId=1",
    }


# How long the waiting tests' dead lease lasts on the fake clock: a few seconds are a hundred
# polls (MAX_POLL_SECONDS), each snapshotting the table; the waits prove the same as a longer one.
WAIT_SECONDS = 3


def waiting_registry(world: World, seen: list[list[str]]) -> ClaimRegistry:
    """A registry whose every wait notes the keys this admission holds meanwhile."""

    def snapshot(seconds: float) -> None:
        items = world.ddb.scan(TableName="claims")["Items"]
        seen.append(sorted(i["pk"]["S"] for i in items if i.get("lease", {}).get("S") not in (None, "dead")))
        world.now[0] += seconds

    return ClaimRegistry(
        dynamodb_client=world.ddb,
        table_name="claims",
        load_claims=lambda uri: ClaimSet.from_json(world.documents[uri]),
        live_holders=lambda ids: {i for i in ids if i in world.live},
        clock=lambda: world.now[0],
        sleep=snapshot,
    )


def test_a_small_plan_that_meets_a_taken_key_holds_nothing_while_it_waits(world):
    lease(world, "t", "2021-W22", seconds=WAIT_SECONDS)
    seen: list[list[str]] = []
    plan = claims(s=days(0), t=days(0), u=days(0))
    assert world.admit("a-1", plan, at="t1", registry=waiting_registry(world, seen)) == Admitted("a-1")
    assert seen and all(held == [] for held in seen)  # s and u handed back while t is taken
    assert world.now[0] >= 1_000_000 + WAIT_SECONDS
    assert [item for item in world.ddb.scan(TableName="claims")["Items"] if "lease" in item] == []


def test_a_large_plan_that_meets_a_taken_key_waits_for_it_holding_only_the_smaller_keys(world):
    """A plan over more keys than ALL_OR_NONE_KEYS waits in key order (so two of them never
    wait for each other in a circle, and small ones cannot starve it)."""
    lease(world, "w012", "2021-W22", seconds=WAIT_SECONDS)
    seen: list[list[str]] = []
    plan = claims(**{f"w{n:03d}": days(0) for n in range(30)})
    assert world.admit("big-1", plan, at="t1", registry=waiting_registry(world, seen)) == Admitted("big-1")
    smaller = [f"key#w{n:03d}" for n in range(12)]
    assert seen and all(held == smaller for held in seen)
    assert world.now[0] >= 1_000_000 + WAIT_SECONDS
    assert [item for item in world.ddb.scan(TableName="claims")["Items"] if "lease" in item] == []


def test_a_full_key_is_a_service_error_naming_it_at_once(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    from backfill_orchestrator.claims import registry

    monkeypatch.setattr(registry, "MAX_ENTRIES_PER_KEY", 2)
    assert world.admit("a-1", claims(s=days(0)), at="t1") == Admitted("a-1")
    assert world.admit("b-1", claims(s=days(1)), at="t2") == Admitted("b-1")
    started = world.now[0]
    with pytest.raises(ClaimsUnavailableError, match="2 backfills already hold or wait for s in 2021-W22"):
        world.admit("c-1", claims(s=days(2)), at="t3")
    assert world.now[0] == started  # refused, not retried until the wait ran out
    assert entries(world, "s", "2021-W22") == ["a-1", "b-1"]
