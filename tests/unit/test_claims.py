"""Overlap protection on moto: admit, queue in submission order, refuse, release, stale claims."""

from __future__ import annotations

from datetime import date, timedelta
from types import SimpleNamespace

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
        uri = f"s3://b/backfills/{backfill_id}/claims.json"
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


def test_a_claim_cannot_outlive_its_backfill(world):
    """A backfill that ended without releasing (a crash) blocks nobody: its claim is dropped."""
    world.admit("a-1", claims(s=days(0)), at="t1")
    world.live.discard("a-1")  # e.g. FAILED, CANCELLED or the record is gone
    assert world.admit("b-1", claims(s=days(0)), at="t2") == Admitted("b-1")
    assert world.registry.holders()["active"] == ["b-1"]
    items = world.ddb.scan(TableName="claims")["Items"]
    assert sorted(i["sk"]["S"] for i in items) == ["b-1"]  # a-1's item deleted, lock released


def test_a_cancelled_queued_backfill_leaves_the_queue(world):
    world.admit("a-1", claims(s=days(0)), at="t1")
    world.admit("b-1", claims(s=days(0)), at="t2")
    world.live.discard("b-1")
    world.live.discard("a-1")
    assert world.registry.release("a-1") == []


def test_a_crashed_lock_holder_blocks_for_at_most_the_lease(world):
    world.ddb.put_item(
        TableName="claims",
        Item={
            "pk": {"S": "lock"},
            "sk": {"S": "admission"},
            "token": {"S": "dead"},
            "lease_until": {"N": str(int(world.now[0]) + 30)},
        },
    )
    # waits (on the fake clock) until the dead holder's lease is over, then admits
    assert world.admit("a-1", claims(s=days(0)), at="t1") == Admitted("a-1")
    assert world.now[0] >= 1_000_030


def test_a_lock_that_stays_taken_is_a_service_error(world):
    world.ddb.put_item(
        TableName="claims",
        Item={
            "pk": {"S": "lock"},
            "sk": {"S": "admission"},
            "token": {"S": "busy"},
            "lease_until": {"N": str(int(world.now[0]) + 3600)},
        },
    )
    with pytest.raises(ClaimsUnavailableError, match="stayed taken"):
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
