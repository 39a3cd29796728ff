"""The daily `reconciliation` DAG: it parses (DagBag in a subprocess, as the dag-processor
does) with its four tasks on a daily schedule, and its options become the job's arguments."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from tests.support.airflow import DAGS

PARSE = """
import json, sys
sys.path.insert(0, {dags!r})
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder={dags!r})
dag = bag.dags["reconciliation"]
print(json.dumps({{
    "errors": {{k: v[-400:] for k, v in bag.import_errors.items()}},
    "schedule": dag.timetable.expression,
    "paused": dag.is_paused_upon_creation,
    "tasks": {{t.task_id: sorted(t.upstream_task_ids) for t in dag.tasks}},
}}))
"""


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_dag_parses_daily_with_its_tasks(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(tmp_path),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    }
    result = subprocess.run(
        [sys.executable, "-c", PARSE.format(dags=str(DAGS))],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    parsed = json.loads(result.stdout.strip().splitlines()[-1])
    assert parsed["errors"] == {}
    assert parsed["schedule"] == "0 0 * * *" and parsed["paused"] is True
    assert parsed["tasks"] == {
        "in_flight": [],
        "reconcile": ["in_flight"],
        "submit": ["reconcile"],
        "summarise": ["reconcile", "submit"],
    }


@pytest.fixture
def options(monkeypatch: pytest.MonkeyPatch):
    for key, value in {
        "RECONCILIATION_RULES": "s3://configs/reconciliation.yaml",
        "RECONCILIATION_CATALOG": "s3://configs/catalog.yaml",
        "CONFIG_BUCKET": "configs",
        "WAREHOUSE_URI": "s3a://lake",
        "RECONCILIATION_WINDOW_DAYS": "5",
        "RECONCILIATION_COMMAND": "spark-submit --master yarn reconcile_job.py",
    }.items():
        monkeypatch.setenv(f"AIRFLOW__BACKFILL__{key}", value)
    from backfill_runtime.reconcile import ReconciliationOptions

    return ReconciliationOptions.from_config()


def test_options_become_the_job_arguments_and_the_upload_places(options) -> None:
    from backfill_runtime.reconcile import job_arguments

    assert options.aws_conn_id == "aws_reconciliation" and options.owner == "@data-platform"
    assert options.command == ["spark-submit", "--master", "yarn", "reconcile_job.py"]
    arguments = job_arguments(
        options, end=date(2026, 1, 1), in_flight_plans=["s3://configs/backfills/a/plan.json"]
    )
    pairs = dict(zip(arguments[0::2], arguments[1::2], strict=True))
    assert pairs == {
        "--warehouse": "s3a://lake",
        "--rules": "s3://configs/reconciliation.yaml",
        "--catalog": "s3://configs/catalog.yaml",
        "--report": "s3://configs/reconciliation/2026-01-01/report.json",
        "--configs-out": "s3://configs/reconciliation/2026-01-01/configs",
        "--window-days": "5",
        "--end": "2026-01-01",
        "--owner": "@data-platform",
        "--in-flight-plan": "s3://configs/backfills/a/plan.json",
    }
    assert (
        options.incoming_uri("recon-260101-abcdef")
        == "s3://configs/incoming/reconciliation/recon-260101-abcdef.yaml"
    )


def test_missing_options_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from backfill_runtime.options import InvalidOptionError
    from backfill_runtime.reconcile import ReconciliationOptions

    monkeypatch.setenv("AIRFLOW__BACKFILL__RECONCILIATION_RULES", "rules.yaml")
    monkeypatch.delenv("AIRFLOW__BACKFILL__CONFIG_BUCKET", raising=False)
    monkeypatch.delenv("AIRFLOW__BACKFILL__RECONCILIATION_CATALOG", raising=False)
    with pytest.raises(
        InvalidOptionError, match=r"\[backfill\] reconciliation needs reconciliation_catalog, config_bucket"
    ):
        ReconciliationOptions.from_config()


def test_submit_uploads_every_staged_config_to_the_incoming_prefix(options, mocked_aws) -> None:
    import boto3
    from backfill_runtime.reconcile import submit_configs

    from backfill_orchestrator.reconciliation import ReconciliationReport
    from backfill_orchestrator.reconciliation.report import WrittenConfig

    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="configs")
    staged = "s3://configs/reconciliation/2026-01-01/configs/recon-260102-abcdef.yaml"
    config = (
        b"version: 1\nname: recon-260102-abcdef\nowner: '@data-platform'\nmode: batch\n"
        b"jobs: [{namespace: food_delivery, name: etl_orders}]\ndates: ['2021-05-06']\n"
    )
    s3.put_object(Bucket="configs", Key=staged.split("/", 3)[3], Body=config)
    report = ReconciliationReport(
        checked_at="2026-01-02T00:00:00+00:00",
        warehouse="s3a://lake",
        days=[date(2021, 5, 6)],
        tables=[],
        mismatches_found=1,
        mismatches_in_flight=0,
        mismatches_listed=[],
        configs=[
            WrittenConfig(
                name="recon-260102-abcdef",
                uri=staged,
                jobs=["etl_orders"],
                days=1,
                hours=None,
                feeds=None,
                mismatches=1,
            )
        ],
    )
    report_uri = options.report_uri(date(2026, 1, 1))
    s3.put_object(
        Bucket="configs", Key="reconciliation/2026-01-01/report.json", Body=report.to_json().encode()
    )
    submitted = submit_configs(options, report_uri=report_uri, s3_client=s3)
    assert submitted == ["s3://configs/incoming/reconciliation/recon-260102-abcdef.yaml"]
    body = s3.get_object(Bucket="configs", Key="incoming/reconciliation/recon-260102-abcdef.yaml")[
        "Body"
    ].read()
    assert body == config

    s3.put_object(Bucket="configs", Key=staged.split("/", 3)[3], Body=b"version: 1\nname: Not Valid\n")
    s3.delete_object(Bucket="configs", Key="incoming/reconciliation/recon-260102-abcdef.yaml")
    from backfill_orchestrator.config import InvalidConfigError

    with pytest.raises(InvalidConfigError):
        submit_configs(options, report_uri=report_uri, s3_client=s3)
    assert "Contents" not in s3.list_objects_v2(
        Bucket="configs", Prefix="incoming/"
    )  # nothing half-submitted
