"""The DAG file parses (DagBag, as the dag-processor does) in each Spark runner configuration,
and a bad `[backfill]` option is an import error that names it. Each parse runs in a
subprocess with its own AIRFLOW_HOME, so the options are read fresh."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import DAGS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

PARSE = """
import json, sys
sys.path.insert(0, {dags!r})  # what the dag-processor does for the DAGs folder
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder={dags!r})
dag = bag.dags.get("backfill")
print(json.dumps({{
    "errors": {{k: v[-400:] for k, v in bag.import_errors.items()}},
    "dags": sorted(bag.dags),
    "tasks": {{t.task_id: type(t).__name__ for t in dag.tasks}} if dag else {{}},
    "emr_job_driver": getattr(dag.get_task("round_0.spark"), "job_driver", None) if dag else None,
}}))
"""


def parse(tmp_path: Path, options: dict[str, str]) -> dict:
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(tmp_path),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),  # Airflow puts it on sys.path, as on MWAA
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        **options,
    }
    result = subprocess.run(
        [sys.executable, "-c", PARSE.format(dags=str(DAGS))], env=env, capture_output=True, text=True, timeout=240
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_local_runner_shape(tmp_path: Path) -> None:
    parsed = parse(tmp_path, {"AIRFLOW__BACKFILL__MAX_ROUNDS": "2"})
    assert parsed["errors"] == {}
    assert parsed["dags"] == ["backfill", "email_discounts", "orders_popular_day_of_week", "reconciliation"]
    assert parsed["tasks"] == {
        "start": "_PythonDecoratedOperator",
        "round_0.prepare": "_PythonDecoratedOperator",
        "round_0.spark": "_PythonDecoratedOperator",
        "round_0.dag_runs": "MappedOperator",
        "round_1.prepare": "_PythonDecoratedOperator",
        "round_1.spark": "_PythonDecoratedOperator",
        "round_1.dag_runs": "MappedOperator",
        "finish": "_PythonDecoratedOperator",
    }


def test_emr_serverless_runner_is_configuration_not_code(tmp_path: Path) -> None:
    parsed = parse(
        tmp_path,
        {
            "AIRFLOW__BACKFILL__MAX_ROUNDS": "1",
            "AIRFLOW__BACKFILL__SPARK_RUNNER": "emr_serverless",
            "AIRFLOW__BACKFILL__EMR_APPLICATION_ID": "00fabc123",
            "AIRFLOW__BACKFILL__EMR_EXECUTION_ROLE_ARN": "arn:aws:iam::123456789012:role/emr-backfill",
            "AIRFLOW__BACKFILL__EMR_ENTRY_POINT": "s3://artifacts/spark_jobs/backfill_job.py",
        },
    )
    assert parsed["errors"] == {}
    assert parsed["tasks"]["round_0.has_spark"] == "ShortCircuitOperator"
    assert parsed["tasks"]["round_0.spark"] == "EmrServerlessStartJobOperator"
    submit = parsed["emr_job_driver"]["sparkSubmit"]
    assert submit["entryPoint"] == "s3://artifacts/spark_jobs/backfill_job.py"
    assert submit["entryPointArguments"][0::2] == ["--plan", "--warehouse", "--report"]
    assert "round_0.prepare" in submit["entryPointArguments"][1]


def test_a_bad_option_is_an_import_error_naming_it(tmp_path: Path) -> None:
    parsed = parse(tmp_path, {"AIRFLOW__BACKFILL__SPARK_RUNNER": "databricks"})
    (error,) = [v for k, v in parsed["errors"].items() if k.endswith("backfill_dag.py")]
    assert "spark_runner: expected one of ('local', 'emr_serverless'), got 'databricks'" in error
    parsed = parse(tmp_path, {"AIRFLOW__BACKFILL__SPARK_RUNNER": "emr_serverless"})
    (error,) = parsed["errors"].values()
    assert "needs emr_application_id, emr_execution_role_arn, emr_entry_point" in error
