"""The status table's conditional transitions, on moto's DynamoDB."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from moto import mock_aws

from backfill_orchestrator.status import (
    ALLOWED_FROM,
    BackfillState,
    RecordExistsError,
    RecordNotFoundError,
    StatusStore,
    TransitionRejectedError,
)
from backfill_orchestrator.status.model import TRIGGER_FROM
from backfill_orchestrator.status.store import StatusStoreError
from tests.support.aws import create_table

S = BackfillState


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2021, 6, 14, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch, clock: Clock) -> Iterator[StatusStore]:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_table(client, "StatusTable", table_name="status")
        yield StatusStore(table_name="status", dynamodb_client=client, clock=clock)


def test_create_once_then_the_existing_record_comes_back(store: StatusStore) -> None:
    created = store.create("b-1", upload_id="u1", attributes={"name": "b", "owner": "@jane", "mode": "batch"})
    assert created.state is S.RECEIVED and created.version == 1 and created.uploads == {"u1"}

    with pytest.raises(RecordExistsError) as raised:
        store.create("b-1", upload_id="u2")
    assert raised.value.existing.owner == "@jane" and raised.value.existing.uploads == {"u1"}


def test_the_happy_path_records_history_and_attributes(store: StatusStore, clock: Clock) -> None:
    store.create("b-1")
    clock.now += timedelta(seconds=5)
    store.transition("b-1", S.PLANNED, detail="2 waves", attributes={"plan_uri": "s3://b/p.json"})
    record = store.transition("b-1", S.TRIGGERED, attributes={"dag_run_id": "b-1", "dag_run_url": "http://x"})

    assert record.state is S.TRIGGERED and record.version == 3
    assert [h["state"] for h in record.history] == ["RECEIVED", "PLANNED", "TRIGGERED"]
    assert record.history[1] == {"state": "PLANNED", "at": "2021-06-14T09:00:05+00:00", "detail": "2 waves"}
    assert record.plan_uri == "s3://b/p.json" and record.dag_run_url == "http://x"
    assert store.get("b-1") == record


@pytest.mark.parametrize(
    ("path", "target"),
    [
        ([S.PLANNED, S.AWAITING_APPROVAL], S.RUNNING),  # nothing runs while awaiting approval
        ([S.REJECTED], S.PLANNED),  # REJECTED is final
        ([S.PLANNED, S.TRIGGERED, S.SUCCEEDED], S.RUNNING),  # SUCCEEDED is final
        ([S.PLANNED, S.TRIGGERED], S.PLANNED),  # never backwards
    ],
)
def test_transitions_outside_the_table_are_rejected_with_the_current_record(
    store: StatusStore, path: list[BackfillState], target: BackfillState
) -> None:
    store.create("b-1")
    for state in path:
        store.transition("b-1", state)
    with pytest.raises(TransitionRejectedError) as raised:
        store.transition("b-1", target)
    assert raised.value.current.state is (path[-1] if path else S.RECEIVED)


def test_every_state_but_received_is_reachable_by_transition() -> None:
    assert set(ALLOWED_FROM) == set(S) - {S.RECEIVED}


def test_expected_version_guards_against_concurrent_writers(store: StatusStore) -> None:
    record = store.create("b-1")
    store.transition("b-1", S.PLANNED, expected_version=record.version)
    with pytest.raises(TransitionRejectedError):
        store.transition("b-1", S.FAILED, expected_version=record.version)


def test_unknown_record_and_unknown_attribute_are_named_errors(store: StatusStore) -> None:
    with pytest.raises(RecordNotFoundError):
        store.transition("missing", S.PLANNED)
    store.create("b-1")
    with pytest.raises(ValueError, match="not settable"):
        store.transition("b-1", S.PLANNED, attributes={"state": "SUCCEEDED"})


def test_reclaim_only_a_retryable_failure_or_an_expired_lease(store: StatusStore, clock: Clock) -> None:
    store.create("b-1", lease_seconds=60)
    assert store.reclaim("b-1", lease_seconds=60, detail="too early") is None
    clock.now += timedelta(seconds=61)
    taken = store.reclaim("b-1", lease_seconds=60, detail="lease over")
    assert taken is not None and taken.attempts == 2

    store.transition("b-1", S.FAILED, attributes={"reason": "Marquez down", "retryable": True})
    again = store.reclaim("b-1", lease_seconds=60, detail="retry")
    assert again.state is S.RECEIVED and again.attempts == 3 and again.reason is None and not again.retryable

    store.transition("b-1", S.FAILED, attributes={"reason": "replay disabled", "retryable": False})
    assert store.reclaim("b-1", lease_seconds=60, detail="retry") is None


def test_uploads_are_remembered_once(store: StatusStore) -> None:
    store.create("b-1", upload_id="u1")
    assert store.add_upload("b-1", "u2") is True
    assert store.add_upload("b-1", "u2") is False
    assert store.get("b-1").uploads == {"u1"}  # further uploads are items of their own
    assert store.get("b-1#upload#u2") is None  # which are not records


def test_the_first_slack_thread_wins(store: StatusStore) -> None:
    store.create("b-1")
    assert store.set_slack_thread("b-1", channel="C1", ts="1.000100") == "1.000100"
    assert store.set_slack_thread("b-1", channel="C2", ts="2.000200") == "1.000100"
    record = store.get("b-1")
    assert (record.slack_channel, record.slack_thread_ts) == ("C1", "1.000100")


def test_a_transition_carries_the_slack_thread_unless_one_is_stored(store: StatusStore) -> None:
    store.create("b-1")
    record = store.transition("b-1", BackfillState.TRIGGERED, slack_thread=("C1", "1.000100"))
    assert (record.slack_channel, record.slack_thread_ts) == ("C1", "1.000100")
    # The DAG opened a thread first: the trigger's write keeps it (and says so).
    store.create("b-2")
    store.set_slack_thread("b-2", channel="C9", ts="9.000900")
    record = store.transition(
        "b-2", BackfillState.TRIGGERED, attributes={"dag_run_id": "b-2"}, slack_thread=("C1", "1.000100")
    )
    assert (record.slack_channel, record.slack_thread_ts, record.dag_run_id) == ("C9", "9.000900", "b-2")
    store.annotate("b-2", {}, slack_thread=("C2", "2.000200"))
    assert store.get("b-2").slack_thread_ts == "9.000900"
    store.create("b-3")
    store.annotate("b-3", {"dag_run_id": "b-3"}, slack_thread=("C3", "3.000300"))
    assert (store.get("b-3").slack_channel, store.get("b-3").slack_thread_ts) == ("C3", "3.000300")


def test_states_reads_many_records_in_one_batch_and_asks_again_for_unprocessed_keys(
    store: StatusStore,
) -> None:
    ids = [f"b-{i:03d}" for i in range(150)]
    for backfill_id in ids[:120]:
        store.create(backfill_id)
    store.transition("b-007", BackfillState.REJECTED, detail="x")
    client = store._client
    calls: list[int] = []
    real = client.batch_get_item

    def first_answer_leaves_keys_unprocessed(**kwargs):  # noqa: ANN003, ANN202 - botocore's shape
        keys = kwargs["RequestItems"]["status"]["Keys"]
        calls.append(len(keys))
        answer = real(**kwargs)
        if len(calls) == 1:  # DynamoDB may answer part of a batch (throttling): the rest comes back
            kept = {key["backfill_id"]["S"] for key in keys[:10]}
            answer["Responses"]["status"] = [
                i for i in answer["Responses"]["status"] if i["backfill_id"]["S"] not in kept
            ]
            answer["UnprocessedKeys"] = {"status": {"Keys": keys[:10]}}
        return answer

    client.batch_get_item = first_answer_leaves_keys_unprocessed
    slept: list[float] = []
    states = store.states([*ids, "b-001"], sleep=slept.append)
    assert calls == [100, 10, 50] and slept == [0.05]  # 100 keys a request; 10 asked again
    assert set(states) == set(ids[:120])  # no record: not in the answer
    assert states["b-007"] is BackfillState.REJECTED and states["b-119"] is BackfillState.RECEIVED


def test_states_raises_when_keys_stay_unprocessed(store: StatusStore) -> None:
    store.create("b-1")
    client = store._client
    client.batch_get_item = lambda **kwargs: {
        "Responses": {},
        "UnprocessedKeys": {"status": {"Keys": kwargs["RequestItems"]["status"]["Keys"]}},
    }
    with pytest.raises(StatusStoreError, match="still unprocessed after 8 rounds"):
        store.states(["b-1"], sleep=lambda seconds: None)


def test_the_dag_side_can_report_progress_after_a_trigger(store: StatusStore) -> None:
    """What the generic DAG does: RUNNING (repeatedly), FAILED, cleared and rerun, SUCCEEDED."""
    store.create("b-1")
    store.transition("b-1", S.PLANNED)
    store.transition("b-1", S.TRIGGERED)
    store.transition("b-1", S.RUNNING, detail="wave 1 of 2")
    store.transition("b-1", S.RUNNING, detail="wave 2 of 2")
    store.transition("b-1", S.FAILED, attributes={"reason": "task failed"})
    store.transition("b-1", S.RUNNING, detail="cleared")
    assert store.transition("b-1", S.SUCCEEDED).state is S.SUCCEEDED


def test_cli_status_prints_the_record(store: StatusStore, monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # noqa: ANN001
    from backfill_orchestrator.cli import main

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    store.create("orders-fix-1a2b3c4d", attributes={"name": "orders-fix", "owner": "@jane", "mode": "batch"})
    store.transition(
        "orders-fix-1a2b3c4d", S.PLANNED, attributes={"plan_summary": {"waves": [["etl_orders"]], "steps": 1}}
    )

    assert main(["status", "orders-fix-1a2b3c4d", "--table", "status"]) == 0
    out = capsys.readouterr().out
    assert (
        out.startswith("orders-fix-1a2b3c4d: PLANNED") and "wave 1: etl_orders" in out and "RECEIVED" in out
    )
    monkeypatch.setenv("STATUS_TABLE", "status")
    assert main(["status", "orders-fix-1a2b3c4d", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["state"] == "PLANNED"
    assert main(["status", "nothing-00000000"]) == 1


def test_cli_status_without_a_table_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # noqa: ANN001
    from backfill_orchestrator.cli import main

    monkeypatch.delenv("STATUS_TABLE", raising=False)
    assert main(["status", "x"]) == 2
    assert "pass --table or set STATUS_TABLE" in capsys.readouterr().err


def test_a_lease_held_by_the_same_request_id_is_taken_over_at_once_keeping_the_state(
    store: StatusStore,
) -> None:
    store.create("b-1", lease_seconds=300, lease_holder="req-1")
    store.transition("b-1", S.PLANNED, attributes={"plan_uri": "s3://b/backfills/b-1/plan.json"})

    assert (
        store.reclaim("b-1", lease_seconds=300, holder="req-2", detail="S3 duplicate") is None
    )  # may be running
    taken = store.reclaim("b-1", lease_seconds=300, holder="req-1", detail="Lambda retry")

    assert taken.state is S.PLANNED and taken.attempts == 2 and taken.lease_holder == "req-1"
    assert taken.plan_uri == "s3://b/backfills/b-1/plan.json"
    store.transition("b-1", S.TRIGGERED)
    assert store.reclaim("b-1", lease_seconds=300, holder="req-1", detail="again") is None  # past takeover


def test_records_keep_the_first_errors_and_plan_steps_with_counts(store: StatusStore) -> None:
    store.create("b-1")
    errors = [{"location": f"dates[{i}]", "message": "x" * 900} for i in range(1000)]
    summary = {"waves": [[f"job_{i}" for i in range(5000)], ["last"]], "steps": 5001, "warnings": ["w"] * 30}
    store.transition("b-1", S.PLANNED, attributes={"plan_summary": summary})
    record = store.transition("b-1", S.FAILED, attributes={"errors": errors, "reason": "r" * 5000})

    assert (
        len(record.errors) == 20 and record.errors_total == 1000 and len(record.errors[0]["message"]) == 500
    )
    assert len(record.reason) == 2000
    assert [len(wave) for wave in record.plan_summary["waves"]] == [50]
    assert record.plan_summary["waves_total"] == 2 and record.plan_summary["truncated"] is True
    assert len(record.plan_summary["warnings"]) == 20 and record.plan_summary["warnings_total"] == 30


def test_a_transition_other_than_to_failed_ends_a_retryable_failure(store: StatusStore) -> None:
    store.create("b-1")
    store.transition("b-1", S.PLANNED)
    store.transition("b-1", S.FAILED, attributes={"reason": "Airflow down", "retryable": True})
    assert store.transition("b-1", S.RUNNING, detail="a cleared run").retryable is False


def test_only_from_narrows_the_states_a_transition_may_follow(store: StatusStore) -> None:
    from backfill_orchestrator.status import TRIGGER_FROM, TransitionRejectedError

    store.create("b-1")
    assert (
        store.transition("b-1", S.TRIGGERED, only_from=TRIGGER_FROM).state is S.TRIGGERED
    )  # RECEIVED: PLANNED folded in
    store.create("b-2")
    store.transition(
        "b-2", S.RUNNING, detail="the DAG, before the trigger recorded its run"
    )  # accepted from RECEIVED
    with pytest.raises(TransitionRejectedError) as rejected:
        store.transition("b-2", S.TRIGGERED, only_from=TRIGGER_FROM)
    assert rejected.value.current.state is S.RUNNING
    store.transition("b-2", S.FAILED)
    assert store.transition("b-2", S.TRIGGERED).state is S.TRIGGERED  # a retry attempt, unrestricted
    with pytest.raises(ValueError, match="not a target"):
        store.transition("b-2", S.TRIGGERED, only_from=[S.SUCCEEDED])


# -- the history's bound (status/history.py) ------------------------------------------------------
def cycle(store: StatusStore, backfill_id: str, count: int) -> None:
    for turn in range(count):
        target = S.CANCELLED if turn % 2 == 0 else S.TRIGGERED
        store.transition(backfill_id, target, detail=f"turn {turn}", by="@oncall")


def test_the_history_moves_out_in_chunks_and_reads_back_whole(store: StatusStore) -> None:
    from backfill_orchestrator.status.history import HISTORY_CHUNK, HISTORY_KEPT
    from backfill_orchestrator.status.listing import ListFilter, list_backfills

    store.create("b-1", detail="created")
    store.transition("b-1", S.TRIGGERED, detail="triggered")
    cycle(store, "b-1", 45)

    record = store.get("b-1")
    assert record.history_archived % HISTORY_CHUNK == 0 and record.history_archived == 30
    assert HISTORY_KEPT <= len(record.history) < HISTORY_KEPT + HISTORY_CHUNK
    whole = store.get("b-1", full_history=True)
    assert len(whole.history) == 47 == record.history_archived + len(record.history)
    assert [entry.get("detail") for entry in whole.history] == [
        "created",
        "triggered",
        *(f"turn {turn}" for turn in range(45)),
    ]
    assert whole.history[-len(record.history) :] == record.history
    assert store.get("b-1#history#0") is None  # a chunk is not a record
    listed = list_backfills(
        dynamodb_client=store.client,
        table_name="status",
        where=ListFilter(),
        today=datetime(2021, 6, 14).date(),
    )
    assert [r.backfill_id for r in listed] == ["b-1"]


def test_a_move_another_writer_made_first_changes_nothing(store: StatusStore) -> None:
    store.create("b-1", detail="created")
    cycle(store, "b-1", 25)
    before = store.get("b-1")
    assert before.history_archived == 10
    raw = store.client.get_item(TableName="status", Key={"backfill_id": {"S": "b-1"}})["Item"]["history"]["L"]
    # A writer that read the record before the move repeats it: its conditions fail, nothing moves.
    assert store._move_history("b-1", raw, 0, 1) is False
    assert store.get("b-1") == before
    assert len(store.get("b-1", full_history=True).history) == 26


def test_a_move_that_fails_leaves_the_transition_done_and_the_next_write_moves(
    store: StatusStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from botocore.exceptions import ClientError

    store.create("b-1", detail="created")
    cycle(store, "b-1", 18)
    client = store.client
    real = client.transact_write_items

    def throttled(**kwargs):  # noqa: ANN003, ANN202 - botocore's shape
        error = {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"}}
        raise ClientError(error, "TransactWriteItems")

    monkeypatch.setattr(client, "transact_write_items", throttled)
    moved_later = store.transition("b-1", S.CANCELLED, detail="turn 18")
    assert moved_later.state is S.CANCELLED and moved_later.history_archived == 0
    assert len(store.get("b-1").history) == 20
    monkeypatch.setattr(client, "transact_write_items", real)
    store.transition("b-1", S.TRIGGERED, detail="turn 19")
    assert store.get("b-1").history_archived == 10
    assert len(store.get("b-1", full_history=True).history) == 21


def sent_operations(store: StatusStore) -> list[str]:
    """The names of the DynamoDB operations `store`'s client sends from now on."""
    sent: list[str] = []
    store.client.meta.events.register(
        "before-call.dynamodb", lambda model, **_: sent.append(model.name), unique_id="sent-operations"
    )
    return sent


