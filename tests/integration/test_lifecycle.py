"""Managed backfills on moto and the Airflow double: control documents (cancel, retry, start),
resubmission after a rejection, and overlap protection (wait and refuse), with claims
released on every terminal path."""

from __future__ import annotations

import json
from contextlib import ExitStack
from datetime import UTC, date, datetime
from typing import Any

import pytest

from backfill_orchestrator.claims import registry_for
from backfill_orchestrator.contracts import AttemptDone, BackfillReport
from backfill_orchestrator.status import BackfillState
from tests.support.aws import create_table
from tests.support.trigger import CLAIMS, VALID, TriggerHarness, second_config

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def control(
    harness: TriggerHarness,
    backfill_id: str,
    action: str,
    *,
    reason: str = "because",
    folder: str | None = None,
    extra: dict[str, Any] | None = None,
    fmt: str = "json",
):  # noqa: ANN201
    document = {
        "control_version": 1,
        "action": action,
        "backfill_id": backfill_id,
        "reason": reason,
        "requested_by": "@oncall",
        "requested_at": NOW.isoformat(),
        **(extra or {}),
    }
    key = f"control/{folder or backfill_id}/{action}-{harness.next_sequencer()}.{fmt}"
    body = (
        json.dumps(document).encode()
        if fmt == "json"
        else "\n".join(f"{k}: {json.dumps(v)}" for k, v in document.items()).encode()
    )
    event = harness.upload(body, key=key)
    (result,) = harness.invoke(event)
    return result, key, event


def control_result(harness: TriggerHarness, key: str) -> dict[str, Any]:
    body = harness.s3.get_object(Bucket=harness.bucket, Key=f"results/{key}.result.json")["Body"].read()
    return json.loads(body)


def claims_of(harness: TriggerHarness) -> dict[str, list[str]]:
    return registry_for(
        dynamodb_client=harness.dynamodb, table_name=CLAIMS, status_store=harness.status, s3_client=harness.s3
    ).holders()


# -- control documents ----------------------------------------------------------------------
def test_an_invalid_control_document_is_refused_with_located_errors(lifecycle: TriggerHarness) -> None:
    backfill_id = lifecycle.submit().backfill_id
    result, key, _ = control(lifecycle, backfill_id, "pause", extra={"colour": "red"})
    assert result.disposition == "rejected"
    written = control_result(lifecycle, key)
    assert written["outcome"] == "rejected"
    locations = {error["location"] for error in written["errors"]}
    assert {"action", "colour"} <= locations
    assert lifecycle.status.get(backfill_id).state is BackfillState.TRIGGERED  # nothing changed


def test_a_control_document_for_an_unknown_backfill_or_another_folder_is_refused(
    lifecycle: TriggerHarness,
) -> None:
    result, key, _ = control(lifecycle, "nobody-00000000", "cancel")
    assert result.disposition == "rejected" and "unknown backfill" in control_result(lifecycle, key)["reason"]
    backfill_id = lifecycle.submit().backfill_id
    result, key, _ = control(lifecycle, backfill_id, "cancel", folder="elsewhere-00000000")
    errors = control_result(lifecycle, key)["errors"]
    assert errors[0]["location"] == "backfill_id" and "not the folder" in errors[0]["message"]


def test_duplicate_delivery_of_a_control_document_acts_once(lifecycle: TriggerHarness) -> None:
    backfill_id = lifecycle.submit().backfill_id
    result, key, event = control(lifecycle, backfill_id, "cancel", fmt="yaml")
    assert result.disposition == "accepted"
    patches = [r for r in lifecycle.airflow.requests if r["method"] == "PATCH"]
    for _ in range(3):
        (again,) = lifecycle.invoke(event)
        assert again.disposition == "duplicate"
    assert [r for r in lifecycle.airflow.requests if r["method"] == "PATCH"] == patches
    record = lifecycle.status.get(backfill_id)
    assert record.state is BackfillState.CANCELLED and record.controls == frozenset()
    action = lifecycle.action_item(backfill_id, event)  # remembered in an item of its own
    assert (action["phase"], action["outcome"], action["attempts"]) == ("done", "done", 1)


