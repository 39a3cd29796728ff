"""A control action that fails half-way is finished by the platform's retry, exactly once.

A control document (cancel, retry, start, approve, reject) acts through several side effects:
Airflow (PATCH the run, list and fail its reruns, POST the next attempt), the status record,
the claims, S3 (`start` documents, the result file) and Slack. When one of them fails, the
exception propagates, the result file says the trigger retries, and Lambda delivers the event
again; that delivery must finish the action rather than take it for a duplicate. When the
process dies outright at any line, the Lambda retry (same request id) does the same. A second
delivery while the first still acts, and every delivery after the action completed, are
duplicates: nothing is done twice, and the reply is posted once."""

from __future__ import annotations

from typing import Any

import pytest

from backfill_orchestrator.status import BackfillState
from backfill_orchestrator.trigger import TriggerFailedError
from tests.faults.harness import FaultHarness
from tests.faults.toolkit import AwsFaults, FaultRule, SimulatedCrash, to_state
from tests.support.trigger import CLAIMS, second_config

REQUEST = "5d1f9c2e-0000-4000-8000-00000000c0de"
PATCH_RUN = r"/dags/backfill/dagRuns/[^?/]+$"
LIST_RUNS = r"/dagRuns\?"
POST_RUN = r"/dags/backfill/dagRuns$"


def dispositions(answer: dict[str, Any]) -> list[str]:
    return [result["disposition"] for result in answer["results"]]


def replies(harness: FaultHarness, action: str) -> list[str]:
    return [m["text"] for m in harness.slack.messages if f"{action} by @oncall" in m["text"]]


def patches(harness: FaultHarness) -> int:
    return len(harness.airflow_proxy.requests("PATCH"))


def test_a_cancel_whose_patch_met_a_500_is_finished_by_lambdas_retry(control_harness: FaultHarness) -> None:
    harness = control_harness
    backfill_id = harness.submit().backfill_id
    harness.airflow.set_state("backfill", backfill_id, "running")
    harness.airflow_proxy.add(FaultRule(method="PATCH", path=PATCH_RUN, status=500))
    key, event = harness.upload_control(backfill_id, "cancel")

    with pytest.raises(TriggerFailedError):
        harness.invoke_lambda(event, request_id=REQUEST)

    # Nothing was stopped; the result file says the trigger retries, and it does (it raised).
    assert harness.status.get(backfill_id).state is BackfillState.TRIGGERED
    assert harness.airflow.runs[("backfill", backfill_id)]["state"] == "running"
    failed = harness.control_result(key)
    assert failed["outcome"] == "failed" and "retries automatically" in failed["retrying"]

    harness.airflow_proxy.clear()  # Airflow answers again
    answer = harness.invoke_lambda(event, request_id=REQUEST)  # Lambda's retry of the event

    assert dispositions(answer) == ["accepted"]
    record = harness.status.get(backfill_id)
    assert record.state is BackfillState.CANCELLED
    assert harness.airflow.runs[("backfill", backfill_id)]["state"] == "failed"
    assert harness.claims_held() == {"active": [], "queued": []}
    done = harness.control_result(key)
    assert done["outcome"] == "done" and done.get("retrying") is None and done["state"] == "CANCELLED"
    assert len(replies(harness, "cancel")) == 1
    # Completed: any later delivery is a duplicate that stops nothing again.
    sent = patches(harness)
    assert dispositions(harness.invoke_lambda(event, request_id="another-request")) == ["duplicate"]
    assert patches(harness) == sent and len(replies(harness, "cancel")) == 1


def test_a_cancel_that_failed_the_run_then_met_a_503_listing_reruns_is_finished_and_the_queued_one_starts(
    control_harness: FaultHarness,
) -> None:
    harness = control_harness
    first = harness.submit().backfill_id
    second = harness.submit(second_config(), key="incoming/second.yaml")
    assert second.state == "QUEUED"
    harness.airflow_proxy.add(FaultRule(method="GET", path=LIST_RUNS, status=503))
    key, event = harness.upload_control(first, "cancel", reason="wrong dates")

    with pytest.raises(TriggerFailedError):
        harness.invoke_lambda(event, request_id=REQUEST)

    # Half-way: Airflow's run is failed, but the record is still live and holds its claims.
    assert harness.airflow.runs[("backfill", first)]["state"] == "failed"
    assert harness.status.get(first).state is BackfillState.TRIGGERED
    assert harness.claims_held() == {"active": [first], "queued": [second.backfill_id]}

    harness.airflow_proxy.clear()
    answer = harness.invoke_lambda(event, request_id=REQUEST)

    assert dispositions(answer) == ["accepted"]
    record = harness.status.get(first)
    assert record.state is BackfillState.CANCELLED and "wrong dates" in record.reason
    assert harness.claims_held()["active"] == []
    (start,) = harness.start_documents(second.backfill_id)  # what waited behind it is started
    body = harness.s3.get_object(Bucket=harness.bucket, Key=start)["Body"].read()
    (started,) = harness.invoke(harness.upload(body, key=start))
    assert started.disposition == "accepted", started
    assert harness.status.get(second.backfill_id).state is BackfillState.TRIGGERED
    assert harness.control_result(key)["outcome"] == "done"


