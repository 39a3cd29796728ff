"""Upload events to the uploads they announce, through powertools' event source data classes.

Two routes reach the trigger, one per deployment (`UploadEventSource` in the template):
- an S3 event notification (`Records[]`, each an `ObjectCreated:*` record; `S3EventRecord`);
- an S3 -> EventBridge "Object Created" event (`S3EventBridgeNotificationEvent`).
Either may come back redriven from the on-failure queue wrapped as `requestPayload`.

An upload is identified by bucket, key and the object version (or, in an unversioned bucket,
the event's `sequencer`): a redelivered event has the same identity, a re-upload a new one."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import unquote_plus

from aws_lambda_powertools.utilities.data_classes import S3EventBridgeNotificationEvent
from aws_lambda_powertools.utilities.data_classes.s3_event import S3EventRecord

from backfill_orchestrator.errors import ServiceError
from backfill_orchestrator.identity import Principal, principal_from_s3_record

CONFIG_SUFFIXES = (".yaml", ".yml", ".json")
EVENTBRIDGE_SOURCE = "aws.s3"
EVENTBRIDGE_DETAIL_TYPE = "Object Created"
S3_TEST_EVENT = "s3:TestEvent"  # sent once when a notification is configured; announces nothing
SWEEP_SOURCE = "backfill.sweep"  # the constant input of the sweep schedule (template.yaml ClaimsSweepRule)


class MalformedEventError(ServiceError, ValueError):
    """An event (or one of its records) that announces no upload we can act on: the deployment
    routes something it should not. Raised so the event lands on the on-failure queue, where
    an alarm fires; redelivering it cannot help."""

    retryable = False


@dataclass(frozen=True)
class Upload:
    bucket: str
    key: str
    size: int | None = None
    version_id: str | None = None
    sequencer: str | None = None
    etag: str | None = None
    # Who uploaded it, as the event names them (unresolved unique ids; trigger/approval.py
    # resolves role and user names). Not part of the upload's identity.
    principal: Principal | None = field(default=None, compare=False)

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket}/{self.key}"

    @property
    def upload_id(self) -> str:
        """Stable across redeliveries of one event, different for every new upload."""
        marker = self.version_id or self.sequencer or self.etag or ""
        digest = hashlib.sha256(f"{self.bucket}\n{self.key}\n{marker}".encode()).hexdigest()
        return digest[:20]

    @property
    def extension(self) -> str:
        lowered = self.key.lower()
        return next((suffix for suffix in CONFIG_SUFFIXES if lowered.endswith(suffix)), "")


def event_records(event: Any) -> list[Any]:
    """The records of an event, each announcing one upload: an S3 notification's `Records`,
    or an EventBridge event as its own single record. An S3 test event has none."""
    if isinstance(event, dict) and "requestPayload" in event:  # a Lambda destination record, redriven
        event = event["requestPayload"]
    if not isinstance(event, dict):
        raise MalformedEventError(f"the event is a {type(event).__name__}, not an object")
    if isinstance(event.get("Records"), list):
        return list(event["Records"])
    if "detail-type" in event and "source" in event:
        return [event]
    if event.get("Event") == S3_TEST_EVENT:
        return []
    raise MalformedEventError(
        "neither an S3 notification (no Records list) nor an EventBridge event (no source/detail-type); "
        f"keys: {sorted(event)[:10]}"
    )


def is_sweep(event: Any) -> bool:
    """The periodic sweep of queued backfills (`{"source": "backfill.sweep"}`), not an upload."""
    return isinstance(event, dict) and event.get("source") == SWEEP_SOURCE and "detail-type" not in event


def upload_from_record(record: Any) -> Upload:
    """One record (an S3 notification record or an EventBridge event) to an Upload; raises
    MalformedEventError naming what is wrong."""
    if not isinstance(record, dict):
        raise MalformedEventError("event record is not an object")
    if "detail-type" in record:
        upload = _upload_from_eventbridge(S3EventBridgeNotificationEvent(record))
    else:
        upload = _upload_from_s3_record(S3EventRecord(record))
    return replace(upload, principal=principal_from_s3_record(record))


def _upload_from_s3_record(record: S3EventRecord) -> Upload:
    if record.get("eventSource") != "aws:s3":
        raise MalformedEventError(f"not an S3 event record (eventSource {record.get('eventSource')!r})")
    if not str(record.get("eventName", "")).startswith("ObjectCreated:"):
        raise MalformedEventError(f"not an ObjectCreated event ({record.get('eventName')!r})")
    try:
        bucket = record.s3.bucket.name
        obj = record.s3.get_object
        # Notification keys arrive URL-encoded with '+' for spaces (the data class leaves them so).
        key = unquote_plus(obj.key)
    except (TypeError, KeyError, AttributeError) as error:
        raise MalformedEventError(f"S3 event record without {error}") from None
    return _upload(
        bucket,
        key,
        size=obj.get("size"),
        version_id=obj.version_id,
        sequencer=obj.get("sequencer"),
        etag=obj.etag,
    )


def _upload_from_eventbridge(event: S3EventBridgeNotificationEvent) -> Upload:
    if event.get("source") != EVENTBRIDGE_SOURCE or event.get("detail-type") != EVENTBRIDGE_DETAIL_TYPE:
        raise MalformedEventError(
            f"not an S3 'Object Created' EventBridge event (source {event.get('source')!r}, "
            f"detail-type {event.get('detail-type')!r})"
        )
    try:
        detail = event.detail
        bucket = detail.bucket.name
        obj = detail.object
        key = obj.key  # the data class decodes it
    except (TypeError, KeyError, AttributeError) as error:
        raise MalformedEventError(f"EventBridge S3 event without {error}") from None
    return _upload(
        bucket,
        key,
        size=obj.size,
        version_id=obj.get("version-id"),
        sequencer=obj.get("sequencer"),
        etag=obj.etag,
    )


def _upload(bucket: Any, key: Any, *, size: Any, version_id: Any, sequencer: Any, etag: Any) -> Upload:
    if not isinstance(bucket, str) or not bucket or not isinstance(key, str) or not key:
        raise MalformedEventError("S3 event without a bucket name or key")
    return Upload(
        bucket=bucket,
        key=key,
        size=int(size) if isinstance(size, int | str) and str(size).isdigit() else None,
        version_id=_text(version_id),
        sequencer=_text(sequencer),
        etag=_text(etag),
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
