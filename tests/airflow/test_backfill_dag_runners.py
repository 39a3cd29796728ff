"""The `backfill` DAG driving each remote Spark runner through a whole backfill on a real
Airflow 3, the runner's API faked at the wire: EMR Serverless and EMR on the moto server, and
Databricks on the local Jobs API double. A "cluster" thread in this process plays the service:
it sees each new job run / step / run, runs the fake Spark job with the submitted arguments
(the run report lands in S3 like the real job's), then moves the run to its end state.

One profiles file in S3 maps the plan's profile names to runners: small -> databricks,
medium -> emr_serverless, large -> emr."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from backfill_local.airflow_local import LocalAirflow
from backfill_local.databricks_double import DatabricksJobsDouble
from backfill_orchestrator.status import BackfillState
from tests.support.airflow import (
    AWS_ENV,
    BUCKET,
    FAKE_SPARK_JOB,
    AwsLocal,
    airflow_extra_env,
    dags_folder,
    explain,
    read_s3_json,
    run_backfill,
    status_store,
    step,
    store_backfill,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
PROFILES_KEY = "deploy/spark/profiles.yaml"
ACCOUNT_REGION = ("123456789012", AWS_ENV["AWS_DEFAULT_REGION"])
PROFILES = {
    "profiles": {
        "small": {
            "runner": "databricks",
            "spark_version": "15.4.x-scala2.12",
            "node_type_id": "i3.xlarge",
            "num_workers": 3,
        },
        "medium": {
            "runner": "emr_serverless",
            "driver": {"cores": 2, "memory_gb": 8},
            "executor": {"cores": 4, "memory_gb": 16},
            "max_capacity": {"cpu": 42, "memory_gb": 200},
        },
        "large": {
            "runner": "emr",
            "release_label": "emr-7.5.0",
            "instance_groups": [
                {"role": "MASTER", "instance_type": "m6g.xlarge", "count": 1},
                {"role": "CORE", "instance_type": "r6g.2xlarge", "count": 3},
            ],
            "managed_scaling": {"minimum": 4, "maximum": 12},
        },
    }
}


def _fake_job(arguments: list[str], endpoint: str) -> int:
    env = {**os.environ, **AWS_ENV, "AWS_ENDPOINT_URL": endpoint}
    return subprocess.run([sys.executable, str(FAKE_SPARK_JOB), *arguments], env=env, timeout=120).returncode


class Cluster:
    """Plays EMR Serverless, EMR and Databricks: runs the fake job for each new submission."""

    def __init__(self, databricks: DatabricksJobsDouble, endpoint: str):
        self.databricks = databricks
        self.endpoint = endpoint
        self.seen: set[str] = set()
        self.stop = threading.Event()
        self.errors: list[str] = []
        databricks.on_submit = self._databricks

    def _databricks(self, run_id: int, body: dict[str, Any]) -> None:
        arguments = body["tasks"][0]["spark_python_task"]["parameters"]

        def run() -> None:
            code = _fake_job(arguments, self.endpoint)
            self.databricks.finish(run_id, "SUCCESS" if code == 0 else "FAILED")

        threading.Thread(target=run, daemon=True).start()

    def _aws_once(self) -> None:
        from moto.emr.models import emr_backends
        from moto.emrserverless.models import emrserverless_backends

        account, region = ACCOUNT_REGION
        for runs in emrserverless_backends[account][region].job_runs.values():
            for run in runs:
                if run.id not in self.seen and run.state == "SUBMITTED":
                    self.seen.add(run.id)
                    run.state = "RUNNING"
                    code = _fake_job(run.job_driver["sparkSubmit"]["entryPointArguments"], self.endpoint)
                    run.state = "SUCCESS" if code == 0 else "FAILED"
        for cluster in emr_backends[account][region].clusters.values():
            for emr_step in cluster.steps:
                if emr_step.id not in self.seen and emr_step.state in ("PENDING", "RUNNING"):
                    self.seen.add(emr_step.id)
                    emr_step.state = "RUNNING"
                    argv = emr_step.args
                    arguments = argv[argv.index("--plan") :]
                    emr_step.state = "COMPLETED" if _fake_job(arguments, self.endpoint) == 0 else "FAILED"

    def loop(self) -> None:
        while not self.stop.is_set():
            try:
                self._aws_once()
            except Exception as error:  # noqa: BLE001 - reported by the test
                self.errors.append(repr(error))
            time.sleep(0.5)


@pytest.fixture(scope="module")
def env(
    tmp_path_factory: pytest.TempPathFactory, aws: AwsLocal, receivers: tuple[Any, Any]
) -> Iterator[dict[str, Any]]:
    import moto.emrserverless.models as serverless_models

    slack, pagerduty = receivers
    tmp = tmp_path_factory.mktemp("backfill-dag-runners")
    warehouse, outputs = tmp / "warehouse", tmp / "outputs"
    s3 = aws.client("s3")
    s3.put_object(Bucket=BUCKET, Key=PROFILES_KEY, Body=yaml.safe_dump(PROFILES).encode())
    application_id = aws.client("emr-serverless").create_application(
        name="backfill", releaseLabel="emr-7.5.0", type="SPARK"
    )["applicationId"]
    original_state = serverless_models.JOB_STATUS
    serverless_models.JOB_STATUS = "SUBMITTED"  # moto creates runs SUCCESS; real ones start SUBMITTED
    with DatabricksJobsDouble(hold=True) as databricks:
        cluster = Cluster(databricks, aws.endpoint)
        thread = threading.Thread(target=cluster.loop, daemon=True)
        thread.start()
        extra = {
            **airflow_extra_env(
                aws=aws, slack=slack, pagerduty=pagerduty, warehouse=warehouse, outputs=outputs
            ),
            "AIRFLOW__BACKFILL__WAREHOUSE_URI": f"s3://{BUCKET}/warehouse/",  # remote runners write s3://
            "AIRFLOW__BACKFILL__SPARK_PROFILES_URI": f"s3://{BUCKET}/{PROFILES_KEY}",
            "AIRFLOW__BACKFILL__SPARK_ENTRY_POINT": f"s3://{BUCKET}/artifacts/backfill_job.py",
            "AIRFLOW__BACKFILL__SPARK_PY_FILES": f"s3://{BUCKET}/artifacts/backfill_orchestrator.zip",
            "AIRFLOW__BACKFILL__SPARK_POLL_SECONDS": "1",
            "AIRFLOW__BACKFILL__EMR_APPLICATION_ID": application_id,
            "AIRFLOW__BACKFILL__EMR_EXECUTION_ROLE_ARN": "arn:aws:iam::123456789012:role/backfill-emr-job",
            "AIRFLOW__BACKFILL__DATABRICKS_HOST": databricks.host,
            "DATABRICKS_TOKEN": databricks.token,
        }
        try:
            with LocalAirflow(dags_folder=dags_folder(tmp), home=tmp / "home", extra_env=extra) as airflow:
                airflow.wait_for_dags(["backfill", "orders_popular_day_of_week"])
                yield {
                    "airflow": airflow,
                    "databricks": databricks,
                    "cluster": cluster,
                    "application_id": application_id,
                }
        finally:
            cluster.stop.set()
            thread.join(timeout=10)
            serverless_models.JOB_STATUS = original_state


def _backfill(aws: AwsLocal, *, name: str, profile: str) -> Any:
    days = ["2021-06-04", "2021-06-05"]
    waves = [
        [step("etl_orders", "spark", dates=days)],
        [step("orders_popular_day_of_week", "airflow_dag", dates=days, upstream=["etl_orders"])],
    ]
    backfill = store_backfill(aws, name=name, waves=waves, days=days)
    plan = backfill.plan.model_copy(update={"spark_profile": profile})
    aws.client("s3").put_object(
        Bucket=BUCKET, Key=f"backfills/{backfill.backfill_id}/plan.json", Body=plan.to_json().encode()
    )
    return backfill


def _succeeded(env: dict[str, Any], aws: AwsLocal, backfill: Any) -> dict[str, Any]:
    airflow: LocalAirflow = env["airflow"]
    state = run_backfill(airflow, backfill.conf, backfill.backfill_id)
    assert state == "success", (
        explain(airflow, backfill.backfill_id) + "\n" + "\n".join(env["cluster"].errors)
    )
    report = read_s3_json(aws, backfill.conf["plan_uri"].replace("plan.json", "backfill_report.json"))
    assert report["counts"] == {
        "pending": 0,
        "succeeded": 2,
        "failed": 0,
        "blocked": 0,
        "awaiting_publish": 0,
    }
    assert status_store(aws).get(backfill.backfill_id).state == BackfillState.SUCCEEDED
    return report


def test_emr_serverless_runs_a_whole_backfill(env: dict[str, Any], aws: AwsLocal) -> None:
    from moto.emrserverless.models import emrserverless_backends

    backfill = _backfill(aws, name="serverless-run", profile="medium")
    _succeeded(env, aws, backfill)
    history = json.dumps(status_store(aws).get(backfill.backfill_id).history)
    assert "Spark profile medium on emr_serverless (driver 2 vCPU/8 GB" in history
    account, region = ACCOUNT_REGION
    (run,) = [
        r
        for r in emrserverless_backends[account][region].job_runs[env["application_id"]]
        if backfill.backfill_id in r.name
    ]
    properties = run.configuration_overrides["applicationConfiguration"][0]["properties"]
    assert (
        properties["spark.executor.cores"] == "4"
        and properties["spark.dynamicAllocation.maxExecutors"] == "10"
    )
    assert run.job_driver["sparkSubmit"]["entryPointArguments"][3] == f"s3://{BUCKET}/warehouse/"


def test_emr_runs_a_whole_backfill_on_its_own_cluster(env: dict[str, Any], aws: AwsLocal) -> None:
    from moto.emr.models import emr_backends

    backfill = _backfill(aws, name="emr-run", profile="large")
    _succeeded(env, aws, backfill)
    account, region = ACCOUNT_REGION
    (cluster,) = [
        c for c in emr_backends[account][region].clusters.values() if backfill.backfill_id in c.name
    ]
    assert cluster.state == "TERMINATED"  # created for the round, terminated after it
    assert sorted(group.num_instances for group in cluster.instance_groups) == [1, 3]


def test_databricks_runs_a_whole_backfill(env: dict[str, Any], aws: AwsLocal) -> None:
    backfill = _backfill(aws, name="databricks-run", profile="small")
    _succeeded(env, aws, backfill)
    databricks: DatabricksJobsDouble = env["databricks"]
    assert databricks.rejected == []
    (run,) = [r for r in databricks.runs.values() if backfill.backfill_id in r.body["run_name"]]
    assert run.body["tasks"][0]["new_cluster"]["num_workers"] == 3


def test_an_unknown_profile_refuses_the_run(env: dict[str, Any], aws: AwsLocal) -> None:
    s3 = aws.client("s3")
    only_small = {"profiles": {"small": PROFILES["profiles"]["small"]}}
    s3.put_object(Bucket=BUCKET, Key=PROFILES_KEY, Body=yaml.safe_dump(only_small).encode())
    try:
        backfill = _backfill(aws, name="unknown-profile", profile="large")
        airflow: LocalAirflow = env["airflow"]
        assert run_backfill(airflow, backfill.conf, backfill.backfill_id) == "failed"
        record = status_store(aws).get(backfill.backfill_id)
        assert "unknown Spark profile 'large'; this deployment has small" in json.dumps(record.history)
    finally:
        s3.put_object(Bucket=BUCKET, Key=PROFILES_KEY, Body=yaml.safe_dump(PROFILES).encode())