def test_a_held_record_is_replaced_whole_with_what_the_update_would_leave(
    store: StatusStore, clock: Clock
) -> None:
    attributes = {"name": "b", "owner": "@jane", "mode": "batch"}
    held, unheld = (store.create(key, upload_id="u1", attributes=attributes) for key in ("b-1", "b-2"))
    clock.now += timedelta(seconds=5)
    sent = sent_operations(store)
    triggered = {"dag_run_id": "run", "plan_summary": {"waves": [["a"]], "steps": 1}, "reason": None}
    replaced = store.transition(
        "b-2", S.TRIGGERED, detail="run", attributes=triggered, slack_thread=("C1", "1.1"), held=unheld
    )
    assert sent == ["PutItem"]  # b-2 is the record the store wrote last
    updated = store.transition(
        "b-1", S.TRIGGERED, detail="run", attributes=triggered, slack_thread=("C1", "1.1"), held=held
    )
    assert sent == ["PutItem", "UpdateItem"]  # b-1 is not: the update, as without `held`
    stored = {
        key: store.client.get_item(TableName="status", Key={"backfill_id": {"S": key}})["Item"]
        for key in ("b-1", "b-2")
    }
    for item in stored.values():
        del item["backfill_id"], item["revision"]
    assert stored["b-1"] == stored["b-2"]
    assert replace(replaced, backfill_id="b-1") == updated
    assert (
        replaced.version == 2
        and replaced.slack_thread_ts == "1.1"
        and replaced.history[-1]["detail"] == "run"
    )


