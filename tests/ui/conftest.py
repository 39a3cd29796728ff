"""The page's app in this process, over moto (`mocked_aws`): the real routes, sources, views and
actions; users from `FakeAccess` (Airflow's auth manager is the browser tests')."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from fastapi.testclient import TestClient

from backfill_orchestrator.ui.actions import ActionDesk
from backfill_orchestrator.ui.app import create_app
from backfill_orchestrator.ui.settings import PageSettings
from backfill_orchestrator.ui.sources import Sources
from tests.support.aws import create_table
from tests.support.policy import POLICY_YAML
from tests.support.ui import FakeAccess, FakeRuns, RecordingClient

BUCKET = "backfill-configs-page"
TABLE = "backfill-status-page"
# The shared test policy, with Airflow users: jane signs in to Airflow as `jane`, bob as `bob`.
PAGE_POLICY = POLICY_YAML.replace(
    'aws: ["role/data-eng/jane.doe@example.com"]',
    'aws: ["role/data-eng/jane.doe@example.com"]\n    airflow: [jane]',
).replace("slack_user: U0BOB\n", "slack_user: U0BOB\n    airflow: [bob, bob.*]\n")
USERS = {"jane": "user", "bob": "user", "vic": "viewer", "mallory": "user", "olga": "outsider"}


@dataclass
class PageHarness:
    client: TestClient
    s3: Any
    dynamodb: RecordingClient
    runs: FakeRuns
    access: FakeAccess

    def as_user(self, name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {name}"}


@pytest.fixture
def page(mocked_aws: None) -> Iterator[PageHarness]:
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket=BUCKET)
    s3.put_object(Bucket=BUCKET, Key="policy.yaml", Body=PAGE_POLICY.encode())
    dynamodb = RecordingClient(boto3.client("dynamodb", region_name="us-east-1"))
    create_table(dynamodb, "StatusTable", table_name=TABLE)
    settings = PageSettings(
        status_table=TABLE,
        config_bucket=BUCKET,
        policy_uri=f"s3://{BUCKET}/policy.yaml",
        slack_web_url="https://acme.slack.com",
        lineage_web_url="http://marquez.local:3000",
    )
    runs = FakeRuns()
    sources = Sources(settings=settings, dynamodb_client=dynamodb, s3_client=s3, runs=runs)
    access = FakeAccess(roles=USERS)
    desk = ActionDesk(bucket=BUCKET, s3_client=s3, policy=sources.policy)
    app = create_app(sources=sources, access=access, desk=desk)
    with TestClient(app, base_url="http://testserver") as client:
        yield PageHarness(client=client, s3=s3, dynamodb=dynamodb, runs=runs, access=access)
