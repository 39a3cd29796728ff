"""The trigger's harness (tests.support.trigger) with fault proxies in front of Marquez and
Airflow, production retry settings (AWS_CLIENT_CONFIG and `retrying_session`), and invocation
through the real Lambda handler with a request id and a remaining time, as Lambda does it
(`TriggerHarness.invoke_lambda`)."""

from __future__ import annotations

import json
from contextlib import ExitStack
from typing import Any

import boto3

from backfill_orchestrator.aws import AWS_CLIENT_CONFIG
from backfill_orchestrator.http import retrying_session
from backfill_orchestrator.status import StatusStore
from backfill_orchestrator.status.store import is_record
from backfill_orchestrator.trigger.wiring import TriggerWiring
from tests.faults.toolkit import FaultProxy
from tests.support.trigger import TABLE, TriggerHarness


class FaultHarness(TriggerHarness):
    def __init__(self, stack: ExitStack, **kwargs: Any):
        self.marquez_proxy = stack.enter_context(FaultProxy())
        self.airflow_proxy = stack.enter_context(FaultProxy())
        self.pagerduty_proxy = stack.enter_context(FaultProxy())
        env = {
            "MARQUEZ_URL": self.marquez_proxy.url,
            "AIRFLOW_URL": self.airflow_proxy.url,
            "PAGERDUTY_EVENTS_URL": f"{self.pagerduty_proxy.url}/v2/enqueue",
            **kwargs.pop("env", {}),
        }
        super().__init__(stack, env=env, **kwargs)
        self.marquez_proxy.upstream = f"http://127.0.0.1:{self.marquez_port}"
        self.airflow_proxy.upstream = self.airflow.url
        self.pagerduty_proxy.upstream = self.pagerduty.base_url
        # The production retry policy for AWS and HTTP (the fault tests are about it).
        self.s3 = boto3.client("s3", region_name="us-east-1", config=AWS_CLIENT_CONFIG)
        self.dynamodb = boto3.client("dynamodb", region_name="us-east-1", config=AWS_CLIENT_CONFIG)
        self.wiring = self.make_wiring()
        self.status = StatusStore(table_name=TABLE, dynamodb_client=self.dynamodb)

    def make_wiring(self) -> TriggerWiring:
        return TriggerWiring(
            self.settings,
            s3_client=self.s3,
            dynamodb_client=self.dynamodb,
            secrets_client=self.secrets,
            session_factory=retrying_session,
        )

    def result_or_none(self, key: str = "incoming/minimal-batch.yaml") -> dict[str, Any] | None:
        relative = key.removeprefix("incoming/")
        try:
            body = self.s3.get_object(Bucket=self.bucket, Key=f"results/{relative}.result.json")[
                "Body"
            ].read()
        except self.s3.exceptions.NoSuchKey:
            return None
        return json.loads(body)

    def item_size(self, backfill_id: str) -> int:
        """The stored item's size as DynamoDB counts it, near enough: names plus values."""
        item = self.dynamodb.get_item(TableName=TABLE, Key={"backfill_id": {"S": backfill_id}})["Item"]
        return sum(len(name) + len(json.dumps(value)) for name, value in item.items())

    def only_record_id(self) -> str:
        """The one status record (the table's other items, status/history.py and actions.py, aside)."""
        (item,) = [item for item in self.dynamodb.scan(TableName=TABLE)["Items"] if is_record(item)]
        return item["backfill_id"]["S"]