def failed_backfill(harness: FaultHarness) -> str:
    backfill_id = harness.submit().backfill_id
    harness.status.transition(
        backfill_id,
        BackfillState.FAILED,
        detail="step etl_orders_7_days failed",
        attributes={"reason": "step etl_orders_7_days failed", "retryable": False},
    )
    return backfill_id


def test_a_retry_whose_attempt_2_post_met_a_503_is_finished_by_lambdas_retry(
    control_harness: FaultHarness,
) -> None:
    harness = control_harness
    backfill_id = failed_backfill(harness)
    harness.airflow_proxy.add(FaultRule(method="POST", path=POST_RUN, status=503))
    key, event = harness.upload_control(backfill_id, "retry")

    with pytest.raises(TriggerFailedError):
        harness.invoke_lambda(event, request_id=REQUEST)

    record = harness.status.get(backfill_id)
    assert record.state is BackfillState.FAILED and record.run_attempt == 1
    assert ("backfill", f"{backfill_id}__attempt2") not in harness.airflow.runs

    harness.airflow_proxy.clear()
    answer = harness.invoke_lambda(event, request_id=REQUEST)

    assert dispositions(answer) == ["accepted"]
    record = harness.status.get(backfill_id)
    assert record.state is BackfillState.TRIGGERED and record.run_attempt == 2
    assert record.dag_run_id == f"{backfill_id}__attempt2"
    assert list(harness.airflow.runs) == [("backfill", backfill_id), ("backfill", f"{backfill_id}__attempt2")]
    assert harness.claims_held()["active"] == [backfill_id]
    assert harness.control_result(key)["outcome"] == "done"
    assert dispositions(harness.invoke_lambda(event, request_id="another-request")) == ["duplicate"]
    assert len(harness.airflow.trigger_posts()) == 2 and len(replies(harness, "retry")) == 1


# -- killed at any line: the Lambda retry (same request id) finishes it -------------------------
def test_a_cancel_killed_after_failing_the_run_is_finished_by_the_retry(
    control_harness: FaultHarness, aws_faults: AwsFaults
) -> None:
    harness = control_harness
    backfill_id = harness.submit().backfill_id
    aws_faults.crash(harness.dynamodb, "UpdateItem", when=to_state("CANCELLED"))
    key, event = harness.upload_control(backfill_id, "cancel")

    with pytest.raises(SimulatedCrash):
        harness.invoke_lambda(event, request_id=REQUEST)
    assert harness.airflow.runs[("backfill", backfill_id)]["state"] == "failed"
    assert harness.status.get(backfill_id).state is BackfillState.TRIGGERED
    assert harness.control_result(key) is None

    # S3 delivers the event again meanwhile, as another invocation: the first still holds it.
    sent = patches(harness)
    assert dispositions(harness.invoke_lambda(event, request_id="another-request")) == ["duplicate"]
    assert patches(harness) == sent and harness.status.get(backfill_id).state is BackfillState.TRIGGERED

    answer = harness.invoke_lambda(event, request_id=REQUEST)

    assert dispositions(answer) == ["accepted"]
    assert harness.status.get(backfill_id).state is BackfillState.CANCELLED
    assert harness.claims_held()["active"] == []
    assert harness.control_result(key)["outcome"] == "done" and len(replies(harness, "cancel")) == 1


def test_a_cancel_killed_between_its_state_and_the_claims_release_releases_them_on_retry(
    control_harness: FaultHarness, aws_faults: AwsFaults
) -> None:
    harness = control_harness
    first = harness.submit().backfill_id
    second = harness.submit(second_config(), key="incoming/second.yaml").backfill_id

    # the release's first write: the shared key item, rewritten without the cancelled backfill's entry
    def releasing(params: dict[str, Any]) -> bool:
        return params.get("TableName") == CLAIMS and params["Item"]["pk"]["S"].startswith("key#")

    aws_faults.crash(harness.dynamodb, "PutItem", when=releasing)
    key, event = harness.upload_control(first, "cancel")

    with pytest.raises(SimulatedCrash):
        harness.invoke_lambda(event, request_id=REQUEST)
    assert harness.status.get(first).state is BackfillState.CANCELLED
    assert harness.claims_held() == {"active": [first], "queued": [second]}

    answer = harness.invoke_lambda(event, request_id=REQUEST)

    assert dispositions(answer) == ["accepted"]
    assert harness.claims_held() == {"active": [], "queued": [second]}
    assert len(harness.start_documents(second)) == 1
    assert harness.control_result(key)["outcome"] == "done" and len(replies(harness, "cancel")) == 1
    history = [entry["state"] for entry in harness.status.get(first).history]
    assert history.count("CANCELLED") == 1