def test_cancel_of_a_triggered_backfill_fails_its_dag_run_and_running_reruns(
    lifecycle: TriggerHarness,
) -> None:
    backfill_id = lifecycle.submit().backfill_id
    lifecycle.airflow.set_state("backfill", backfill_id, "running")
    # a downstream rerun this backfill started, still running, and one of another day
    for day, run_id in (
        (date(2021, 6, 4), "backfill__x__2021-06-04"),
        (date(2021, 5, 1), "scheduled__2021-05-01"),
    ):
        lifecycle.airflow.runs[("email_discounts", run_id)] = {
            **lifecycle.airflow._new_run("email_discounts", _trigger_body(run_id, day)),
            "state": "running",
        }
    result, key, _ = control(lifecycle, backfill_id, "cancel", reason="wrong dates")
    assert result.disposition == "accepted"
    assert lifecycle.airflow.runs[("backfill", backfill_id)]["state"] == "failed"
    assert lifecycle.airflow.runs[("email_discounts", "backfill__x__2021-06-04")]["state"] == "failed"
    assert (
        lifecycle.airflow.runs[("email_discounts", "scheduled__2021-05-01")]["state"] == "running"
    )  # not ours
    record = lifecycle.status.get(backfill_id)
    assert record.state is BackfillState.CANCELLED and "wrong dates" in record.reason
    assert control_result(lifecycle, key)["outcome"] == "done"
    assert claims_of(lifecycle)["active"] == []
    # idempotent; a second document is a no-op
    result, key, _ = control(lifecycle, backfill_id, "cancel")
    assert (
        result.disposition == "accepted" and "already cancelled" in control_result(lifecycle, key)["reason"]
    )
    assert any("cancel by @oncall" in m["text"] for m in lifecycle.slack.messages)


def test_cancelling_a_finished_backfill_is_refused(lifecycle: TriggerHarness) -> None:
    backfill_id = lifecycle.submit().backfill_id
    lifecycle.status.transition(backfill_id, BackfillState.SUCCEEDED, detail="done")
    result, key, _ = control(lifecycle, backfill_id, "cancel")
    assert result.disposition == "rejected"
    written = control_result(lifecycle, key)
    assert written["outcome"] == "refused" and "already ended (SUCCEEDED)" in written["reason"]
    assert lifecycle.status.get(backfill_id).state is BackfillState.SUCCEEDED


def test_retry_reruns_only_what_did_not_succeed(lifecycle: TriggerHarness) -> None:
    backfill_id = lifecycle.submit().backfill_id
    record = lifecycle.status.get(backfill_id)
    steps = _report_steps(record)
    report = BackfillReport.model_validate(
        {
            "backfill_id": backfill_id,
            "dag_run_id": backfill_id,
            "status": "failed",
            "counts": _counts(steps),
            "figures": {},
            "steps": steps,
            "written_at": NOW.isoformat(),
        }
    )
    lifecycle.s3.put_object(
        Bucket=lifecycle.bucket,
        Key=f"backfills/{backfill_id}/backfill_report.json",
        Body=report.to_json().encode(),
    )
    lifecycle.status.transition(backfill_id, BackfillState.FAILED, detail="step etl_delivery_7_days failed")
    # refused while running; allowed once failed
    result, key, _ = control(lifecycle, backfill_id, "retry")
    assert result.disposition == "accepted", control_result(lifecycle, key)
    record = lifecycle.status.get(backfill_id)
    assert record.state is BackfillState.TRIGGERED and record.run_attempt == 2
    run = lifecycle.airflow.runs[("backfill", f"{backfill_id}__attempt2")]
    assert run["conf"]["attempt"] == 2
    done_body = lifecycle.s3.get_object(
        Bucket=lifecycle.bucket, Key=f"backfills/{backfill_id}/attempts/2/done.json"
    )["Body"].read()
    done = AttemptDone.from_json(done_body)
    assert run["conf"]["done_uri"].endswith("attempts/2/done.json")
    assert done.steps_done == ["etl_orders", "etl_orders_7_days"]
    assert done.dates_done == {"email_discounts": [date(2021, 6, 4)]}
    result, key, _ = control(lifecycle, backfill_id, "retry")
    assert result.disposition == "rejected" and "TRIGGERED" in control_result(lifecycle, key)["reason"]


