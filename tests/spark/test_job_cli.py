"""The job's entry points as other components call them: arguments, exit codes, S3
locations, and `spark-submit` on the file itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import date

import boto3
import pytest
from moto import mock_aws

from spark_jobs.engine import backfill_job
from tests.support.configs import REPO_ROOT
from tests.support.spark import file_snapshot, hand_plan, hand_step

pytestmark = pytest.mark.slow

ONE_HOUR = hand_plan([hand_step("etl_orders", [date(2021, 5, 4)], hours=[6], feeds=["web"])])


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("plan_text", "expected"),
    [
        (None, "no such file"),
        ("{not json", "invalid JSON"),
        (json.dumps({"plan_version": 1}), "backfill_id: field required"),
        (
            ONE_HOUR.to_json().replace('"transform": "etl_orders"', '"transform": "etl_nope"'),
            "step etl_orders: unknown transform 'etl_nope'",
        ),
    ],
    ids=["missing", "not-json", "not-a-plan", "unknown-transform"],
)
def test_an_unusable_plan_exits_2_and_touches_nothing(pristine, tmp_path, capsys, plan_text, expected):
    plan = str(tmp_path / "plan.json") if plan_text is None else _write(tmp_path / "plan.json", plan_text)
    before = file_snapshot(pristine)
    assert backfill_job.main(["--plan", plan, "--warehouse", str(pristine)]) == 2
    assert expected in capsys.readouterr().err
    assert file_snapshot(pristine) == before
    assert not (tmp_path / "run_report.json").exists()


def test_bad_arguments_exit_2(tmp_path, capsys):
    plan = _write(tmp_path / "plan.json", ONE_HOUR.to_json())
    assert backfill_job.main(["--plan", plan]) == 2
    assert "--warehouse" in capsys.readouterr().err
    missing = tmp_path / "missing"
    assert backfill_job.main(["--plan", plan, "--warehouse", str(missing)]) == 2
    assert f"warehouse {missing}: no such directory" in capsys.readouterr().err
    assert backfill_job.main(["--plan", plan, "--warehouse", str(tmp_path), "--max-parallel", "0"]) == 2
    assert "must be at least 1" in capsys.readouterr().err


def test_plan_and_report_on_s3(spark, warehouse, monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="backfills")
        s3.put_object(Bucket="backfills", Key="runs/hand-made/plan.json", Body=ONE_HOUR.to_json().encode())
        code = backfill_job.main(
            ["--plan", "s3://backfills/runs/hand-made/plan.json", "--warehouse", str(warehouse)], s3_client=s3
        )
        assert code == 0
        report = json.loads(
            s3.get_object(Bucket="backfills", Key="runs/hand-made/run_report.json")["Body"].read()
        )
    assert report["status"] == "succeeded"
    assert report["steps"][0]["partitions_written"] == ["day=2021-05-04/hour=6/feed=web"]


def test_spark_submit_runs_the_file(warehouse, tmp_path):
    """`spark-submit spark_jobs/engine/backfill_job.py` from another directory, its own JVM."""
    plan = _write(tmp_path / "plans" / "plan.json", ONE_HOUR.to_json())
    report_path = tmp_path / "elsewhere" / "report.json"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    completed = subprocess.run(
        [
            str(REPO_ROOT / ".venv/bin/spark-submit"),
            "--master",
            "local[1]",
            "--conf",
            "spark.ui.enabled=false",
            str(REPO_ROOT / "spark_jobs/engine/backfill_job.py"),
            "--plan",
            plan,
            "--warehouse",
            str(warehouse),
            "--report",
            str(report_path),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "etl_orders: succeeded" in completed.stdout
    report = json.loads(report_path.read_text())
    assert report["application_id"].startswith("local-") and report["status"] == "succeeded"
