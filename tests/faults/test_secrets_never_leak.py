"""Issue 12, class 4: no secret ever reaches logs (ours or a library's), Slack, PagerDuty, the
status record, result files or stored plans.

Distinct secrets are planted in Secrets Manager (moto) for a Slack webhook, a Slack bot token,
a PagerDuty routing key, the Airflow password and a Marquez API key. Every outside service is
unreachable (a closed port) or failing (500s), so urllib3 logs its retry warnings, our code
logs its errors and exceptions, and the failure paths write FAILED records and result files.
The trigger and the replay Lambda handlers run on moto; then everything captured is scanned:
all log records at DEBUG on the root logger, the powertools loggers' output, stdout/stderr
(capfd), the bodies the failing receivers got, every DynamoDB item, every S3 object and every
message left in SQS."""

from __future__ import annotations

import io
import json
import logging
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest
from urllib3.util.retry import Retry

from backfill_orchestrator import redaction
from tests.support.lambda_context import FakeLambdaContext
from tests.support.trigger import INVALID, VALID, TriggerHarness, free_port

WEBHOOK_SECRET_PART = "Wh00kS3cretPlanted42x"
BOT_TOKEN = "xoxb-000111222-333444555-PlantedBotTokenS3cret"
ROUTING_KEY = "PLANTEDr0ut1ngKEY000000000000042"
AIRFLOW_PASSWORD = "Pl4nted-Airflow-Passw0rd!"
MARQUEZ_API_KEY = "mqz-planted-api-key-9c1e77"
PLANTED = (
    WEBHOOK_SECRET_PART,
    BOT_TOKEN,
    BOT_TOKEN.removeprefix("xoxb-"),
    ROUTING_KEY,
    AIRFLOW_PASSWORD,
    MARQUEZ_API_KEY,
)


