"""The DAG file parses (DagBag, as the dag-processor does) in each Spark runner configuration,
and a bad `[backfill]` option is an import error that names it. Every configuration is parsed
in one subprocess (importing Airflow once, not once per case): each DagBag executes the DAG
file again, which reads the `[backfill]` options afresh from the environment it is given."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.airflow import DAGS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

PARSE = """
import json, os, sys
sys.path.insert(0, {dags!r})  # what the dag-processor does for the DAGs folder
from airflow.dag_processing.dagbag import DagBag
results = {{}}
for name, options in json.loads(sys.argv[1]).items():
    for key in [k for k in os.environ if k.startswith("AIRFLOW__BACKFILL__")]:
        del os.environ[key]
    os.environ.update(options)
    bag = DagBag(dag_folder={dags!r})
    dag = bag.dags.get("backfill")
    results[name] = {{
        "errors": {{k: v[-400:] for k, v in bag.import_errors.items()}},
        "dags": sorted(bag.dags),
        "tasks": {{t.task_id: type(t).__name__ for t in dag.tasks}} if dag else {{}},
        "upstream": {{t.task_id: sorted(t.upstream_task_ids) for t in dag.tasks}} if dag else {{}},
    }}
print(json.dumps(results))
"""
REMOTE = {
    "AIRFLOW__BACKFILL__MAX_ROUNDS": "1",
    "AIRFLOW__BACKFILL__SPARK_PROFILES_URI": "s3://deploy/spark/profiles.yaml",
}
CASES = {
    "local": {"AIRFLOW__BACKFILL__MAX_ROUNDS": "2"},
    **{
        runner: {**REMOTE, "AIRFLOW__BACKFILL__SPARK_RUNNER": runner}
        for runner in ("emr_serverless", "emr", "databricks")
    },
    "unknown-runner": {"AIRFLOW__BACKFILL__SPARK_RUNNER": "kubernetes"},
    "remote-without-profiles": {"AIRFLOW__BACKFILL__SPARK_RUNNER": "emr_serverless"},
}


@pytest.fixture(scope="module")
def parsed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Every case of CASES, parsed."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW__BACKFILL__")},
        "AIRFLOW_HOME": str(tmp_path_factory.mktemp("airflow-home")),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),  # Airflow puts it on sys.path, as on MWAA
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    }
    result = subprocess.run(
        [sys.executable, "-c", PARSE.format(dags=str(DAGS)), json.dumps(CASES)],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_local_runner_shape(parsed: dict[str, dict]) -> None:
    parsed = parsed["local"]
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
        "round_0.dag_runs",
        "round_0.spark",
        "round_1.dag_runs",
        "round_1.spark",
    ]
    assert parsed["upstream"]["finish"] == ["next_run"]


@pytest.mark.parametrize("runner", ["emr_serverless", "emr", "databricks"])
def test_a_remote_runner_is_configuration_not_code(parsed: dict[str, dict], runner: str) -> None:
    """Every runner is the same task (it submits on the profile's runner when it runs)."""
    assert parsed[runner]["errors"] == {}
    assert parsed[runner]["tasks"]["round_0.spark"] == "_PythonDecoratedOperator"
    assert "round_1.spark" not in parsed[runner]["tasks"]  # max_rounds = 1 of this case, not the last one's 2


def test_a_bad_option_is_an_import_error_naming_it(parsed: dict[str, dict]) -> None:
    (error,) = [v for k, v in parsed["unknown-runner"]["errors"].items() if k.endswith("backfill_dag.py")]
    assert (
        "spark_runner: expected one of ('local', 'emr_serverless', 'emr', 'databricks'), got 'kubernetes'"
        in error
    )
    (error,) = parsed["remote-without-profiles"]["errors"].values()
    assert "spark_runner = emr_serverless needs spark_profiles_uri" in error