def test_retrying_a_succeeded_backfill_is_refused(lifecycle: TriggerHarness) -> None:
    backfill_id = lifecycle.submit().backfill_id
    lifecycle.status.transition(backfill_id, BackfillState.SUCCEEDED, detail="done")
    result, key, _ = control(lifecycle, backfill_id, "retry")
    assert result.disposition == "rejected" and "nothing failed" in control_result(lifecycle, key)["reason"]


# -- resubmission ----------------------------------------------------------------------------
def test_resubmitting_a_rejected_config_evaluates_it_again(mocked_aws: None) -> None:
    """Refused while an overlapping backfill ran; once that one ended, the identical config
    dropped again is evaluated again (not "already known") and runs."""
    with ExitStack() as stack:
        import boto3

        create_table(boto3.client("dynamodb", region_name="us-east-1"), "ClaimsTable", table_name=CLAIMS)
        harness = TriggerHarness(stack, env={"CLAIMS_TABLE": CLAIMS, "ON_OVERLAP": "refuse"})
        first = harness.submit().backfill_id
        refused = harness.submit(second_config(), key="incoming/second.yaml")
        assert refused.disposition == "rejected"
        harness.status.transition(first, BackfillState.SUCCEEDED, detail="done")
        again = harness.submit(second_config(), key="incoming/second-again.yaml")
        assert again.backfill_id == refused.backfill_id
        assert again.disposition == "accepted", again
        record = harness.status.get(refused.backfill_id)
        assert record.state is BackfillState.TRIGGERED
        # no PLANNED: with no policy, only a dry run stops there (the plan rides on the next state)
        assert [entry["state"] for entry in record.history] == [
            "RECEIVED",
            "REJECTED",
            "RECEIVED",
            "TRIGGERED",
        ]
        # the same upload delivered again is still only a duplicate
        (duplicate,) = harness.invoke(harness.upload(second_config(), key="incoming/second-again.yaml"))
        assert duplicate.disposition in ("already_known", "duplicate")


# -- overlap ---------------------------------------------------------------------------------
def test_an_overlapping_backfill_waits_then_starts_when_the_first_ends(lifecycle: TriggerHarness) -> None:
    first = lifecycle.submit().backfill_id
    second = lifecycle.submit(second_config(), key="incoming/second.yaml")
    assert second.disposition == "queued" and second.state == "QUEUED"
    assert first in lifecycle.status.get(second.backfill_id).reason
    assert lifecycle.result_file("incoming/second.yaml")["outcome"] == "queued"
    assert ("backfill", second.backfill_id) not in lifecycle.airflow.runs
    assert claims_of(lifecycle) == {"active": [first], "queued": [second.backfill_id]}
    # a non-overlapping one is never held back
    other = lifecycle.submit(
        VALID.replace(b"2021-06-04", b"2021-05-01").replace(b"etl-orders-0604", b"other-0501"),
        key="incoming/o.yaml",
    )
    assert other.disposition == "accepted"
    # cancelling the first releases its claims and drops a start document for the second
    control(lifecycle, first, "cancel")
    starts = [
        o["Key"]
        for o in lifecycle.s3.list_objects_v2(
            Bucket=lifecycle.bucket, Prefix=f"control/{second.backfill_id}/"
        )["Contents"]
    ]
    assert len(starts) == 1 and starts[0].split("/")[-1].startswith("start-")
    event = lifecycle.upload(
        lifecycle.s3.get_object(Bucket=lifecycle.bucket, Key=starts[0])["Body"].read(), key=starts[0]
    )
    (started,) = lifecycle.invoke(event)
    assert started.disposition == "accepted", started
    assert lifecycle.status.get(second.backfill_id).state is BackfillState.TRIGGERED
    assert ("backfill", second.backfill_id) in lifecycle.airflow.runs
    assert sorted(claims_of(lifecycle)["active"]) == sorted([other.backfill_id, second.backfill_id])


