"""Controls tell the truth: `backfill cancel|retry|approve|reject` (and the client) check what
they can before writing, wait for the trigger's answer (its result file) by default, print the
outcome with its reason and exit 0 done, 1 refused or rejected, 2 when no answer came. The
trigger runs in-process (the test harness) and receives each control document's S3 event
while the command waits, as in a deployment."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from backfill_orchestrator.cli import main
from backfill_orchestrator.client import (
    CONTROLS,
    ControlStatus,
    approve_backfill,
    cancel_backfill,
    retry_backfill,
)
from backfill_orchestrator.policy import ACTION_STATES
from backfill_orchestrator.status import BackfillState
from backfill_orchestrator.trigger.control_actions import NOT_STARTED, RETRYABLE, RUNNING
from tests.support.trigger import TABLE, VALID, TriggerHarness

FINISHED = "etl-orders-0604-aaaaaaaa"


@pytest.fixture
def harness(mocked_aws: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[TriggerHarness]:
    for name in ("STATUS_TABLE", "CONFIG_BUCKET", "CONTROL_PREFIX", "RESULTS_PREFIX"):
        monkeypatch.delenv(name, raising=False)
    with ExitStack() as stack:
        harness = TriggerHarness(stack)
        harness.airflow.dag_ids |= {"email_discounts", "orders_popular_day_of_week"}  # the plan's reruns
        harness.status.create(FINISHED)
        for state in (BackfillState.PLANNED, BackfillState.TRIGGERED, BackfillState.SUCCEEDED):
            harness.status.transition(FINISHED, state, detail=str(state))
        yield harness


def controls_written(harness: TriggerHarness) -> list[str]:
    listed = harness.s3.list_objects_v2(Bucket=harness.bucket, Prefix="control/").get("Contents", [])
    return [obj["Key"] for obj in listed]


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def submitted(harness: TriggerHarness) -> str:
    """The sample config, uploaded and handled by the trigger (TRIGGERED)."""
    (result,) = harness.invoke(harness.upload(VALID))
    assert str(result.state) == "TRIGGERED", result
    return str(result.backfill_id)


def test_cancel_and_retry_of_a_succeeded_backfill_are_refused_before_anything_is_written(harness, capsys):
    for action in ("cancel", "retry"):
        code, out, _ = cli(
            capsys, action, FINISHED, "--reason", "x", "--bucket", harness.bucket, "--table", TABLE
        )
        allowed = ", ".join(sorted(ACTION_STATES[action]))
        assert code == 1
        assert out.splitlines() == [
            f"{action} {FINISHED}: refused: cannot {action} {FINISHED} in state SUCCEEDED "
            f"(only in {allowed}); nothing written"
        ]
    assert controls_written(harness) == []


def test_an_unknown_backfill_is_refused_before_any_upload(harness, capsys):
    code, out, _ = cli(
        capsys,
        "cancel",
        "nonexistent-12345678",
        "--reason",
        "x",
        "--bucket",
        harness.bucket,
        "--table",
        TABLE,
    )
    assert code == 1
    assert out == (
        "cancel nonexistent-12345678: refused: unknown backfill 'nonexistent-12345678': "
        f"no status record in {TABLE}; nothing written\n"
    )
    assert controls_written(harness) == []


def test_without_a_status_table_the_trigger_refuses_and_the_command_says_why(harness, capsys):
    with harness.delivering():
        code, out, err = cli(capsys, "cancel", FINISHED, "--reason", "x", "--bucket", harness.bucket)
    assert code == 1
    assert "not checked: the backfill's state before writing (no status table" in err
    assert out.splitlines()[-1] == (
        f"cancel {FINISHED}: refused: cannot cancel: backfill {FINISHED} has already ended (SUCCEEDED)"
    )
    with harness.delivering():
        code, out, _ = cli(
            capsys, "cancel", "nonexistent-12345678", "--reason", "x", "--bucket", harness.bucket
        )
    assert code == 1
    assert out.splitlines()[-1] == (
        "cancel nonexistent-12345678: refused: unknown backfill 'nonexistent-12345678': no status record"
    )


def test_a_cancel_the_trigger_carries_out_prints_done_and_the_new_state(harness, capsys):
    backfill = submitted(harness)
    with harness.delivering():
        code, out, _ = cli(
            capsys,
            "cancel",
            backfill,
            "--reason",
            "wrong dates",
            "--bucket",
            harness.bucket,
            "--table",
            TABLE,
            "--requested-by",
            "@jane",
        )
    lines = out.splitlines()
    assert code == 0, out
    assert lines[0].startswith(f"cancel of {backfill} requested by @jane: s3://{harness.bucket}/control/")
    assert lines[1].startswith(f"cancel {backfill}: done: cancelled: stopped DAG run backfill/{backfill}")
    assert lines[1].endswith("(now CANCELLED)")
    assert str(harness.status.get(backfill).state) == "CANCELLED"


def test_the_client_returns_a_typed_outcome_and_json_says_the_same(harness, capsys):
    backfill = submitted(harness)
    moves = []

    def trigger_acts(seconds: float) -> None:  # the client's pause: the trigger handles the document
        moves.append(seconds)
        harness.deliver_new()

    outcome = retry_backfill(
        backfill, reason="again", bucket=harness.bucket, requested_by="@jane", sleep=trigger_acts
    )
    assert outcome.status is ControlStatus.REFUSED and not outcome.ok
    assert (
        outcome.reason == f"cannot retry {backfill}: it is TRIGGERED; cancel it first or wait for it to end"
    )
    assert outcome.state == "TRIGGERED" and moves  # it waited, then read the trigger's answer
    assert outcome.result_uri == f"s3://{harness.bucket}/results/{outcome.key}.result.json"

    with harness.delivering():
        code, out, _ = cli(
            capsys,
            "cancel",
            backfill,
            "--reason",
            "x",
            "--bucket",
            harness.bucket,
            "--requested-by",
            "@jane",
            "--json",
        )
    printed = json.loads(out)
    assert code == 0
    assert (
        printed["status"] == "done" and printed["state"] == "CANCELLED" and printed["requested_by"] == "@jane"
    )


def test_no_answer_in_time_exits_2_and_no_wait_exits_0_once_written(harness, capsys):
    code, out, _ = cli(
        capsys,
        "cancel",
        FINISHED,
        "--reason",
        "x",
        "--bucket",
        harness.bucket,
        "--requested-by",
        "@j",
        "--timeout",
        "0",
    )
    assert code == 2
    assert (
        f"cancel {FINISHED}: timed_out: no answer from the trigger within 0 s; it may still act: see s3://"
        in out
    )
    code, out, _ = cli(
        capsys,
        "cancel",
        FINISHED,
        "--reason",
        "x",
        "--bucket",
        harness.bucket,
        "--requested-by",
        "@j",
        "--no-wait",
    )
    assert code == 0 and out.startswith(f"cancel of {FINISHED} requested by @j: s3://")
    assert len(controls_written(harness)) == 2  # neither checked before writing: no table given


def test_approve_and_reject_are_commands_and_refuse_what_awaits_no_approval(harness, capsys):
    for action in ("approve", "reject"):
        code, out, _ = cli(
            capsys, action, FINISHED, "--reason", "ok", "--bucket", harness.bucket, "--table", TABLE
        )
        assert code == 1
        assert f"{action} {FINISHED}: refused: cannot {action} {FINISHED} in state SUCCEEDED" in out
    outcome = approve_backfill(FINISHED, bucket=harness.bucket, table=TABLE, requested_by="@ana")
    assert outcome.status is ControlStatus.REFUSED and outcome.key is None  # nothing written
    assert main(["approve", "--help"]) == 0 and "--no-wait" in capsys.readouterr().out


def test_the_control_table_is_the_lifecycles_rules():
    """One entry per control (adding one is one entry); its states are the policy's and the trigger's."""
    assert set(CONTROLS) == {"cancel", "retry", "approve", "reject", "publish", "discard", "undo"}
    for action, control in CONTROLS.items():
        assert control.allowed_states == ACTION_STATES[action]
    trigger_cancel = {str(state) for state in NOT_STARTED | RUNNING} | {"CANCELLED"}
    assert CONTROLS["cancel"].allowed_states == trigger_cancel
    assert CONTROLS["retry"].allowed_states == {str(state) for state in RETRYABLE}


def test_the_client_cancel_without_waiting_is_sent(harness):
    outcome = cancel_backfill(FINISHED, reason="x", bucket=harness.bucket, requested_by="@jane", wait=False)
    assert outcome.status is ControlStatus.SENT and outcome.ok and outcome.key in controls_written(harness)
