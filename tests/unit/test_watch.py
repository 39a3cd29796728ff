"""`backfill watch`: follows the record to its end; exit codes by outcome."""

from __future__ import annotations

from datetime import UTC, datetime

import boto3
import pytest

from backfill_orchestrator.cli import main
from backfill_orchestrator.status import BackfillState, StatusStore
from backfill_orchestrator.status.watch import WatchTimeoutError, follow, progress_line
from tests.support.aws import create_table


@pytest.fixture
def store(mocked_aws, monkeypatch):
    client = boto3.client("dynamodb", region_name="us-east-1")
    create_table(client, "StatusTable", table_name="status")
    monkeypatch.setenv("STATUS_TABLE", "status")
    return StatusStore(table_name="status", dynamodb_client=client)


def scripted(store: StatusStore, steps):
    """A `sleep` that moves the backfill on one step per poll."""
    pending = list(steps)

    def sleep(_seconds: float) -> None:
        if pending:
            pending.pop(0)()

    return sleep


def test_follow_yields_each_change_and_stops_at_the_end(store):
    store.create("b-00000001")
    moves = scripted(
        store,
        [
            lambda: None,  # no change: nothing yielded
            lambda: store.transition("b-00000001", BackfillState.PLANNED, detail="planned"),
            lambda: store.transition("b-00000001", BackfillState.TRIGGERED, detail="run"),
            lambda: store.annotate(
                "b-00000001", {"progress": {"steps_done": 1, "steps_total": 4, "wave": 1, "waves": 3}}
            ),
            lambda: store.transition("b-00000001", BackfillState.SUCCEEDED, detail="done"),
        ],
    )
    seen = list(follow(lambda: store.get("b-00000001"), interval=0, sleep=moves, timeout=30))
    assert [str(r.state) for r in seen] == ["RECEIVED", "PLANNED", "TRIGGERED", "TRIGGERED", "SUCCEEDED"]
    line = progress_line(seen[3], now=datetime.now(UTC))
    assert line.startswith("b-00000001 TRIGGERED  steps 1/4  wave 1/3  ")


def test_a_retryable_failure_is_followed_on(store):
    store.create("b-00000002")
    store.transition(
        "b-00000002", BackfillState.FAILED, detail="Marquez down", attributes={"retryable": True}
    )
    moves = scripted(store, [lambda: store.annotate("b-00000002", {"retryable": False})])
    assert [
        r.retryable for r in follow(lambda: store.get("b-00000002"), interval=0, sleep=moves, timeout=30)
    ] == [True, False]


def test_timeout(store):
    store.create("b-00000003")
    ticks = iter(range(100))
    with pytest.raises(WatchTimeoutError):
        list(
            follow(
                lambda: store.get("b-00000003"),
                interval=0,
                timeout=3,
                clock=lambda: next(ticks),
                sleep=lambda s: None,
            )
        )


@pytest.mark.parametrize(
    ("final", "code"), [(BackfillState.SUCCEEDED, 0), (BackfillState.REJECTED, 1), (BackfillState.FAILED, 1)]
)
def test_cli_exit_codes(store, capsys, final, code):
    store.create("b-00000004")
    if final is BackfillState.REJECTED:
        store.transition("b-00000004", final, detail="no")
    else:
        store.transition("b-00000004", BackfillState.PLANNED, detail="p")
        store.transition("b-00000004", final, detail="end")
    assert main(["watch", "b-00000004", "--interval", "0"]) == code
    assert capsys.readouterr().out.splitlines()[-1].startswith(f"b-00000004 {final}")


def test_cli_timeout_is_exit_2(store, capsys):
    store.create("b-00000005")
    assert main(["watch", "b-00000005", "--interval", "0.01", "--timeout", "0.05"]) == 2
    assert "not ended after" in capsys.readouterr().out