def test_an_overlapping_backfill_is_refused_naming_the_blocker(mocked_aws: None) -> None:
    with ExitStack() as stack:
        import boto3

        create_table(boto3.client("dynamodb", region_name="us-east-1"), "ClaimsTable", table_name=CLAIMS)
        harness = TriggerHarness(stack, env={"CLAIMS_TABLE": CLAIMS, "ON_OVERLAP": "refuse"})
        first = harness.submit().backfill_id
        second = harness.submit(second_config(), key="incoming/second.yaml")
        assert second.disposition == "rejected"
        written = harness.result_file("incoming/second.yaml")
        assert first in written["errors"][0]["message"] and written["errors"][0]["location"] == "dates"
        assert harness.status.get(second.backfill_id).state is BackfillState.REJECTED
        # dry runs are never blocked
        dry = harness.submit(
            second_config("dry-0604").replace(b"jobs:", b"dry_run: true\njobs:"), key="incoming/dry.yaml"
        )
        assert dry.disposition == "dry_run"


def test_claims_are_released_on_rejection_and_cancel_before_trigger(lifecycle: TriggerHarness) -> None:
    first = lifecycle.submit().backfill_id
    second = lifecycle.submit(second_config(), key="incoming/second.yaml").backfill_id
    control(lifecycle, second, "cancel")  # queued -> cancelled, never triggered
    assert lifecycle.status.get(second).state is BackfillState.CANCELLED
    assert claims_of(lifecycle) == {"active": [first], "queued": []}
    lifecycle.status.transition(first, BackfillState.FAILED, detail="x", attributes={"retryable": False})
    assert claims_of(lifecycle) == {"active": [], "queued": []}  # a failed backfill holds nothing


# -- helpers ---------------------------------------------------------------------------------
def _trigger_body(run_id: str, day: date):  # noqa: ANN202
    from backfill_local.airflow_double import TriggerBody

    return TriggerBody.model_validate({"dag_run_id": run_id, "logical_date": f"{day}T00:00:00Z", "conf": {}})


def _report_steps(record) -> dict[str, Any]:  # noqa: ANN001
    succeeded = {"etl_orders", "etl_orders_7_days"}
    steps: dict[str, Any] = {}
    for wave in record.plan_summary["waves"]:
        for step_id in wave:
            if step_id in succeeded:
                steps[step_id] = {"status": "succeeded", "kind": "spark", "round": 0, "dag_id": "etl"}
            elif step_id == "email_discounts":
                steps[step_id] = {
                    "status": "failed",
                    "kind": "airflow_dag",
                    "round": 1,
                    "dag_id": "email_discounts",
                    "dates": {"2021-06-04": "success", "2021-06-05": "failed"},
                }
            elif step_id == "etl_delivery_7_days":
                steps[step_id] = {"status": "failed", "kind": "spark", "round": 0, "dag_id": "etl"}
            else:
                steps[step_id] = {"status": "blocked", "kind": "spark", "round": 0, "dag_id": "etl"}
    return steps


def _counts(steps: dict[str, Any]) -> dict[str, int]:
    counts = {"pending": 0, "succeeded": 0, "failed": 0, "blocked": 0}
    for step in steps.values():
        counts[step["status"]] += 1
    return counts


def test_cancel_ends_the_backfills_lineage_run_with_abort(
    lifecycle: TriggerHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    from backfill_orchestrator.lineage_events import LineageEmitter
    from tests.support.lineage import Recorder

    recorder = Recorder()
    monkeypatch.setattr(
        LineageEmitter, "from_settings", classmethod(lambda cls, settings, **_: cls(client=recorder))
    )
    backfill_id = lifecycle.submit().backfill_id
    control(lifecycle, backfill_id, "cancel", reason="wrong dates")
    kinds = [(event["eventType"], event["job"]["name"]) for event in recorder.events]
    assert kinds == [("START", backfill_id), ("ABORT", backfill_id)]
    assert recorder.events[0]["run"]["runId"] == recorder.events[1]["run"]["runId"]  # the same backfill run
