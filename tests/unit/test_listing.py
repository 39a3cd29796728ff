"""`backfill list`: newest first through the status table's indexes, never a Scan."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from backfill_orchestrator.cli import main
from backfill_orchestrator.status import BackfillState, StatusStore
from backfill_orchestrator.status.listing import ListFilter, list_backfills
from tests.support.aws import create_table

START = datetime(2026, 9, 28, 12, 0, tzinfo=UTC)


@pytest.fixture
def table(mocked_aws, monkeypatch):
    """12 backfills over three months; records which DynamoDB operations were called."""
    client = boto3.client("dynamodb", region_name="us-east-1")
    create_table(client, "StatusTable", table_name="status")
    now = [START]
    store = StatusStore(table_name="status", dynamodb_client=client, clock=lambda: now[0])
    for n in range(12):
        now[0] = START + timedelta(days=5 * n)
        store.create(
            f"bf{n:02d}-0000000{n % 10}", attributes={"name": f"bf{n:02d}", "owner": "@a" if n % 2 else "@b"}
        )
        if n % 3 == 0:
            store.transition(f"bf{n:02d}-0000000{n % 10}", BackfillState.REJECTED, detail="no")
    calls: list[str] = []
    session_client = boto3.client("dynamodb", region_name="us-east-1")
    session_client.meta.events.register("before-call.dynamodb.*", lambda model, **_: calls.append(model.name))
    monkeypatch.setattr(boto3, "client", lambda *a, **k: session_client)
    monkeypatch.setenv("STATUS_TABLE", "status")
    return session_client, calls


def test_newest_first_across_months_with_a_limit(table):
    client, calls = table
    records = list_backfills(
        dynamodb_client=client,
        table_name="status",
        where=ListFilter(limit=5),
        today=START.date() + timedelta(days=60),
    )
    assert [r.backfill_id[:4] for r in records] == ["bf11", "bf10", "bf09", "bf08", "bf07"]
    assert set(calls) == {"Query"}


def test_filters_by_state_owner_and_since(table):
    client, calls = table
    rejected = list_backfills(
        dynamodb_client=client,
        table_name="status",
        where=ListFilter(state=BackfillState.REJECTED),
        today=START.date(),
    )
    assert [r.backfill_id[:4] for r in rejected] == ["bf09", "bf06", "bf03", "bf00"]
    mine = list_backfills(
        dynamodb_client=client,
        table_name="status",
        where=ListFilter(owner="@a", since=START + timedelta(days=30)),
        today=START.date() + timedelta(days=60),
    )
    assert [r.backfill_id[:4] for r in mine] == ["bf11", "bf09", "bf07"]
    assert "Scan" not in calls and set(calls) == {"Query"}


def test_cli_list_table_and_json(table, capsys):
    _, calls = table
    assert main(["list", "--state", "rejected", "--limit", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["BACKFILL", "STATE", "OWNER", "SUBMITTED_BY", "CREATED", "UPDATED"]
    assert [line.split()[0] for line in out[1:]] == ["bf09-00000009", "bf06-00000006"]
    assert main(["list", "--name", "bf04", "--since", "2026-10-01", "--json"]) == 0
    (record,) = json.loads(capsys.readouterr().out)
    assert record["backfill_id"] == "bf04-00000004" and record["state"] == "RECEIVED"
    assert "Scan" not in calls


def test_cli_list_refuses_bad_arguments(table, capsys):
    assert main(["list", "--state", "sleeping"]) == 2
    assert "unknown state 'sleeping'" in capsys.readouterr().err
    assert main(["list", "--since", "last week"]) == 2


def test_backfills_awaiting_approval_are_listed_with_who_submitted_them(table, capsys):
    client, calls = table
    store = StatusStore(table_name="status", dynamodb_client=client)
    store.create(
        "bf99-00000099", attributes={"name": "bf99", "owner": "@c", "submitted_by": "role/data-eng/jane"}
    )
    store.transition("bf99-00000099", BackfillState.PLANNED)
    store.transition("bf99-00000099", BackfillState.AWAITING_APPROVAL, by="role/data-eng/jane")
    assert main(["list", "--state", "awaiting_approval", "--submitted-by", "role/data-eng/jane"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[:4] for line in out[1:]] == [
        ["bf99-00000099", "AWAITING_APPROVAL", "@c", "role/data-eng/jane"]
    ]
    assert main(["list", "--state", "awaiting_approval", "--submitted-by", "role/data-eng/bob"]) == 0
    assert capsys.readouterr().out.strip() == "no backfills match"


def test_a_listing_asks_dynamodb_for_one_page_at_a_time_and_stops_when_it_has_enough(table):
    """`Limit` on every Query: as many items as the listing still lacks (a filter's pages are
    PAGE_ITEMS long, as DynamoDB counts the items before the filter), never a whole month."""
    client, _ = table
    asked: list[tuple[str | None, int | None]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        month = params["ExpressionAttributeValues"].get(":month", {}).get("S")
        asked.append((month, params.get("Limit")))

    client.meta.events.register("before-parameter-build.dynamodb.Query", record)
    today = START.date() + timedelta(days=60)  # 2026-11 holds bf07..bf11
    records = list_backfills(
        dynamodb_client=client, table_name="status", where=ListFilter(limit=3), today=today
    )
    assert [r.backfill_id[:4] for r in records] == ["bf11", "bf10", "bf09"]
    assert asked == [("2026-11", 3)]  # one page of three, and no other
    asked.clear()
    records = list_backfills(
        dynamodb_client=client, table_name="status", where=ListFilter(limit=7), today=today
    )
    assert len(records) == 7
    assert asked == [("2026-11", 7), ("2026-10", 2)]  # the next month for what the first lacked
    asked.clear()
    list_backfills(
        dynamodb_client=client, table_name="status", where=ListFilter(owner="@a", limit=2), today=today
    )
    assert asked == [("2026-11", 100)]  # PAGE_ITEMS


def test_the_cli_list_reads_no_more_than_its_limit_needs(table, capsys):
    client, _ = table
    limits: list[int | None] = []
    client.meta.events.register(
        "before-parameter-build.dynamodb.Query", lambda params, **_: limits.append(params.get("Limit"))
    )
    assert main(["list", "--state", "rejected", "--limit", "1"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2  # the header and one backfill
    assert limits == [1]
