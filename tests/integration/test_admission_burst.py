"""Admission under a burst: uploads delivered at once to several trigger containers (threads,
each with its own clients and wiring, as separate Lambda containers have), against a
`moto_server` process and the Marquez and Airflow doubles. Non-overlapping uploads are all
admitted on first delivery without ever waiting for each other; overlapping ones keep the
guarantees: one of them active at a time, the rest started in submission order, none left
behind."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from datetime import UTC, date, datetime
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.metrics import EphemeralMetrics

from backfill_orchestrator.claims import registry_for, release_and_start_queued
from backfill_orchestrator.status import BackfillState
from backfill_orchestrator.trigger.wiring import TriggerWiring
from tests.support.aws import create_table
from tests.support.moto_server import moto_server, reset
from tests.support.trigger import CLAIMS, TriggerHarness, fast_session

CONTAINERS = 8


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_server() as url:
        yield url


@pytest.fixture
def harness(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[TriggerHarness]:
    reset(endpoint)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    for name, value in {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    with ExitStack() as stack:
        create_table(boto3.client("dynamodb", region_name="us-east-1"), "ClaimsTable", table_name=CLAIMS)
        yield TriggerHarness(stack, env={"CLAIMS_TABLE": CLAIMS})


class Container:
    """One trigger container: its own clients and wiring. `refused_claim_writes` counts the
    claims table's calls that DynamoDB refused (a conditional write that found the item
    changed or taken): each one is an admission that had to wait for, or redo after, another."""

    def __init__(self, harness: TriggerHarness):
        self.dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        self.wiring = TriggerWiring(
            harness.settings,
            s3_client=boto3.client("s3", region_name="us-east-1"),
            dynamodb_client=self.dynamodb,
            secrets_client=boto3.client("secretsmanager", region_name="us-east-1"),
            session_factory=fast_session,
        )
        self.refused_claim_writes = 0
        self.dynamodb.meta.events.register("before-parameter-build.dynamodb.*", self._mark)
        self.dynamodb.meta.events.register("after-call.dynamodb.*", self._count)

    def handle(self, event: dict[str, Any]) -> str:
        """The disposition of the event's one upload, or `raised ...` (Lambda would deliver it again)."""
        service = self.wiring.service(
            metrics=EphemeralMetrics(namespace="Burst"), logger=logging.getLogger("burst")
        )
        try:
            (result,) = service.handle_event(event, lease_seconds=120)
        except Exception as error:
            return f"raised {type(error).__name__}: {error}"
        return str(result.disposition)

    @staticmethod
    def _mark(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["claims"] = params.get("TableName") == CLAIMS

    def _count(self, http_response: Any, context: dict[str, Any], **_: Any) -> None:
        if context.get("claims") and http_response.status_code >= 400:
            self.refused_claim_writes += 1


def deliver_at_once(containers: list[Container], events: list[dict[str, Any]]) -> list[str]:
    """Every event handed at once to the containers, each taking the next when it is free."""
    with ThreadPoolExecutor(max_workers=len(containers)) as pool:
        free = list(containers)

        def run(event: dict[str, Any]) -> str:
            container = free.pop()
            try:
                return container.handle(event)
            finally:
                free.append(container)

        return list(pool.map(run, events))


def config(name: str, day: date) -> bytes:
    """etl_orders and its five dependants for the week from `day`."""
    return (
        f"version: 1\nname: {name}\nowner: '@burst'\nmode: batch\n"
        f"jobs: [{{namespace: food_delivery, name: etl_orders}}]\ndates: [{day.isoformat()}]\n"
    ).encode()


def month(n: int) -> date:
    """The first day of the nth month from January 2018: its week stays in that month."""
    return date(2018 + n // 12, n % 12 + 1, 1)


def test_a_burst_of_non_overlapping_uploads_is_admitted_on_first_delivery_without_waiting(
    harness: TriggerHarness,
) -> None:
    containers = [Container(harness) for _ in range(CONTAINERS)]
    events = [
        harness.upload(config(f"burst-{n:02d}", month(n)), key=f"incoming/burst-{n:02d}.yaml")
        for n in range(48)
    ]
    outcomes = deliver_at_once(containers, events)
    assert outcomes == ["accepted"] * 48, [o for o in outcomes if o != "accepted"]
    assert sum(c.refused_claim_writes for c in containers) == 0  # no admission waited for another
    holders = registry_for(
        dynamodb_client=harness.dynamodb, table_name=CLAIMS, status_store=harness.status, s3_client=harness.s3
    ).holders()
    assert len(holders["active"]) == 48 and holders["queued"] == []
    assert len([run for run in harness.airflow.runs if run[0] == "backfill"]) == 48


def test_overlapping_uploads_in_a_burst_run_one_at_a_time_in_submission_order(
    harness: TriggerHarness,
) -> None:
    """Three groups of four identical-but-for-the-name uploads (each group overlaps itself),
    and eight that overlap nothing, all at once. Then, round by round, the active backfill of
    each group ends (its DAG's finish releases its claims and drops `start` documents) and
    the start documents reach the containers at once: each group's next backfill is always
    the earliest submitted of those still waiting."""
    containers = [Container(harness) for _ in range(CONTAINERS)]
    groups = {g: [f"group{g}-{n}" for n in range(4)] for g in range(3)}
    uploads = [(name, month(60 + g)) for g, names in groups.items() for name in names]
    uploads += [(f"single-{n}", month(70 + n)) for n in range(8)]
    events = [harness.upload(config(name, day), key=f"incoming/{name}.yaml") for name, day in uploads]
    outcomes = deliver_at_once(containers, events)
    assert not [o for o in outcomes if o not in ("accepted", "queued")], outcomes
    ids = {name: outcome for (name, _), outcome in zip(uploads, outcomes, strict=True)}
    assert [ids[f"single-{n}"] for n in range(8)] == ["accepted"] * 8
    records = {r.name: r for r in (harness.status.get(i) for i in _backfill_ids(harness))}
    registry = registry_for(
        dynamodb_client=harness.dynamodb, table_name=CLAIMS, status_store=harness.status, s3_client=harness.s3
    )
    started: dict[int, list[str]] = {g: [] for g in groups}
    next_up: dict[int, str] = {}
    for round_ in range(4):
        for g, names in groups.items():
            states = {name: harness.status.get(records[name].backfill_id).state for name in names}
            active = [name for name, state in states.items() if state is BackfillState.TRIGGERED]
            waiting = [name for name, state in states.items() if state is BackfillState.QUEUED]
            assert len(active) == 1, states  # never two of a group at once
            assert len(waiting) == 3 - round_, states
            if round_ > 0:  # the one started is the earliest submitted of those that waited
                assert active[0] == next_up[g]
            started[g].append(active[0])
        starts = []
        for g in groups:  # each group's active backfill ends as its DAG's finish would
            backfill_id = records[started[g][-1]].backfill_id
            harness.status.transition(backfill_id, BackfillState.SUCCEEDED, detail="done")
            control_uri = f"s3://{harness.bucket}/control/"
            ready = release_and_start_queued(
                registry, backfill_id, control_uri=control_uri, now=datetime.now(UTC), s3_client=harness.s3
            )
            waiting = sorted(
                (
                    name
                    for name in groups[g]
                    if harness.status.get(records[name].backfill_id).state is BackfillState.QUEUED
                ),
                key=lambda name: records[name].created_at,
            )
            group_ready = [i for i in ready if i in {records[name].backfill_id for name in groups[g]}]
            assert group_ready == [
                records[name].backfill_id for name in waiting[:1]
            ]  # the earliest submitted
            next_up.update({g: waiting[0]} if waiting else {})
            starts += _start_documents(harness, group_ready)
        outcomes = deliver_at_once(containers, starts)
        assert outcomes == ["accepted"] * len(starts), outcomes
    for g, names in groups.items():  # none left behind
        assert sorted(started[g]) == sorted(names)
    assert registry.holders()["queued"] == []


def _backfill_ids(harness: TriggerHarness) -> list[str]:
    listed = harness.s3.list_objects_v2(Bucket=harness.bucket, Prefix="backfills/", Delimiter="/")
    return [prefix["Prefix"].split("/")[1] for prefix in listed.get("CommonPrefixes", [])]


def _start_documents(harness: TriggerHarness, backfill_ids: list[str]) -> list[dict[str, Any]]:
    """The S3 events of the start documents the release dropped for these backfills."""
    events = []
    for backfill_id in backfill_ids:
        listed = harness.s3.list_objects_v2(Bucket=harness.bucket, Prefix=f"control/{backfill_id}/start-")
        (document,) = listed["Contents"]
        body = harness.s3.get_object(Bucket=harness.bucket, Key=document["Key"])["Body"].read()
        events.append(harness.upload(body, key=document["Key"]))
    return events
