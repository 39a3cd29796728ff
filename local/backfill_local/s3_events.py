"""S3 event notifications delivered to the trigger handler, as a deployment wires them.

The config bucket notifies an SQS queue of every object created under the watched prefixes
(`incoming/` configs, `control/` documents); a thread receives those events and invokes the
trigger handler with each, like Lambda's SQS event source. So every upload reaches the
handler on its own: a notebook's config, a `backfill cancel`, and the `start` document the
DAG drops for a queued backfill when the one it waited for ends.

    with S3EventPump(s3_client=s3, sqs_client=sqs, bucket="b", prefixes=["incoming/"], handler=h) as pump:
        ...  # uploads are handled in the background; pump.deliveries lists what was handled

A delivery whose handler raises is redelivered by the queue (visibility timeout) up to
`max_receives` times, then dropped with its error kept in `failures`, as Lambda's retries
and on-failure destination would. Works against moto or any S3/SQS endpoint."""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote_plus

log = logging.getLogger(__name__)
Handler = Callable[[dict[str, Any], Any], Any]


@dataclass(frozen=True)
class Delivery:
    key: str
    at: datetime
    answer: Any


@dataclass
class _LambdaContext:
    """What the handler reads from Lambda's context object."""

    aws_request_id: str
    function_name: str = "backfill-trigger"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:backfill-trigger"
    log_group_name: str = "/aws/lambda/backfill-trigger"
    log_stream_name: str = "local"

    def get_remaining_time_in_millis(self) -> int:
        return 120_000


@dataclass
class S3EventPump:
    s3_client: Any
    sqs_client: Any
    bucket: str
    prefixes: Sequence[str]
    handler: Handler
    queue_name: str = "backfill-trigger-events-local"
    # Called with each event's object key before the handler sees it (the demo prints it).
    on_event: Callable[[str], None] | None = None
    on_delivery: Callable[[Delivery], None] | None = None
    visibility_timeout: int = 5
    # Real S3 names the uploader in each record's `userIdentity.principalId`; moto leaves it
    # out, so the pump adds one where a record has none: `principal_of(bucket, key)` (the
    # uploader a local stand-in remembers), else this fixed one (the caller's).
    principal_id: str | None = None
    principal_of: Callable[[str, str], str | None] | None = None
    max_receives: int = 3
    deliveries: list[Delivery] = field(default_factory=list, init=False)
    failures: list[str] = field(default_factory=list, init=False)
    _queue_url: str = field(default="", init=False)
    _stop: threading.Event = field(default_factory=threading.Event, init=False)
    _thread: threading.Thread | None = field(default=None, init=False)

    def __enter__(self) -> S3EventPump:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Create the queue, point the bucket's notifications at it, start delivering."""
        self._queue_url = self.sqs_client.create_queue(
            QueueName=self.queue_name, Attributes={"VisibilityTimeout": str(self.visibility_timeout)}
        )["QueueUrl"]
        arn = self.sqs_client.get_queue_attributes(QueueUrl=self._queue_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        self.s3_client.put_bucket_notification_configuration(
            Bucket=self.bucket,
            NotificationConfiguration={
                "QueueConfigurations": [
                    {
                        "Id": f"trigger-{prefix.strip('/')}",
                        "QueueArn": arn,
                        "Events": ["s3:ObjectCreated:*"],
                        "Filter": {"Key": {"FilterRules": [{"Name": "prefix", "Value": prefix}]}},
                    }
                    for prefix in self.prefixes
                ]
            },
        )
        self._thread = threading.Thread(target=self._run, name="s3-event-pump", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def delivered(self, key_prefix: str) -> list[Delivery]:
        return [d for d in list(self.deliveries) if d.key.startswith(key_prefix)]

    def _uploader(self, record: dict[str, Any]) -> str | None:
        if self.principal_of is None:
            return None
        key = unquote_plus(record["s3"]["object"]["key"])
        return self.principal_of(record["s3"]["bucket"]["name"], key)

    # -- the loop ----------------------------------------------------------------------------
    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                answer = self.sqs_client.receive_message(
                    QueueUrl=self._queue_url,
                    MaxNumberOfMessages=1,  # one event per invocation: a failure redelivers only it
                    WaitTimeSeconds=1,
                    AttributeNames=["ApproximateReceiveCount"],
                )
            except Exception as error:  # the endpoint is going away at the end of the demo
                if not self._stop.is_set():
                    log.warning("receiving S3 events: %s", error)
                    self._stop.wait(1)
                continue
            for message in answer.get("Messages", []):
                self._deliver(message)

    def _deliver(self, message: dict[str, Any]) -> None:
        event = json.loads(message["Body"])
        for record in event.get("Records", []):
            if "s3" in record and "userIdentity" not in record:
                principal = self._uploader(record) or self.principal_id
                if principal:
                    record["userIdentity"] = {"principalId": principal}
        keys = [unquote_plus(r["s3"]["object"]["key"]) for r in event.get("Records", []) if "s3" in r]
        for key in keys:
            if self.on_event is not None:
                self.on_event(key)
        try:
            answer = self.handler(event, _LambdaContext(aws_request_id=str(uuid.uuid4())))
        except Exception as error:  # the handler's own failure: the queue redelivers it
            receives = int(message.get("Attributes", {}).get("ApproximateReceiveCount", "1"))
            log.warning("the trigger handler failed on %s (delivery %d): %s", keys, receives, error)
            if receives < self.max_receives:
                return
            self.failures.append(f"{keys}: {type(error).__name__}: {error}")
            answer = {"error": str(error)}
        self.sqs_client.delete_message(QueueUrl=self._queue_url, ReceiptHandle=message["ReceiptHandle"])
        for key in keys:
            delivery = Delivery(key=key, at=datetime.now(UTC), answer=answer)
            self.deliveries.append(delivery)
            if self.on_delivery is not None:
                self.on_delivery(delivery)
