"""The `backfill` DAG on a real Airflow 3 (api-server, scheduler, dag-processor, LocalExecutor),
with S3/DynamoDB/Secrets Manager on moto, local Slack and PagerDuty receivers and a fake Spark
job with the real one's interface (tests/airflow/fake_spark_job.py); the Airflow is the one
several modules share (`shared_airflow`, tests/conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from backfill_local.airflow_local import LocalAirflow
from backfill_orchestrator.contracts import ResultFile
from backfill_orchestrator.status import BackfillState
from tests.support.airflow import (
    RUN_TIMEOUT,
    AirflowStack,
    AwsLocal,
    explain,
    read_s3_json,
    run_backfill,
    status_store,
    step,
    store_backfill,
    task_states,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def env(shared_airflow: AirflowStack) -> dict[str, Any]:
    return {
        "airflow": shared_airflow.airflow,
        "warehouse": shared_airflow.warehouse,
        "outputs": shared_airflow.outputs,
        "slack": shared_airflow.slack,
        "pagerduty": shared_airflow.pagerduty,
    }


@pytest.fixture(scope="module")
def aws(shared_airflow: AirflowStack) -> AwsLocal:
    return shared_airflow.aws


def submissions(warehouse: Path, backfill_id: str) -> list[dict[str, Any]]:
    lines = (warehouse / "submissions.jsonl").read_text().splitlines()
    return [entry for entry in map(json.loads, lines) if f"/{backfill_id}/" in entry["plan"]]


def marker(outputs: Path, dag_id: str, day: str) -> dict[str, Any]:
    return json.loads((outputs / dag_id / f"{day}.json").read_text())


def test_runs_both_step_kinds_in_order_and_reruns_an_existing_run_instead_of_duplicating_it(env, aws) -> None:
    airflow: LocalAirflow = env["airflow"]
    days = ["2021-06-04", "2021-06-05"]
    # spark, spark -> two DAG steps -> spark again (an interleaving: three rounds)
    waves = [
        [step("etl_orders", "spark", dates=days)],
        [step("etl_orders_7_days", "spark", dates=days, upstream=["etl_orders"])],
        [
            step("orders_popular_day_of_week", "airflow_dag", dates=days, upstream=["etl_orders_7_days"]),
            step("email_discounts", "airflow_dag", dates=["2021-06-05"], upstream=["etl_orders_7_days"]),
        ],
        [step("etl_after_dags", "spark", dates=days, upstream=["orders_popular_day_of_week"])],
    ]
    backfill = store_backfill(aws, name="order-test", waves=waves, days=days)

    # A run of orders_popular_day_of_week for 2021-06-04 exists already (its own run id).
    airflow.trigger(
        "orders_popular_day_of_week", run_id="existing_0604", conf={}, logical_date="2021-06-04T00:00:00Z"
    )
    assert (
        airflow.wait_for_run("orders_popular_day_of_week", "existing_0604", timeout=RUN_TIMEOUT) == "success"
    )

    state = run_backfill(airflow, backfill.conf, backfill.backfill_id)
    assert state == "success", explain(airflow, backfill.backfill_id)

    # Spark: one submission for the two chained spark steps, one for the step after the DAGs.
    sent = submissions(env["warehouse"], backfill.backfill_id)
    assert [entry["steps"] for entry in sent] == [["etl_orders", "etl_orders_7_days"], ["etl_after_dags"]]
    # The DAG steps ran between the two submissions, once per date.
    first_done, second_start = sent[0]["finished_at"], sent[1]["started_at"]
    for dag_id, dag_days in (("orders_popular_day_of_week", days), ("email_discounts", ["2021-06-05"])):
        for day_ in dag_days:
            ran = marker(env["outputs"], dag_id, day_)
            assert first_done < ran["finished_at"] < second_start, (dag_id, day_)
    assert not (env["outputs"] / "email_discounts" / "2021-06-04.json").exists()

    # The existing run was cleared and rerun, not duplicated; the other date got a new run.
    runs = {run["dag_run_id"]: run for run in airflow.dag_runs("orders_popular_day_of_week")}
    assert set(runs) == {"existing_0604", f"backfill__{backfill.backfill_id}__2021-06-05"}
    assert marker(env["outputs"], "orders_popular_day_of_week", "2021-06-04")["runs"] == 2
    assert marker(env["outputs"], "orders_popular_day_of_week", "2021-06-04")["run_id"] == "existing_0604"

    report = read_s3_json(aws, backfill.conf["plan_uri"].replace("plan.json", "backfill_report.json"))
    assert report["status"] == "succeeded"
    assert report["counts"] == {
        "pending": 0,
        "succeeded": 5,
        "failed": 0,
        "blocked": 0,
        "awaiting_publish": 0,
    }
    assert report["steps"]["orders_popular_day_of_week"]["dates"] == {
        "2021-06-04": "success",
        "2021-06-05": "success",
    }
    # The result file beside the dropped config followed the backfill to its end.
    result = ResultFile.model_validate(read_s3_json(aws, backfill.conf["result_uri"]))
    assert result.state == "SUCCEEDED" and result.report_uri.endswith("/backfill_report.json")
    assert result.figures.steps_succeeded == 5 and result.figures.dag_runs_succeeded == 3

    record = status_store(aws).get(backfill.backfill_id)
    assert record.state == BackfillState.SUCCEEDED
    assert [h["state"] for h in record.history][-2:] == ["RUNNING", "SUCCEEDED"]
    # `backfill watch` reads the progress the last round recorded
    assert record.progress["steps_total"] == len(backfill.plan.steps)
    assert record.progress["waves"] >= 1 and record.progress["wave"] == record.progress["waves"]
    slack = env["slack"]
    texts = [m["text"] for m in slack.messages if backfill.backfill_id in m["text"]]
    assert any("RUNNING" in t for t in texts) and any("SUCCEEDED" in t for t in texts), texts
    assert all(m.get("thread_ts") for m in slack.messages[1:] if backfill.backfill_id in m["text"])
    assert not [
        e
        for e in env["pagerduty"].events
        if e["dedup_key"] == backfill.backfill_id and e["event_action"] == "trigger"
    ]


def test_a_failed_step_stops_its_dependants_only_and_fails_the_run_with_a_page_and_a_failed_record(
    env, aws
) -> None:
    airflow: LocalAirflow = env["airflow"]
    days = ["2021-06-04"]
    waves = [
        [
            step("etl_orders", "spark", dates=days),  # fails (fail.json)
            step("etl_menus", "spark", dates=days),  # independent: succeeds
            step("always_fails", "airflow_dag", dates=days),  # its DAG run fails
        ],
        [
            step(
                "etl_orders_7_days", "spark", dates=days, upstream=["etl_orders"]
            ),  # same submission, skipped
            step("email_discounts", "airflow_dag", dates=days, upstream=["etl_menus"]),  # runs
        ],
        [
            step(
                "orders_popular_day_of_week", "airflow_dag", dates=days, upstream=["etl_orders_7_days"]
            ),  # blocked
            step("etl_after_failure", "spark", dates=days, upstream=["always_fails"]),  # blocked
        ],
    ]
    backfill = store_backfill(aws, name="failure-test", waves=waves, days=days)
    env["warehouse"].mkdir(parents=True, exist_ok=True)
    (env["warehouse"] / "fail.json").write_text(json.dumps({backfill.backfill_id: ["etl_orders"]}))

    state = run_backfill(airflow, backfill.conf, backfill.backfill_id)
    assert state == "failed", explain(airflow, backfill.backfill_id)

    report = read_s3_json(aws, backfill.conf["plan_uri"].replace("plan.json", "backfill_report.json"))
    statuses = {step_id: entry["status"] for step_id, entry in report["steps"].items()}
    assert statuses == {
        "etl_orders": "failed",
        "etl_menus": "succeeded",
        "always_fails": "failed",
        "etl_orders_7_days": "blocked",
        "email_discounts": "succeeded",
        "orders_popular_day_of_week": "blocked",
        "etl_after_failure": "blocked",
    }, explain(airflow, backfill.backfill_id)
    assert marker(env["outputs"], "email_discounts", "2021-06-04")["backfill_id"] == backfill.backfill_id
    assert not (env["outputs"] / "orders_popular_day_of_week" / "2021-06-04.json").exists() or (
        marker(env["outputs"], "orders_popular_day_of_week", "2021-06-04")["backfill_id"]
        != backfill.backfill_id
    )
    # Round 0's submission (tried twice: exit 1 is retried once here); the blocked spark step of
    # round 1 is never submitted.
    sent = submissions(env["warehouse"], backfill.backfill_id)
    assert [entry["steps"] for entry in sent] == [["etl_orders", "etl_menus", "etl_orders_7_days"]] * 2
    states = task_states(airflow, backfill.backfill_id)
    assert states["finish"] == "failed"

    result = ResultFile.model_validate(read_s3_json(aws, backfill.conf["result_uri"]))
    assert result.state == "FAILED" and result.figures.steps_failed == 2
    assert {(p.step, p.status) for p in result.failed_steps} == {
        ("etl_orders", "failed"),
        ("always_fails", "failed"),
        ("etl_orders_7_days", "blocked"),
        ("orders_popular_day_of_week", "blocked"),
        ("etl_after_failure", "blocked"),
    }

    record = status_store(aws).get(backfill.backfill_id)
    assert record.state == BackfillState.FAILED
    assert {e["step"] for e in record.errors} == {
        "etl_orders",
        "always_fails",
        "etl_orders_7_days",
        "orders_popular_day_of_week",
        "etl_after_failure",
    }
    assert record.pagerduty_open is True
    pages = [e for e in env["pagerduty"].events if e["dedup_key"] == backfill.backfill_id]
    assert [e["event_action"] for e in pages] == ["trigger"]
    assert "etl_orders" in pages[0]["payload"]["summary"] and "always_fails" in pages[0]["payload"]["summary"]
    assert env["pagerduty"].incidents[backfill.backfill_id] == "triggered"
    failed_posts = [
        m for m in env["slack"].messages if backfill.backfill_id in m["text"] and "FAILED" in m["text"]
    ]
    assert failed_posts, env["slack"].messages


def test_missing_or_invalid_conf_fails_at_once_with_a_slack_post_and_runs_nothing(env, aws) -> None:
    airflow: LocalAirflow = env["airflow"]
    before = len(env["slack"].messages)
    state = run_backfill(airflow, {"backfill_id": "Not An Id", "plan_url": "s3://x/y"}, "bad_conf_run")
    assert state == "failed"
    states = task_states(airflow, "bad_conf_run")
    assert states["start"] == "failed"
    assert states["finish"] == "failed"
    assert all(
        state in ("skipped", "upstream_failed", None)
        for key, state in states.items()
        if key.startswith("round_")
    )
    log = airflow.task_log("backfill", "bad_conf_run", "start")
    assert "config_uri: field required" in log and "plan_uri: field required" in log
    assert "plan_url: unknown key; did you mean 'plan_uri'?" in log
    posted = env["slack"].messages[before:]
    assert any("refused" in m["text"] and "config_uri: field required" in m["text"] for m in posted), posted