def test_a_held_record_another_writer_changed_is_updated_as_it_stands(store: StatusStore) -> None:
    other = StatusStore(table_name="status", dynamodb_client=store.client)  # the DAG, a control document
    held = store.create("b-1")
    other.set_slack_thread("b-1", channel="C9", ts="9.9")  # leaves the version as it is
    other.annotate("b-1", {"pagerduty_open": True})
    sent = sent_operations(store)
    record = store.transition("b-1", S.TRIGGERED, slack_thread=("C1", "1.1"), held=held)
    assert sent == ["PutItem", "UpdateItem"]  # the put's condition failed: nothing of theirs is lost
    assert (record.slack_thread_ts, record.pagerduty_open, record.version) == ("9.9", True, 2)

    held = store.create("b-2")
    other.transition("b-2", S.RUNNING)  # the DAG got ahead
    with pytest.raises(TransitionRejectedError) as rejected:
        store.transition("b-2", S.TRIGGERED, only_from=TRIGGER_FROM, held=held)
    assert rejected.value.current.state is S.RUNNING
    assert store.get("b-2").state is S.RUNNING


def test_held_transitions_move_the_history_out_and_one_another_writer_moved_is_updated(
    store: StatusStore,
) -> None:
    other = StatusStore(table_name="status", dynamodb_client=store.client)
    record = store.create("b-1", detail="created")
    sent = sent_operations(store)
    for turn in range(25):
        target = S.CANCELLED if turn % 2 == 0 else S.TRIGGERED
        record = store.transition("b-1", target, detail=f"turn {turn}", held=record)
    # Each replaced the item the last one left, but the one after the history moved out (a
    # transaction): the store does not hold the moved item, so that one is an update.
    assert Counter(sent) == Counter({"PutItem": 24, "TransactWriteItems": 1, "UpdateItem": 1})
    assert record.history_archived == store.get("b-1").history_archived == 10
    whole = store.get("b-1", full_history=True)
    assert [entry.get("detail") for entry in whole.history] == ["created", *(f"turn {t}" for t in range(25))]

    # Another writer's move of the history leaves the revision as it is: the put must not undo it.
    raw = store.client.get_item(TableName="status", Key={"backfill_id": {"S": "b-1"}})["Item"]["history"]["L"]
    assert other._move_history("b-1", raw, 10, 1)  # noqa: SLF001 - a writer that moved ten more first
    record = store.transition("b-1", S.TRIGGERED, detail="last", held=record)
    assert sent[-2:] == ["PutItem", "UpdateItem"]
    whole = store.get("b-1", full_history=True)
    assert [entry.get("detail") for entry in whole.history][-2:] == ["turn 24", "last"]
    assert len(whole.history) == 27
