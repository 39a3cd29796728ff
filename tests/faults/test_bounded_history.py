"""A status record stays far under DynamoDB's 400 KB whatever happens to it.

`history` grows by an entry with every transition; a backfill cancelled and retried a hundred
times with long reasons and long principals (a few hundred with short ones) would outgrow the
item, after which every transition fails. The record keeps its recent history and moves older entries, in fixed
chunks, into items of their own in the same table, in the same transaction that trims them;
`StatusStore.get(..., full_history=True)` reads them back in order, and `backfill status`
shows them all. Control documents and further uploads of the same config are remembered in
items of their own (with a time to live), not in sets on the record, so a redelivery is still
told apart from a new upload however many came before."""

from __future__ import annotations

import json

import pytest

from backfill_orchestrator.cli.status import render
from backfill_orchestrator.status import BackfillState
from backfill_orchestrator.status.history import HISTORY_CHUNK
from tests.faults.harness import FaultHarness
from tests.support.trigger import TABLE, VALID

# A thousand writes and more through in-process moto (about 50 ms each, most of it moto
# serializing the whole record it returns): about a minute alone.
pytestmark = pytest.mark.slow

# Without the bound the record outgrows DynamoDB's 400 KB at about 150 cycles of these reasons;
# 550 cycles archive over 100 chunks, so reading the history back takes two BatchGetItems of at
# most 100 keys (DynamoDB's limit per request, which moto enforces).
CYCLES = 550
UPLOADS = 1_000
ITEM_BOUND = 100_000  # bytes; DynamoDB refuses 400 KB
LONG = "the partner feed for 2021-06-04 was re-sent after the first run; " * 15  # ~ 1,000 characters
PRINCIPAL = "role/data-platform-oncall-engineers/" + "jane.doe.with.a.very.long.session.name" * 4


def test_hundreds_of_cancel_and_retry_cycles_keep_the_record_bounded_and_the_history_whole(
    control_harness: FaultHarness,
) -> None:
    harness = control_harness
    status = harness.status
    backfill_id = harness.submit().backfill_id
    # The first and the last control documents go through the trigger; the cycles between
    # them drive the store as cancel and retry do (a transition each, with who and why).
    first_key, first_cancel = harness.upload_control(backfill_id, "cancel", reason="wrong dates")
    assert [r.disposition for r in harness.invoke(first_cancel)] == ["accepted"]
    largest = 0
    for cycle in range(CYCLES):
        status.transition(
            backfill_id,
            BackfillState.TRIGGERED,
            detail=f"attempt {cycle + 2} triggered by {PRINCIPAL}: {LONG}",
            by=PRINCIPAL,
        )
        status.transition(
            backfill_id, BackfillState.CANCELLED, detail=f"cancelled by {PRINCIPAL}: {LONG}", by=PRINCIPAL
        )
        if cycle % 50 == 0:
            largest = max(largest, harness.item_size(backfill_id))
    largest = max(largest, harness.item_size(backfill_id))
    assert largest < ITEM_BOUND, largest

    _, retry = harness.upload_control(backfill_id, "retry", reason="fixed the feed")
    assert [r.disposition for r in harness.invoke(retry)] == ["accepted"]
    record = status.get(backfill_id)
    assert record.state is BackfillState.TRIGGERED and record.run_attempt == 2

    # The whole history, in order, however it is stored.
    whole = status.get(backfill_id, full_history=True)
    states = [entry["state"] for entry in whole.history]
    assert states[:3] == ["RECEIVED", "TRIGGERED", "CANCELLED"]
    assert states[3:-1] == ["TRIGGERED", "CANCELLED"] * CYCLES and states[-1] == "TRIGGERED"
    assert len(whole.history) == 3 + 2 * CYCLES + 1 == whole.history_archived + len(record.history)
    assert whole.history_archived // HISTORY_CHUNK > 100  # more chunks than one BatchGetItem reads
    assert [entry["detail"] for entry in whole.history[3 : 3 + 2 * CYCLES : 2 * 500]] == [
        f"attempt {cycle + 2} triggered by {PRINCIPAL}: {LONG}"[:1000] for cycle in range(0, CYCLES, 500)
    ]
    assert len(record.history) < 50 and whole.history[-len(record.history) :] == record.history
    lines = render(whole).splitlines()
    assert sum(1 for line in lines if line.endswith(f"(by {PRINCIPAL[:200]})")) == 2 * CYCLES

    # The first control document, delivered again after all that, is still a duplicate.
    assert [r.disposition for r in harness.invoke(first_cancel)] == ["duplicate"]
    assert harness.control_result(first_key)["outcome"] == "done"
    assert status.get(backfill_id).state is BackfillState.TRIGGERED


def test_thousands_of_uploads_of_one_config_leave_the_record_bounded_and_redeliveries_duplicates(
    control_harness: FaultHarness,
) -> None:
    harness = control_harness
    status = harness.status
    result = harness.submit(VALID, key="incoming/orders.yaml")
    backfill_id = result.backfill_id
    before = harness.item_size(backfill_id)
    for index in range(UPLOADS):  # every further upload of the identical config is remembered
        assert status.add_upload(backfill_id, f"{index:020x}")
    assert harness.item_size(backfill_id) == before  # not in the record: it does not grow with them
    assert not status.add_upload(backfill_id, f"{0:020x}")  # the oldest is still known
    # Through the trigger: a new upload of the identical config is "already known"; the same
    # upload delivered again is a duplicate (not a new upload, not "already known" again).
    again = harness.upload(VALID, key="incoming/orders-again.yaml")
    assert [r.disposition for r in harness.invoke(again)] == ["already_known"]
    assert [r.disposition for r in harness.invoke(again)] == ["duplicate"]
    record = status.get(backfill_id)
    assert len(json.dumps(sorted(record.uploads))) < 1_000


def test_a_record_at_the_item_limit_moves_its_history_out_and_takes_the_next_transitions(
    control_harness: FaultHarness,
) -> None:
    """A record that grew to the limit before its history was bounded: DynamoDB refuses the next
    transition as too large, so the store moves the older history out and writes it again."""
    harness = control_harness
    status = harness.status
    backfill_id = harness.submit().backfill_id
    key = {"backfill_id": {"S": backfill_id}}
    item = harness.dynamodb.get_item(TableName=TABLE, Key=key)["Item"]
    entry = {
        "state": {"S": "RUNNING"},
        "at": {"S": "2021-06-14T09:00:00+00:00"},
        "detail": {"S": LONG[:1000]},
    }
    fits, too_many = 1, 400
    while too_many - fits > 1:  # the most entries the item may hold
        count = (fits + too_many) // 2
        try:
            harness.dynamodb.put_item(
                TableName=TABLE, Item={**item, "history": {"L": [{"M": entry}] * count}}
            )
            fits = count
        except harness.dynamodb.exceptions.ClientError:
            too_many = count
    harness.dynamodb.put_item(TableName=TABLE, Item={**item, "history": {"L": [{"M": entry}] * fits}})

    for turn in range(30):
        status.transition(backfill_id, BackfillState.RUNNING, detail=f"round {turn}: {LONG}", by=PRINCIPAL)

    assert harness.item_size(backfill_id) < ITEM_BOUND
    whole = status.get(backfill_id, full_history=True).history
    assert len(whole) == fits + 30
    assert [entry["detail"].split(":")[0] for entry in whole[fits:]] == [
        f"round {turn}" for turn in range(30)
    ]
