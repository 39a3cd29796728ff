"""The `reconciliation` DAG on a real Airflow 3 (the one several modules share), with the real
reconciliation Spark job over a small broken sample warehouse, S3/DynamoDB/Secrets Manager on
moto and a local Slack: what a backfill in flight already repairs is not submitted; the rest
arrives in the incoming prefix as a valid config, and the Slack summary says so."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from backfill_local.airflow_local import LocalAirflow
from backfill_orchestrator.config import parse_config
from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.reconciliation import ReconciliationReport
from backfill_orchestrator.status import BackfillState
from tests.support.airflow import BUCKET, AirflowStack, AwsLocal, status_store

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]
IN_FLIGHT = "recon-in-flight-0000abcd"

BUILD = """
from datetime import date
from spark_jobs.engine.runner import run_everything
from spark_jobs.engine.scope import Scope
from spark_jobs.engine.session import spark_session
from spark_jobs.sample.data import GeneratorSettings, break_partitions, generate
from spark_jobs.sample.tables import ORDERS, TOP_DELIVERY_TIMES
from spark_jobs.sample.transforms import FOOD_DELIVERY
warehouse = {warehouse!r}
with spark_session("build", extra={{"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"}}) as spark:
    settings = GeneratorSettings(start=date(2021, 5, 1), days=4, orders_per_hour=2, hours_per_day={hours_per_day})
    generate(spark=spark, warehouse=warehouse, settings=settings)
    run_everything(spark=spark, warehouse=warehouse, registry=FOOD_DELIVERY)
    break_partitions(spark=spark, warehouse=warehouse, table=ORDERS,
                     scope=Scope(days=(date(2021, 5, 3),), hours=(5,), feeds=("web",)), mode="drop")
    break_partitions(spark=spark, warehouse=warehouse, table=TOP_DELIVERY_TIMES,
                     scope=Scope(days=(date(2021, 5, 2),), feeds=("partner",)), mode="drop")
"""


def _in_flight_backfill(aws: AwsLocal) -> None:
    """A triggered backfill whose plan already rewrites top_delivery_times on 2021-05-02."""
    store = status_store(aws)
    store.create(IN_FLIGHT, attributes={"name": "recon-in-flight", "owner": "@a", "mode": "batch"})
    store.transition(IN_FLIGHT, BackfillState.PLANNED, detail="planned")
    store.transition(IN_FLIGHT, BackfillState.TRIGGERED, detail="triggered")
    step = {
        "id": "delivery_times_7_days",
        "job": {"namespace": "food_delivery", "name": "delivery_times_7_days"},
        "dag_id": "delivery_times_7_days",
        "kind": "spark",
        "transform": "delivery_times_7_days",
        "dates": ["2021-05-02"],
        "reason": "root",
    }
    plan = Plan.model_validate(
        {
            "backfill_id": IN_FLIGHT,
            "name": "recon-in-flight",
            "owner": "@a",
            "created_at": "2026-01-01T00:00:00Z",
            "roots": [step["job"]],
            "dates": ["2021-05-02"],
            "waves": [{"index": 0, "steps": [step]}],
        }
    )
    aws.client("s3").put_object(
        Bucket=BUCKET, Key=f"backfills/{IN_FLIGHT}/plan.json", Body=plan.to_json().encode()
    )


@pytest.fixture(scope="module")
def env(shared_airflow: AirflowStack) -> dict[str, Any]:
    """The shared Airflow (its `[backfill]` reconciliation options: tests/conftest.py) over its
    warehouse, built here: four days of May 2021 with partitions dropped (the other modules of
    the stack only keep the fake Spark job's files there)."""
    from tests.support.spark import HOURS_PER_DAY

    built = subprocess.run(
        [
            sys.executable,
            "-c",
            BUILD.format(warehouse=str(shared_airflow.warehouse), hours_per_day=HOURS_PER_DAY),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    _in_flight_backfill(shared_airflow.aws)
    airflow = shared_airflow.airflow
    airflow.api("PATCH", "/dags/reconciliation", json_body={"is_paused": False})
    return {"airflow": airflow, "slack": shared_airflow.slack}


@pytest.fixture(scope="module")
def aws(shared_airflow: AirflowStack) -> AwsLocal:
    return shared_airflow.aws


def test_a_daily_run_submits_what_no_backfill_repairs_and_summarises(
    env: dict[str, Any], aws: AwsLocal
) -> None:
    airflow: LocalAirflow = env["airflow"]
    airflow.trigger("reconciliation", run_id="daily-1", conf={"end": "2021-05-04"})
    state = airflow.wait_for_run("reconciliation", "daily-1", timeout=900)
    if state != "success":
        logs = [
            airflow.task_log("reconciliation", "daily-1", ti["task_id"])
            for ti in airflow.task_instances("reconciliation", "daily-1")
            if ti["state"] != "success"
        ]
        pytest.fail(f"run {state}:\n" + "\n".join(log[-3000:] for log in logs))

    s3 = aws.client("s3")
    report = ReconciliationReport.from_json(
        s3.get_object(Bucket=BUCKET, Key="reconciliation/2021-05-04/report.json")["Body"].read()
    )
    assert [str(d) for d in report.days] == ["2021-05-01", "2021-05-02", "2021-05-03", "2021-05-04"]
    roles = {(m.table, str(m.day), m.role) for m in report.mismatches_listed}
    assert ("top_delivery_times", "2021-05-02", "in_flight") in roles
    assert ("orders", "2021-05-03", "root") in roles
    keys = [
        o["Key"]
        for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="incoming/reconciliation/").get("Contents", [])
    ]
    assert len(keys) == 1
    config = parse_config(s3.get_object(Bucket=BUCKET, Key=keys[0])["Body"].read(), source=keys[0])
    assert [j.name for j in config.jobs] == ["etl_orders"]
    assert [str(d) for d in config.days] == ["2021-05-03"] and config.hours == [5] and config.feeds == ["web"]
    assert "reconciliation/2021-05-04/report.json" in config.description

    # Unpaused, the DAG also ran for the latest day (no data there): its summary says so.
    summaries = [m["text"] for m in env["slack"].messages if m.get("text", "").startswith("Reconciliation")]
    mine = [text for text in summaries if text.startswith("Reconciliation 2021-05-01..05-04")]
    assert len(mine) == 1 and "mismatched partitions; 1 configs submitted" in mine[0]
    assert all("every table matches" in text for text in summaries if text not in mine)
