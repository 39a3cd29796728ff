"""The trigger's test harness: everything the trigger talks to, local (moto for S3, DynamoDB,
Secrets Manager and SQS; the Marquez double seeded with the food delivery sample; the strict
Airflow 3 double; the Slack and PagerDuty receivers; all on 127.0.0.1), the S3 events that
announce uploads, and the sample configs the trigger tests use."""

from __future__ import annotations

import itertools
import json
import logging
import socket
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from typing import Any

import boto3
from aws_lambda_powertools.metrics import EphemeralMetrics

from backfill_local.airflow_double import AirflowDouble
from backfill_local.marquez_double import MarquezDouble
from backfill_local.receivers import PagerDutyReceiver, SlackReceiver
from backfill_orchestrator.http import HttpSession, retrying_session
from backfill_orchestrator.settings import DeploymentSettings
from backfill_orchestrator.status import StatusStore
from backfill_orchestrator.trigger.service import UploadResult
from backfill_orchestrator.trigger.wiring import TriggerWiring
from tests.support.aws import create_table
from tests.support.configs import EXAMPLES, REPO_ROOT
from tests.support.lambda_context import FakeLambdaContext

REPO = REPO_ROOT
BUCKET = "backfill-configs-test"
TABLE = "backfill-status-test"
CLAIMS = "backfill-claims-test"
SLACK_TOKEN = "xoxb-test-token-123"
ROUTING_KEY = "R0UT1NGKEY0F32CHARACTERSTEST0000"
VALID = (EXAMPLES / "minimal-batch.yaml").read_bytes()
INVALID = b"""version: 1
name: Bad_Name
owner: nobody
mode: batch
jobs: [{namespace: food_delivery, name: etl_orders}]
dates: [2021-06-31]
"""


def second_config(name: str = "etl-orders-0604-b") -> bytes:
    """VALID under another name: the same jobs and dates (it overlaps VALID's backfill)."""
    return VALID.replace(b"etl-orders-0604", name.encode())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def fast_session() -> HttpSession:
    """The production retry policy with a shorter backoff, so that outage tests stay quick."""
    return retrying_session(retries=2, backoff_factor=0.01, backoff_max=0.05, timeout=(1.0, 5.0))


def s3_event(
    key: str, *, size: int, version_id: str | None, etag: str, sequencer: str, bucket: str = BUCKET
) -> dict[str, Any]:
    """The S3 notification shape (event version 2.1) for one ObjectCreated:Put."""
    obj: dict[str, Any] = {
        "key": key.replace(" ", "+"),
        "size": size,
        "eTag": etag.strip('"'),
        "sequencer": sequencer,
    }
    if version_id:
        obj["versionId"] = version_id
    return {
        "Records": [
            {
                "eventVersion": "2.1",
                "eventSource": "aws:s3",
                "awsRegion": "us-east-1",
                "eventTime": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
                "eventName": "ObjectCreated:Put",
                "userIdentity": {"principalId": "AWS:EXAMPLE"},
                "requestParameters": {"sourceIPAddress": "127.0.0.1"},
                "responseElements": {"x-amz-request-id": "EXAMPLE", "x-amz-id-2": "EXAMPLE"},
                "s3": {
                    "s3SchemaVersion": "1.0",
                    "configurationId": "config-upload",
                    "bucket": {
                        "name": bucket,
                        "ownerIdentity": {"principalId": "EXAMPLE"},
                        "arn": f"arn:aws:s3:::{bucket}",
                    },
                    "object": obj,
                },
            }
        ]
    }


def merge_events(*events: dict[str, Any]) -> dict[str, Any]:
    return {"Records": [record for event in events for record in event["Records"]]}


