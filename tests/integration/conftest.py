"""Fixtures the integration tests share: the replay function's world on moto, and the
expensive artefacts of the slow tests: one `sam build` of the template and one built wheel per
test run (`make test` keeps their users on one xdist worker)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from backfill_local.receivers import PagerDutyReceiver, SlackReceiver
from backfill_orchestrator.status import StatusStore
from tests.support.aws import TEMPLATE, create_table
from tests.support.configs import REPO_ROOT as REPO
from tests.support.replay import ARCHIVE, REGION, STATUS_TABLE, FakeClock, ReplayEnv, create_tables
from tests.support.sam import sam_env
from tests.support.trigger import CLAIMS, TriggerHarness
from tests.support.wheel import build_wheel


@dataclass(frozen=True)
class SamBuild:
    sam: str
    lambda_prefix: str  # a Python 3.12 install: the Lambda runtime's interpreter
    env: dict[str, str]
    build_dir: Path


@pytest.fixture(scope="session")
def sam_build(tmp_path_factory: pytest.TempPathFactory) -> SamBuild:
    """`sam build` of the whole template (every function and the shared layer), once."""
    sam, prefix = sam_env()
    tmp = tmp_path_factory.mktemp("sam")
    env = {
        **os.environ,
        "PATH": f"{prefix}/bin{os.pathsep}{os.environ['PATH']}",
        "SAM_CLI_TELEMETRY": "0",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    build_dir = tmp / "build"
    build = subprocess.run(
        [
            sam,
            "build",
            "--template",
            str(TEMPLATE),
            "--base-dir",
            str(REPO),
            "--build-dir",
            str(build_dir),
            "--cache-dir",
            str(tmp / "cache"),
            "--no-cached",
        ],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    return SamBuild(sam=sam, lambda_prefix=prefix, env=env, build_dir=build_dir)


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built once (see test_wheel_install.build_wheel)."""
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture
def replay_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[ReplayEnv]:
    """moto with the archive bucket, the ledger and status tables and the target queue, Slack and
    PagerDuty on local receivers, and a fake clock (tests/support/replay.py)."""
    for key, value in {
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }.items():
        monkeypatch.setenv(key, value)
    with mock_aws(), SlackReceiver() as slack, PagerDutyReceiver() as pagerduty:
        s3, sqs, ddb = (boto3.client(name, region_name=REGION) for name in ("s3", "sqs", "dynamodb"))
        s3.create_bucket(Bucket=ARCHIVE)
        create_tables(ddb)
        target_url = sqs.create_queue(QueueName="orders-ingest")["QueueUrl"]
        yield ReplayEnv(
            s3=s3,
            sqs=sqs,
            ddb=ddb,
            target_url=target_url,
            store=StatusStore(table_name=STATUS_TABLE, dynamodb_client=ddb),
            clock=FakeClock(),
            slack=slack,
            pagerduty=pagerduty,
        )


@pytest.fixture
def lifecycle(mocked_aws: None) -> Iterator[TriggerHarness]:
    """The trigger's harness with overlap protection (the template's claims table, CLAIMS) and
    the DAGs the sample plan reruns."""
    with ExitStack() as stack:
        create_table(boto3.client("dynamodb", region_name="us-east-1"), "ClaimsTable", table_name=CLAIMS)
        harness = TriggerHarness(stack, env={"CLAIMS_TABLE": CLAIMS})
        harness.airflow.dag_ids |= {"email_discounts", "orders_popular_day_of_week"}
        yield harness