def test_a_retry_killed_after_airflow_accepted_attempt_2_records_that_run_on_retry(
    control_harness: FaultHarness, aws_faults: AwsFaults
) -> None:
    harness = control_harness
    backfill_id = failed_backfill(harness)
    aws_faults.crash(harness.dynamodb, "UpdateItem", when=to_state("TRIGGERED"))
    key, event = harness.upload_control(backfill_id, "retry")

    with pytest.raises(SimulatedCrash):
        harness.invoke_lambda(event, request_id=REQUEST)
    assert ("backfill", f"{backfill_id}__attempt2") in harness.airflow.runs
    assert harness.status.get(backfill_id).state is BackfillState.FAILED

    answer = harness.invoke_lambda(event, request_id=REQUEST)

    assert dispositions(answer) == ["accepted"]
    record = harness.status.get(backfill_id)
    assert record.state is BackfillState.TRIGGERED and record.run_attempt == 2
    created = [p for p in harness.airflow.trigger_posts() if p["status"] in (200, 201)]
    assert len(created) == 2  # attempt 1 and attempt 2; the retry's POST met a 409 and read it back
    assert harness.control_result(key)["outcome"] == "done"


def test_a_start_killed_after_airflow_accepted_the_run_records_it_on_retry(
    control_harness: FaultHarness, aws_faults: AwsFaults
) -> None:
    harness = control_harness
    first = harness.submit().backfill_id
    second = harness.submit(second_config(), key="incoming/second.yaml").backfill_id
    harness.status.transition(first, BackfillState.SUCCEEDED, detail="done")
    key, event = harness.upload_control(second, "start", requested_by="system:backfill-orchestrator")
    aws_faults.crash(harness.dynamodb, "UpdateItem", when=to_state("TRIGGERED"))

    with pytest.raises(SimulatedCrash):
        harness.invoke_lambda(event, request_id=REQUEST)
    assert ("backfill", second) in harness.airflow.runs
    assert harness.status.get(second).state is BackfillState.QUEUED

    answer = harness.invoke_lambda(event, request_id=REQUEST)

    assert dispositions(answer) == ["accepted"]
    record = harness.status.get(second)
    assert record.state is BackfillState.TRIGGERED and record.dag_run_id == second
    held = harness.claims_held()  # the first's holder item stays for the sweep (it ended without a release)
    assert second in held["active"] and held["queued"] == []
    assert harness.control_result(key)["outcome"] == "done"


def test_an_action_killed_before_its_result_file_gets_it_written_by_the_retry_and_replies_once(
    control_harness: FaultHarness, aws_faults: AwsFaults
) -> None:
    harness = control_harness
    backfill_id = harness.submit().backfill_id
    key, event = harness.upload_control(backfill_id, "cancel")
    aws_faults.crash(
        harness.s3, "PutObject", when=lambda params: params["Key"] == f"results/{key}.result.json"
    )

    with pytest.raises(SimulatedCrash):
        harness.invoke_lambda(event, request_id=REQUEST)
    assert harness.status.get(backfill_id).state is BackfillState.CANCELLED
    assert harness.control_result(key) is None and replies(harness, "cancel") == []

    answer = harness.invoke_lambda(event, request_id=REQUEST)

    assert dispositions(answer) == ["duplicate"]  # the action completed: it is not done again
    assert harness.control_result(key)["outcome"] == "done"
    assert len(replies(harness, "cancel")) == 1
    assert dispositions(harness.invoke_lambda(event, request_id="another-request")) == ["duplicate"]
    assert len(replies(harness, "cancel")) == 1


def test_a_refusal_is_recorded_once_and_its_redelivery_is_a_duplicate(control_harness: FaultHarness) -> None:
    harness = control_harness
    backfill_id = harness.submit().backfill_id
    harness.status.transition(backfill_id, BackfillState.SUCCEEDED, detail="done")
    key, event = harness.upload_control(backfill_id, "cancel")

    assert dispositions(harness.invoke_lambda(event, request_id=REQUEST)) == ["rejected"]
    refused = harness.control_result(key)
    assert refused["outcome"] == "refused" and refused.get("retrying") is None
    assert dispositions(harness.invoke_lambda(event, request_id="another-request")) == ["duplicate"]
    assert harness.control_result(key) == refused