class TriggerHarness:
    """Everything the trigger talks to, local. `upload()` puts a config and returns the S3
    event that announces it; `invoke()` runs the trigger's service on an event, `invoke_lambda()`
    its Lambda handler with this harness's wiring standing for the container's."""

    def __init__(
        self,
        stack: ExitStack,
        *,
        marquez_up: bool = True,
        env: dict[str, str] | None = None,
        bucket: str = BUCKET,
    ):
        self.stack = stack
        self.bucket = bucket
        self.slack = stack.enter_context(SlackReceiver(token=SLACK_TOKEN))
        self.pagerduty = stack.enter_context(PagerDutyReceiver(routing_key=ROUTING_KEY))
        self.airflow = stack.enter_context(AirflowDouble(dag_ids={"backfill"}))
        self.marquez_port = free_port()
        self.marquez: MarquezDouble | None = None
        if marquez_up:
            self.start_marquez()
        self.s3 = boto3.client("s3", region_name="us-east-1")
        self.dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        self.secrets = boto3.client("secretsmanager", region_name="us-east-1")
        self.sqs = boto3.client("sqs", region_name="us-east-1")
        self.s3.create_bucket(Bucket=bucket)
        self.s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
        create_table(self.dynamodb, "StatusTable", table_name=TABLE)
        self.s3.put_object(
            Bucket=bucket, Key="catalog/catalog.yaml", Body=(EXAMPLES / "catalog.yaml").read_bytes()
        )
        arns = {
            "slack": self._secret("backfill/slack", json.dumps({"bot_token": SLACK_TOKEN})),
            "pagerduty": self._secret("backfill/pagerduty", json.dumps({"routing_key": ROUTING_KEY})),
            "airflow": self._secret(
                "backfill/airflow", json.dumps({"username": "admin", "password": "admin"})
            ),
        }
        self.env = {
            "CONFIG_BUCKET": bucket,
            "STATUS_TABLE": TABLE,
            "MARQUEZ_URL": f"http://127.0.0.1:{self.marquez_port}",
            "AIRFLOW_URL": self.airflow.url,
            "AIRFLOW_SECRET_ID": arns["airflow"],
            "BACKFILL_DAG_ID": "backfill",
            "SLACK_API_URL": self.slack.api_url,
            "SLACK_SECRET_ID": arns["slack"],
            "SLACK_CHANNEL": "#backfills",
            "PAGERDUTY_EVENTS_URL": self.pagerduty.events_url,
            "PAGERDUTY_SECRET_ID": arns["pagerduty"],
            "JOB_CATALOG_URI": f"s3://{bucket}/catalog/catalog.yaml",
            **(env or {}),
        }
        self.settings = DeploymentSettings.from_env(self.env)
        self.wiring = self.make_wiring()
        self.status = StatusStore(table_name=TABLE, dynamodb_client=self.dynamodb)
        self.metrics = EphemeralMetrics(namespace="BackfillTest")  # not shared across tests, unlike Metrics
        self._sequencer = itertools.count(1)
        self.delivered: set[str] = set()

    def make_wiring(self) -> TriggerWiring:
        """The container's wiring for `self.settings` (subclasses choose clients and sessions)."""
        return TriggerWiring(
            self.settings,
            s3_client=self.s3,
            dynamodb_client=self.dynamodb,
            secrets_client=self.secrets,
            session_factory=fast_session,
        )

    def rewire(self, **env: str) -> None:
        """A new container with these variables changed (settings are read once per container)."""
        self.env = {**self.env, **env}
        self.settings = DeploymentSettings.from_env(self.env)
        self.wiring = self.make_wiring()

    def _secret(self, name: str, value: str) -> str:
        return self.secrets.create_secret(Name=name, SecretString=value)["ARN"]

    def start_marquez(self) -> None:
        self.marquez = self.stack.enter_context(MarquezDouble(seed="food_delivery", port=self.marquez_port))

    def next_sequencer(self) -> str:
        """S3's per-key event sequencer: increasing, 16 hex digits."""
        return f"{next(self._sequencer):016X}"

    def upload(self, body: bytes, key: str = "incoming/minimal-batch.yaml") -> dict[str, Any]:
        put = self.s3.put_object(Bucket=self.bucket, Key=key, Body=body)
        return s3_event(
            key,
            size=len(body),
            version_id=put.get("VersionId"),
            etag=put["ETag"],
            sequencer=self.next_sequencer(),
            bucket=self.bucket,
        )

    def deliver(self, key: str) -> list[UploadResult]:
        """Handle the S3 event of an object a client already wrote (as the bucket's notification would)."""
        head = self.s3.head_object(Bucket=self.bucket, Key=key)
        return self.invoke(
            s3_event(
                key,
                size=head["ContentLength"],
                version_id=head.get("VersionId"),
                etag=head["ETag"],
                sequencer=self.next_sequencer(),
                bucket=self.bucket,
            )
        )

    def deliver_new(self, prefix: str = "control/") -> int:
        """Deliver every object under `prefix` not delivered yet; how many were."""
        listed = self.s3.list_objects_v2(Bucket=self.bucket, Prefix=prefix).get("Contents", [])
        new = sorted(obj["Key"] for obj in listed if obj["Key"] not in self.delivered)
        for key in new:
            self.delivered.add(key)
            self.deliver(key)
        return len(new)

    @contextmanager
    def delivering(self, prefix: str = "control/", *, every: float = 0.05) -> Iterator[None]:
        """Deliver new objects under `prefix` from a thread, as S3 notifications reach the
        trigger in a deployment, while a CLI command or client call waits for the answer."""
        stop = threading.Event()
        failures: list[BaseException] = []

        def loop() -> None:
            while not stop.is_set():
                try:
                    self.deliver_new(prefix)
                except BaseException as error:  # noqa: BLE001 - reported by the test
                    failures.append(error)
                    return
                stop.wait(every)

        thread = threading.Thread(target=loop, name="deliver-controls", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=30)
        assert not failures, failures

    def invoke(self, event: dict[str, Any]) -> list[UploadResult]:
        service = self.wiring.service(metrics=self.metrics, logger=logging.getLogger("test"))
        return service.handle_event(event, lease_seconds=60)

    def invoke_lambda(
        self,
        event: dict[str, Any],
        *,
        request_id: str = "00000000-0000-0000-0000-000000000000",
        remaining_seconds: float = 300.0,
    ) -> dict[str, Any]:
        """Run the Lambda handler as Lambda would: this harness's wiring stands for the
        container's, `request_id` is the invocation's (Lambda's retries of an event reuse it),
        the remaining time counts down."""
        from backfill_orchestrator.trigger import handler as trigger_handler

        trigger_handler.metrics.clear_metrics()  # Metrics instances share one store
        context = FakeLambdaContext(
            request_id=request_id, remaining_seconds=remaining_seconds, counting_down=True
        )
        with trigger_handler.trigger_wiring(self.wiring):
            return trigger_handler.handler(event, context)

    def submit(self, body: bytes = VALID, key: str = "incoming/minimal-batch.yaml") -> UploadResult:
        """Upload a config and run the trigger on its event: the one result."""
        (result,) = self.invoke(self.upload(body, key=key))
        return result

    def result_file(self, key: str = "incoming/minimal-batch.yaml") -> dict[str, Any]:
        relative = key.removeprefix("incoming/")
        body = self.s3.get_object(Bucket=self.bucket, Key=f"results/{relative}.result.json")["Body"].read()
        return json.loads(body)

    def counted(self, name: str) -> int:
        return int(sum(self.metrics.metric_set.get(name, {}).get("Value", [0])))

    def upload_control(
        self,
        backfill_id: str,
        action: str,
        *,
        reason: str = "because",
        requested_by: str = "@oncall",
        requested_at: datetime | None = None,
    ) -> tuple[str, dict[str, Any]]:
        """Put a control document under `control/<backfill id>/`: its key and the S3 event
        that announces it (deliver it with `invoke` or `invoke_lambda`, as often as needed)."""
        document = {
            "control_version": 1,
            "action": action,
            "backfill_id": backfill_id,
            "reason": reason,
            "requested_by": requested_by,
            "requested_at": (requested_at or datetime.now(UTC)).isoformat(),
        }
        key = f"control/{backfill_id}/{action}-{self.next_sequencer()}.json"
        return key, self.upload(json.dumps(document).encode(), key=key)

    def claims_held(self) -> dict[str, list[str]]:
        """The holder items of the claims table (CLAIMS), live or not: {"active": [...], "queued": [...]}."""
        from backfill_orchestrator.claims.registry import HOLDER_PK

        page = self.dynamodb.query(
            TableName=CLAIMS,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": HOLDER_PK}},
            ConsistentRead=True,
        )
        found: dict[str, list[str]] = {"active": [], "queued": []}
        for item in page["Items"]:
            found[item["kind"]["S"]].append(item["sk"]["S"])
        return {kind: sorted(ids) for kind, ids in found.items()}

    def start_documents(self, backfill_id: str) -> list[str]:
        """The keys of the `start` documents written for a queued backfill."""
        listed = self.s3.list_objects_v2(Bucket=self.bucket, Prefix=f"control/{backfill_id}/start-")
        return [item["Key"] for item in listed.get("Contents", [])]

    def action_item(self, backfill_id: str, event: dict[str, Any]) -> dict[str, Any] | None:
        """The action item (status/actions.py) of the control document an event announces."""
        from backfill_orchestrator.dynamo import plain_from_item
        from backfill_orchestrator.status.actions import action_key
        from backfill_orchestrator.trigger.events import upload_from_record

        upload_id = upload_from_record(event["Records"][0]).upload_id
        key = {"backfill_id": {"S": action_key(backfill_id, upload_id)}}
        item = self.dynamodb.get_item(TableName=TABLE, Key=key, ConsistentRead=True).get("Item")
        return plain_from_item(item) if item else None

    def control_result(self, key: str) -> dict[str, Any] | None:
        """The result file of the control document at `key`, or None before there is one."""
        try:
            body = self.s3.get_object(Bucket=self.bucket, Key=f"results/{key}.result.json")["Body"].read()
        except self.s3.exceptions.NoSuchKey:
            return None
        return json.loads(body)
