"""Airflow's API server unreachable while the `backfill` DAG waits for its DAG reruns, on a real
Airflow 3 (`outage_airflow`: `[backfill] api_outage_seconds` of 180 s, no task retries):
an outage longer than a poll (and longer than the supervisor's own request retries) but shorter
than the budget is ridden out: the run resumes and succeeds, no rerun started twice. An outage
past the budget ends the backfill FAILED, with a page, while the API server is still down
(the DAG's failure callback runs in the dag-processor, which does not need it); `backfill retry`
then finishes it."""

from __future__ import annotations

import json
import logging
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from backfill_orchestrator.status import BackfillState
from tests.support.airflow import (
    BUCKET,
    TABLE,
    AirflowStack,
    dag_run_rows,
    explain,
    gated_starts,
    status_store,
    step,
    store_backfill,
    wait_until,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]
RUN_TIMEOUT = 600
OUTAGE_SECONDS = 40  # how long the short outage holds the api-server down before booting it


def outage_budget(stack: AirflowStack) -> int:
    return int(stack.extra_env["AIRFLOW__BACKFILL__API_OUTAGE_SECONDS"])


def held_backfill(stack: AirflowStack, name: str, days: list[str]) -> Any:
    """A backfill of gated_report's `days`, started while the gate holds: both reruns run and wait."""
    backfill = store_backfill(
        stack.aws, name=name, waves=[[step("gated_report", "airflow_dag", dates=days)]], days=days
    )
    (stack.outputs / "hold").write_text("held by the test")
    stack.airflow.trigger("backfill", run_id=backfill.backfill_id, conf=backfill.conf)
    wait_until(
        lambda: gated_starts(stack, days) >= len(days),
        timeout=300,
        what=lambda: f"the reruns running: {gated_starts(stack, days)} starts",
    )
    return backfill


def prepare_log(stack: AirflowStack, run_id: str, try_number: int = 1) -> str:
    return stack.airflow.task_log("backfill", run_id, "round_0.prepare", try_number=try_number)


def test_an_api_outage_shorter_than_the_budget_is_waited_out_and_the_backfill_succeeds_once(
    outage_airflow: AirflowStack,
) -> None:
    stack, airflow = outage_airflow, outage_airflow.airflow
    days = ["2021-06-11", "2021-06-12"]
    try:
        backfill = held_backfill(stack, "api-outage-short", days)
        airflow.kill(["api-server"])
        down = time.monotonic()
        # longer than a poll (2 s) and than the supervisor's retries of one request (about 30 s)
        time.sleep(OUTAGE_SECONDS)
        airflow.relaunch(["api-server"])  # returns once the api-server answers again
        outage = time.monotonic() - down
    finally:
        (stack.outputs / "hold").unlink(missing_ok=True)
    # what this test shows needs the outage shorter than the budget; the boot is the unknown part
    assert outage < outage_budget(stack), f"the api-server took {outage:.0f} s to come back"

    state = airflow.wait_for_run("backfill", backfill.backfill_id, timeout=RUN_TIMEOUT)
    assert state == "success", explain(airflow, backfill.backfill_id)
    prepare = next(
        ti
        for ti in airflow.task_instances("backfill", backfill.backfill_id)
        if ti["task_id"] == "round_0.prepare"
    )
    log = prepare_log(stack, backfill.backfill_id)
    assert prepare["try_number"] == 1, log[-3000:]  # the task waited: it never failed
    assert "Airflow's API server is unreachable" in log
    runs = dag_run_rows(airflow, "gated_report")
    mine = [row for row in runs.values() if str(row["logical_date"])[:10] in days]
    assert sorted(str(row["logical_date"])[:10] for row in mine) == days
    assert all(row["clear_number"] == 0 and row["state"] == "success" for row in mine), mine
    record = status_store(stack.aws).get(backfill.backfill_id)
    assert record.state is BackfillState.SUCCEEDED
    assert [h["state"] for h in record.history].count("SUCCEEDED") == 1