class FailingService:
    """Answers 500 to everything, on 127.0.0.1, and keeps every request it got."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        received = self.requests

        class Handler(BaseHTTPRequestHandler):
            def _fail(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode("utf-8", "replace")
                received.append({"method": self.command, "path": self.path, "body": body})
                payload = b'{"error": "internal"}'
                self.send_response(500)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_PATCH = _fail  # noqa: N815 - http.server's names

            def log_message(self, *args: Any) -> None:  # keep the server quiet on stderr
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def bodies(self) -> list[str]:
        """What was sent, minus the one field that is each service's credential by design
        (PagerDuty's routing_key, the Airflow token request's password)."""
        sent = []
        for request in self.requests:
            try:
                document = json.loads(request["body"])
            except ValueError:
                sent.append(request["body"])
                continue
            if isinstance(document, dict):
                if request["path"].endswith("/enqueue"):
                    assert document.pop("routing_key") == ROUTING_KEY  # PagerDuty was reached
                if request["path"].endswith("/auth/token"):
                    assert document.pop("password") == AIRFLOW_PASSWORD
            sent.append(json.dumps(document))
        return sent


@pytest.fixture
def failing() -> Iterator[FailingService]:
    service = FailingService()
    yield service
    service.close()


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    # Production retry counts (so every retry warning is logged), without the waiting.
    monkeypatch.setattr(Retry, "sleep", lambda self, response=None: None)


@pytest.fixture(autouse=True)
def nothing_registered_yet() -> Iterator[None]:
    redaction.forget_secrets()  # what is redacted must come from this run's SecretReader
    yield
    redaction.forget_secrets()


def plant(secrets: Any) -> dict[str, str]:
    closed = free_port()  # nothing listens: connection refused, retried, warned about
    webhook = f"http://127.0.0.1:{closed}/services/T0PLANTED0/B0PLANTED0/{WEBHOOK_SECRET_PART}"
    values = {
        "webhook": json.dumps({"webhook_url": webhook}),
        "bot": json.dumps({"bot_token": BOT_TOKEN}),
        "pagerduty": json.dumps({"routing_key": ROUTING_KEY}),
        "airflow": json.dumps({"username": "backfill-bot", "password": AIRFLOW_PASSWORD}),
        "marquez": MARQUEZ_API_KEY,  # the bare form
    }
    return {
        name: secrets.create_secret(Name=f"planted/{name}", SecretString=value)["ARN"]
        for name, value in values.items()
    }


@contextmanager
def captured_powertools_output(handler_module: Any) -> Iterator[io.StringIO]:
    stream = io.StringIO()
    log_handler = handler_module.logger.registered_handler
    previous, log_handler.stream = log_handler.stream, stream
    try:
        yield stream
    finally:
        log_handler.stream = previous


def everything_stored() -> list[str]:
    """Every S3 object, DynamoDB item and SQS message in the (moto) account."""
    s3, dynamodb, sqs = (boto3.client(name, region_name="us-east-1") for name in ("s3", "dynamodb", "sqs"))
    stored: list[str] = []
    for bucket in s3.list_buckets()["Buckets"]:
        for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket["Name"]):
            for version in page.get("Versions", []):
                body = s3.get_object(
                    Bucket=bucket["Name"], Key=version["Key"], VersionId=version["VersionId"]
                )["Body"]
                stored.append(
                    f"s3://{bucket['Name']}/{version['Key']}: " + body.read().decode("utf-8", "replace")
                )
    for table in dynamodb.list_tables()["TableNames"]:
        stored.extend(json.dumps(item, default=str) for item in dynamodb.scan(TableName=table)["Items"])
    for queue_url in sqs.list_queues().get("QueueUrls", []):
        messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, VisibilityTimeout=0)
        stored.extend(message["Body"] for message in messages.get("Messages", []))
    return stored


def assert_no_secret_in(sources: dict[str, list[str]]) -> None:
    leaks = [
        f"{source}: ...{text[max(0, text.find(secret) - 80) : text.find(secret) + len(secret) + 20]}..."
        for source, texts in sources.items()
        for text in texts
        for secret in PLANTED
        if secret in text
    ]
    assert not leaks, "secrets leaked:\n" + "\n".join(leaks[:20])


def test_the_trigger_leaks_no_secret_with_every_service_failing(
    mocked_aws: None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
    failing: FailingService,
) -> None:
    from backfill_orchestrator.trigger import TriggerFailedError
    from backfill_orchestrator.trigger import handler as handler_module

    with ExitStack() as stack:
        harness = TriggerHarness(stack)
        arns = plant(harness.secrets)
        env = {
            **harness.env,
            "SLACK_SECRET_ID": arns["webhook"],
            "PAGERDUTY_SECRET_ID": arns["pagerduty"],
            "PAGERDUTY_EVENTS_URL": f"{failing.url}/v2/enqueue",
            "AIRFLOW_URL": failing.url,
            "AIRFLOW_SECRET_ID": arns["airflow"],
            "MARQUEZ_API_KEY_SECRET_ID": arns["marquez"],
            "POWERTOOLS_TRACE_DISABLED": "true",
        }
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        capfd.readouterr()  # what the setup printed is not the system's output
        caplog.clear()
        caplog.set_level(logging.DEBUG)
        caplog.set_level(logging.DEBUG, logger="backfill_orchestrator")
        caplog.set_level(logging.DEBUG, logger=handler_module.logger.name)
        with captured_powertools_output(handler_module) as powertools_output:
            # 1. Marquez answers (the double), Airflow fails: FAILED after planning, paged.
            with (
                handler_module.trigger_wiring(),
                pytest.raises(TriggerFailedError),
            ):  # a container built from env
                handler_module.handler(harness.upload(VALID), FakeLambdaContext())
            # 2. Marquez fails too (500s, with the API key sent): FAILED before planning.
            monkeypatch.setenv("MARQUEZ_URL", failing.url)
            with handler_module.trigger_wiring():  # a new container: settings are read once
                other = VALID.replace(b"etl-orders-0604", b"etl-orders-0604-b")
                with pytest.raises(TriggerFailedError):
                    handler_module.handler(harness.upload(other, key="incoming/b.yaml"), FakeLambdaContext())
                # 3. An invalid config: REJECTED, told to Slack (unreachable).
                handler_module.handler(harness.upload(INVALID, key="incoming/bad.yaml"), FakeLambdaContext())
        stored = everything_stored()
    output = capfd.readouterr()

    logs = caplog.text
    # The faults really happened and were logged: the Slack client logged each retry of the
    # webhook, a line that names the URL (its path is the secret) - now redacted. It logs
    # through the package's loggers, which write through the running handler's Logger.
    logged = [*(r.getMessage() for r in caplog.records), *powertools_output.getvalue().splitlines()]
    webhook_retries = [line for line in logged if "retry handler found" in line]
    assert webhook_retries and all("Connection refused" in line for line in webhook_retries)
    assert any(r["path"].startswith("/api/v1/lineage") for r in failing.requests)  # Marquez was asked
    assert any(r["path"] == "/auth/token" for r in failing.requests)  # and Airflow
    assert sum(r["path"].endswith("/enqueue") for r in failing.requests) >= 2  # and PagerDuty
    assert any('"state": {"S": "FAILED"}' in item for item in stored)
    assert any("results/bad.yaml.result.json" in item and "rejected" in item for item in stored)
    assert_no_secret_in(
        {
            "log records (root, DEBUG)": [logs, *(record.getMessage() for record in caplog.records)],
            "powertools logger output": [powertools_output.getvalue()],
            "stdout": [output.out],
            "stderr": [output.err],
            "requests the failing services got": failing.bodies(),
            "S3 / DynamoDB / SQS": stored,
        }
    )


def test_the_replay_function_leaks_no_secret_with_slack_and_pagerduty_failing(
    mocked_aws: None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
    failing: FailingService,
) -> None:
    from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError

    from backfill_orchestrator.config import parse_config
    from backfill_orchestrator.replay import handler as handler_module
    from backfill_orchestrator.replay.dispatch import plan_replay
    from backfill_orchestrator.status import StatusStore
    from tests.support.replay import (
        ARCHIVE,
        CONFIG,
        IDEMPOTENCY_TABLE,
        STATUS_TABLE,
        create_tables,
        load_replay_app,
        sqs_event,
        start_record,
        write_archive,
    )

    s3, sqs, dynamodb = (boto3.client(name, region_name="us-east-1") for name in ("s3", "sqs", "dynamodb"))
    arns = plant(boto3.client("secretsmanager", region_name="us-east-1"))
    s3.create_bucket(Bucket=ARCHIVE)
    create_tables(dynamodb)
    target_url = sqs.create_queue(QueueName="orders-ingest")["QueueUrl"]
    tasks_url = sqs.create_queue(QueueName="backfill-replay-tasks")["QueueUrl"]
    env = {
        "CONFIG_BUCKET": "backfill-configs",
        "STATUS_TABLE": STATUS_TABLE,
        "MARQUEZ_URL": failing.url,
        "MWAA_ENVIRONMENT": "backfill-mwaa",
        "REPLAY_TARGETS": json.dumps({"orders-ingest": target_url}),
        "SLACK_API_URL": f"{failing.url}/api",
        "SLACK_SECRET_ID": arns["bot"],
        "SLACK_CHANNEL": "#backfills",
        "PAGERDUTY_EVENTS_URL": f"{failing.url}/v2/enqueue",
        "PAGERDUTY_SECRET_ID": arns["pagerduty"],
        "REPLAY_ARCHIVE_BUCKET": ARCHIVE,
        "REPLAY_ARCHIVE_LAYOUT": "{feed}/{yyyy}/{mm}/{dd}/{hh}/",
        "IDEMPOTENCY_TABLE": IDEMPOTENCY_TABLE,
        "REPLAY_TASKS_QUEUE_URL": tasks_url,
        "REPLAY_MAX_RECEIVE_COUNT": "3",
        "REPLAY_MAX_CONCURRENCY": "2",
        "POWERTOOLS_TRACE_DISABLED": "true",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    (task,) = plan_replay(
        parse_config({**CONFIG, "hours": [9], "dates": ["2021-06-04"], "feeds": ["orders"]}),
        targets={"orders-ingest": target_url},
    )
    start_record(
        StatusStore(table_name=STATUS_TABLE, dynamodb_client=dynamodb), task.backfill_id, tasks_total=1
    )
    write_archive(s3, [task], per_hour=5)
    sqs.delete_queue(QueueUrl=target_url)  # the target is gone: the task fails on its last delivery
    app = load_replay_app()
    capfd.readouterr()
    caplog.clear()
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="backfill_orchestrator")
    caplog.set_level(logging.DEBUG, logger=handler_module.logger.name)
    context = FakeLambdaContext(function_name="backfill-replay", remaining_seconds=600)
    with captured_powertools_output(handler_module) as powertools_output, handler_module.replay_wiring():
        with pytest.raises(BatchProcessingError):
            app.handler(sqs_event([task.to_json()], receive_count=3), context)
    stored = everything_stored()
    output = capfd.readouterr()

    assert any(r["path"] == "/api/chat.postMessage" for r in failing.requests)  # Slack was tried (bot token)
    assert any(r["path"].endswith("/enqueue") for r in failing.requests)  # PagerDuty was paged
    assert any('"state": {"S": "FAILED"}' in item for item in stored)
    assert_no_secret_in(
        {
            "log records (root, DEBUG)": [caplog.text, *(record.getMessage() for record in caplog.records)],
            "powertools logger output": [powertools_output.getvalue()],
            "stdout": [output.out],
            "stderr": [output.err],
            "requests the failing services got": failing.bodies(),
            "S3 / DynamoDB / SQS": stored,
        }
    )
