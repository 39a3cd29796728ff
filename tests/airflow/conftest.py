"""Fixtures for tests that run a real Airflow 3 (see backfill_local.airflow_local): one moto
server (S3, DynamoDB, Secrets Manager), local Slack and PagerDuty receivers, and one Airflow
per test module, with the repository's DAGs plus the test DAGs in tests/airflow/dags."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest

from backfill_local.airflow_local import PARSE_ONCE_SETTINGS
from backfill_orchestrator.config import backfill_id, parse_config
from backfill_orchestrator.contracts import ResultFile, RunConf
from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.documents import s3_version_uri
from backfill_orchestrator.status import BackfillState, StatusStore
from tests.support.aws import create_table

REPO = Path(__file__).resolve().parents[2]
DAGS = REPO / "dags"
TEST_DAGS = Path(__file__).resolve().parent / "dags"
FAKE_SPARK_JOB = Path(__file__).resolve().parent / "fake_spark_job.py"
BUCKET = "backfill-test"
TABLE = "backfill-status-test"
SLACK_TOKEN = "xoxb-airflow-test"
PD_KEY = "R0UT1NGKEY0F32CHARACTERSAIRFLOW0"
AWS_ENV = {
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
}


def dags_folder(tmp: Path) -> Path:
    """The repository's DAGs folder plus the test DAGs, as Airflow would get it deployed."""
    folder = tmp / "dags"
    shutil.copytree(DAGS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    for dag_file in TEST_DAGS.glob("*.py"):
        shutil.copy(dag_file, folder / dag_file.name)
    return folder


@dataclass
class AwsLocal:
    endpoint: str

    def client(self, service: str) -> Any:
        return boto3.client(service, endpoint_url=self.endpoint, **_boto_kwargs())


def _boto_kwargs() -> dict[str, str]:
    return {
        "region_name": AWS_ENV["AWS_DEFAULT_REGION"],
        "aws_access_key_id": AWS_ENV["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": AWS_ENV["AWS_SECRET_ACCESS_KEY"],
    }


@pytest.fixture(scope="module")
def aws() -> Iterator[AwsLocal]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    local = AwsLocal(endpoint=f"http://{host}:{port}")
    try:
        local.client("s3").create_bucket(Bucket=BUCKET)
        # Versioned as template.yaml's config bucket: the DAG reads configs by their uploaded version.
        local.client("s3").put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
        create_table(local.client("dynamodb"), "StatusTable", table_name=TABLE)
        secrets = local.client("secretsmanager")
        secrets.create_secret(Name="backfill/slack", SecretString=json.dumps({"bot_token": SLACK_TOKEN}))
        secrets.create_secret(Name="backfill/pagerduty", SecretString=json.dumps({"routing_key": PD_KEY}))
        yield local
    finally:
        # The server keeps its state in moto's process-wide backends: reset them, or the next
        # module's server (same pytest process) finds this module's table and bucket.
        import requests

        requests.post(f"{local.endpoint}/moto-api/reset", timeout=10)
        server.stop()


@pytest.fixture(scope="module")
def receivers() -> Iterator[tuple[Any, Any]]:
    from backfill_local.receivers import PagerDutyReceiver, SlackReceiver

    with SlackReceiver(token=SLACK_TOKEN) as slack, PagerDutyReceiver(routing_key=PD_KEY) as pagerduty:
        yield slack, pagerduty


def airflow_extra_env(
    *, aws: AwsLocal, slack: Any, pagerduty: Any, warehouse: Path, outputs: Path
) -> dict[str, str]:
    return {
        # every DAG file is in place before the boot: each is parsed once, not every 10 s
        **PARSE_ONCE_SETTINGS,
        **AWS_ENV,
        "AWS_ENDPOINT_URL": aws.endpoint,
        "AIRFLOW__BACKFILL__SPARK_COMMAND": f"{sys.executable} {FAKE_SPARK_JOB}",
        "AIRFLOW__BACKFILL__WAREHOUSE_URI": str(warehouse),
        "AIRFLOW__BACKFILL__MAX_ROUNDS": "3",
        "AIRFLOW__BACKFILL__TASK_RETRIES": "1",
        "AIRFLOW__BACKFILL__RETRY_DELAY_SECONDS": "1",
        "AIRFLOW__BACKFILL__MAX_PARALLEL_DAG_RUNS": "2",
        "AIRFLOW__BACKFILL__RERUN_POKE_SECONDS": "2",
        "AIRFLOW__BACKFILL__STATUS_TABLE": TABLE,
        "AIRFLOW__BACKFILL__SLACK_SECRET_ID": "backfill/slack",
        "AIRFLOW__BACKFILL__SLACK_API_URL": slack.api_url,
        "AIRFLOW__BACKFILL__SLACK_CHANNEL": "#backfills",
        "AIRFLOW__BACKFILL__PAGERDUTY_SECRET_ID": "backfill/pagerduty",
        "AIRFLOW__BACKFILL__PAGERDUTY_EVENTS_URL": pagerduty.events_url,
        "BACKFILL_SAMPLE_OUTPUT_DIR": str(outputs),
    }


# -- plans -------------------------------------------------------------------------------------
def step(
    step_id: str, kind: str, *, dates: list[str], upstream: list[str] | None = None, dag_id: str | None = None
) -> dict[str, Any]:
    return {
        "id": step_id,
        "job": {"namespace": "food_delivery", "name": step_id},
        "dag_id": dag_id or (step_id if kind == "airflow_dag" else "food_delivery_etl"),
        "kind": kind,
        "transform": step_id if kind == "spark" else None,
        "dates": dates,
        "reason": "downstream" if upstream else "root",
        "upstream": upstream or [],
    }


@dataclass
class StoredBackfill:
    backfill_id: str
    conf: dict[str, Any]
    plan: Plan


def store_backfill(
    aws: AwsLocal, *, name: str, waves: list[list[dict[str, Any]]], days: list[str], record: bool = True
) -> StoredBackfill:
    """Put a config and its plan in S3 and the status record in TRIGGERED, as the trigger
    function leaves them before starting the DAG."""
    config_doc = {
        "version": 1,
        "name": name,
        "owner": "jane.doe@example.com",
        "mode": "batch",
        "jobs": [{"namespace": "food_delivery", "name": waves[0][0]["id"]}],
        "dates": days,
        "notify": {"slack_channel": "#backfills", "pagerduty": True},
    }
    config = parse_config(config_doc, source="<test>")
    bid = backfill_id(config)
    plan = Plan.model_validate(
        {
            "backfill_id": bid,
            "name": name,
            "owner": config.owner,
            "created_at": datetime.now(UTC).isoformat(),
            "roots": [config.jobs[0].model_dump()],
            "dates": days,
            "waves": [{"index": i, "steps": steps} for i, steps in enumerate(waves)],
        }
    )
    s3 = aws.client("s3")
    config_key, plan_key = f"incoming/{bid}.json", f"backfills/{bid}/plan.json"
    version = s3.put_object(Bucket=BUCKET, Key=config_key, Body=json.dumps(config_doc).encode())["VersionId"]
    s3.put_object(Bucket=BUCKET, Key=plan_key, Body=plan.to_json().encode())
    if record:
        store = status_store(aws)
        store.create(bid, attributes={"name": name, "owner": config.owner, "mode": "batch"})
        store.transition(bid, BackfillState.PLANNED, detail="test plan")
        store.transition(bid, BackfillState.TRIGGERED, detail="test trigger")
    result_key = f"results/{bid}.json.result.json"
    result = ResultFile(
        source=f"s3://{BUCKET}/{config_key}",
        outcome="accepted",
        backfill_id=bid,
        state=BackfillState.TRIGGERED,
        status_id=bid,
        status_command=f"backfill status {bid}",
        written_at=datetime.now(UTC),
    )
    s3.put_object(Bucket=BUCKET, Key=result_key, Body=result.to_json().encode())
    conf = RunConf(
        backfill_id=bid,
        config_uri=s3_version_uri(BUCKET, config_key, version),
        plan_uri=f"s3://{BUCKET}/{plan_key}",
        result_uri=f"s3://{BUCKET}/{result_key}",
    ).to_conf()
    return StoredBackfill(bid, conf, plan)


def status_store(aws: AwsLocal) -> StatusStore:
    return StatusStore(table_name=TABLE, dynamodb_client=aws.client("dynamodb"))


def read_s3_json(aws: AwsLocal, uri: str) -> Any:
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return json.loads(aws.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read())


def day(text: str) -> date:
    return date.fromisoformat(text)