def test_an_api_outage_past_the_budget_ends_failed_with_a_page_and_a_retry_finishes_the_backfill(
    outage_airflow: AirflowStack,
) -> None:
    stack, airflow = outage_airflow, outage_airflow.airflow
    days = ["2021-06-13", "2021-06-14"]
    store = status_store(stack.aws)
    try:
        backfill = held_backfill(stack, "api-outage-long", days)
        airflow.kill(["api-server"])
        began = time.monotonic()
        # Never a silent hang: the record says FAILED and PagerDuty is paged while the API
        # server is still down.
        record = wait_until(
            lambda: (r := store.get(backfill.backfill_id)).state is BackfillState.FAILED and r,
            timeout=900,
            what=lambda: f"the record FAILED: {store.get(backfill.backfill_id).state}",
            poll=2,
        )
        failed_after = time.monotonic() - began
        # FAILED is recorded first, then posted and paged (dags/backfill_runtime/reporting.py):
        # on a loaded machine the test can read the record before the page has arrived.
        wait_until(
            lambda: (
                stack.pages(backfill.backfill_id)
                and any("FAILED" in text for text in stack.posts(backfill.backfill_id))
            ),
            timeout=60,
            what=lambda: (
                f"pages {stack.pages(backfill.backfill_id)}, posts {stack.posts(backfill.backfill_id)}"
            ),
        )
        assert stack.pages(backfill.backfill_id) == ["trigger"]
        assert "failed before it could report" in record.reason and "backfill retry" in record.reason
        assert failed_after >= outage_budget(stack)  # the budget was waited out first
        airflow.relaunch(["api-server"])
    finally:
        (stack.outputs / "hold").unlink(missing_ok=True)

    assert airflow.wait_for_run("backfill", backfill.backfill_id, timeout=120) == "failed"
    assert f"api_outage_seconds = {outage_budget(stack)}" in prepare_log(stack, backfill.backfill_id)
    # FAILED is where `backfill retry` resumes: attempt 2 reruns what did not succeed
    result = retry(stack, backfill.backfill_id)
    assert result["outcome"] == "done", result
    record = wait_until(
        lambda: (
            (r := store.get(backfill.backfill_id)).state in (BackfillState.SUCCEEDED, BackfillState.FAILED)
            and r
        ),
        timeout=RUN_TIMEOUT,
        what=lambda: f"attempt 2 ended: {store.get(backfill.backfill_id).state}",
        poll=2,
    )
    assert record.state is BackfillState.SUCCEEDED, explain(airflow, record.dag_run_id)
    assert record.run_attempt == 2


def retry(stack: AirflowStack, backfill_id: str) -> dict[str, Any]:
    """`backfill retry`: a control document, delivered to the trigger as its S3 event."""
    from aws_lambda_powertools.metrics import EphemeralMetrics

    from backfill_orchestrator.settings import DeploymentSettings
    from backfill_orchestrator.trigger.wiring import TriggerWiring
    from tests.support.trigger import s3_event

    env = {
        "CONFIG_BUCKET": BUCKET,
        "STATUS_TABLE": TABLE,
        "MARQUEZ_URL": "http://127.0.0.1:9",  # a retry does not plan
        "AIRFLOW_URL": stack.airflow.url,
        "AIRFLOW_SECRET_ID": "backfill/airflow",
        "BACKFILL_DAG_ID": "backfill",
        "SLACK_API_URL": stack.slack.api_url,
        "SLACK_SECRET_ID": "backfill/slack",
        "SLACK_CHANNEL": "#backfills",
        "PAGERDUTY_EVENTS_URL": stack.pagerduty.events_url,
        "PAGERDUTY_SECRET_ID": "backfill/pagerduty",
    }
    s3 = stack.aws.client("s3")
    document = {
        "control_version": 1,
        "action": "retry",
        "backfill_id": backfill_id,
        "reason": "Airflow is back",
        "requested_by": "@oncall",
        "requested_at": datetime.now(UTC).isoformat(),
    }
    key = f"control/{backfill_id}/retry-{datetime.now(UTC):%Y%m%dT%H%M%S%f}.json"
    s3.put_object(Bucket=BUCKET, Key=key, Body=json.dumps(document).encode())
    head = s3.head_object(Bucket=BUCKET, Key=key)
    wiring = TriggerWiring(
        DeploymentSettings.from_env(env),
        s3_client=s3,
        dynamodb_client=stack.aws.client("dynamodb"),
        secrets_client=stack.aws.client("secretsmanager"),
    )
    service = wiring.service(
        metrics=EphemeralMetrics(namespace="FaultTest"), logger=logging.getLogger(__name__)
    )
    event = s3_event(
        key,
        size=head["ContentLength"],
        version_id=None,
        etag=head["ETag"],
        sequencer="0" * 15 + "1",
        bucket=BUCKET,
    )
    service.handle_event(event, lease_seconds=120)
    body = s3.get_object(Bucket=BUCKET, Key=f"results/{key}.result.json")["Body"].read()
    return json.loads(body)
