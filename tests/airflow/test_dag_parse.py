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
    "upstream": {{t.task_id: sorted(t.upstream_task_ids) for t in dag.tasks}} if dag else {{}},
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
        "round_0.dag_runs": "DecoratedMappedOperator",
        "round_1.prepare": "_PythonDecoratedOperator",
        "round_1.spark": "_PythonDecoratedOperator",
        "round_1.dag_runs": "DecoratedMappedOperator",
        "next_run": "_PythonDecoratedOperator",
        "finish": "_PythonDecoratedOperator",
    }
    # next_run waits for every round, not only the last slot (start skips unused slots)
    assert parsed["upstream"]["next_run"] == [
        "round_0.dag_runs", "round_0.spark", "round_1.dag_runs", "round_1.spark",
    ]  # fmt: skip
    assert parsed["upstream"]["finish"] == ["next_run"]


@pytest.mark.parametrize("runner", ["emr_serverless", "emr", "databricks"])
def test_a_remote_runner_is_configuration_not_code(tmp_path: Path, runner: str) -> None:
    """Every runner is the same task (it submits on the profile's runner when it runs)."""
    parsed = parse(
        tmp_path,
        {
            "AIRFLOW__BACKFILL__MAX_ROUNDS": "1",
            "AIRFLOW__BACKFILL__SPARK_RUNNER": runner,
            "AIRFLOW__BACKFILL__SPARK_PROFILES_URI": "s3://deploy/spark/profiles.yaml",
        },
    )
    assert parsed["errors"] == {}
    assert parsed["tasks"]["round_0.spark"] == "_PythonDecoratedOperator"


def test_a_bad_option_is_an_import_error_naming_it(tmp_path: Path) -> None:
    parsed = parse(tmp_path, {"AIRFLOW__BACKFILL__SPARK_RUNNER": "kubernetes"})
    (error,) = [v for k, v in parsed["errors"].items() if k.endswith("backfill_dag.py")]
    assert "spark_runner: expected one of ('local', 'emr_serverless', 'emr', 'databricks'), got 'kubernetes'" in error
    parsed = parse(tmp_path, {"AIRFLOW__BACKFILL__SPARK_RUNNER": "emr_serverless"})
    (error,) = parsed["errors"].values()
    assert "spark_runner = emr_serverless needs spark_profiles_uri" in error
