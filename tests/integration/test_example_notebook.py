"""The example notebook (Databricks source format) runs as plain Python against moto and the
Marquez double: it validates, plans, submits, lists and shows the status."""

from __future__ import annotations

import runpy

import boto3
import pytest

from backfill_local.marquez_double import MarquezDouble
from backfill_orchestrator.status import StatusStore
from tests.support.aws import create_table
from tests.support.configs import EXAMPLES

NOTEBOOK = EXAMPLES / "notebook_backfill.py"
BUCKET = "notebook-configs"


@pytest.fixture(scope="module")
def marquez():
    with MarquezDouble(seed="food_delivery") as double:
        yield double


def test_the_notebook_is_in_databricks_source_format():
    text = NOTEBOOK.read_text()
    assert text.startswith("# Databricks notebook source\n")
    assert text.count("\n# COMMAND ----------\n") >= 5


def test_the_example_notebook_runs_against_moto(mocked_aws, marquez, monkeypatch, capsys):
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket=BUCKET)
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    create_table(dynamodb, "StatusTable", table_name="notebook-status")
    for name, value in {
        "BACKFILL_BUCKET": BUCKET,
        "STATUS_TABLE": "notebook-status",
        "MARQUEZ_URL": marquez.url,
        "BACKFILL_JOB_CATALOG": str(EXAMPLES / "catalog.yaml"),
    }.items():
        monkeypatch.setenv(name, value)

    namespace = runpy.run_path(str(NOTEBOOK), run_name="__main__")
    submission = namespace["submission"]
    out = capsys.readouterr().out
    assert "valid: orders-outage-june, 4 days" in out
    assert f"plan {submission.backfill_id}: orders-outage-june" in out and "wave 1:" in out
    assert namespace["plan"].plan.steps[0].reason == "root" and marquez.lineage_requests
    assert f"submitted {submission.backfill_id} to s3://{BUCKET}/incoming/" in out
    assert s3.get_object(Bucket=BUCKET, Key=submission.key)["Body"].read()
    assert "has not been picked up yet" in out

    # Once the trigger has the record, the same cells list it and show its status.
    StatusStore(table_name="notebook-status", dynamodb_client=dynamodb).create(
        submission.backfill_id, attributes={"owner": "jane.doe@example.com", "name": "orders-outage-june"}
    )
    runpy.run_path(str(NOTEBOOK), run_name="__main__")
    out = capsys.readouterr().out
    assert f"{submission.backfill_id}  RECEIVED" in out
    assert f"status of {submission.backfill_id}: RECEIVED" in out
