"""S3 `ObjectCreated` notifications to the uploads they announce.

An upload is identified by bucket, key and the object version (or, in an unversioned bucket,
the event's `sequencer`): a redelivered event has the same identity, a re-upload a new one."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_plus

from backfill_orchestrator.errors import UserError

CONFIG_SUFFIXES = (".yaml", ".yml", ".json")


class MalformedEventError(UserError, ValueError):
    """An event record that is not an S3 ObjectCreated notification we can act on."""


@dataclass(frozen=True)
class Upload:
    bucket: str
    key: str
    size: int | None = None
    version_id: str | None = None
    sequencer: str | None = None
    etag: str | None = None

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


def upload_from_record(record: Any) -> Upload:
    """One `Records[]` entry to an Upload; raises MalformedEventError."""
    if not isinstance(record, dict):
        raise MalformedEventError("event record is not an object")
    if record.get("eventSource") != "aws:s3":
        raise MalformedEventError(f"not an S3 event record (eventSource {record.get('eventSource')!r})")
    if not str(record.get("eventName", "")).startswith("ObjectCreated:"):
        raise MalformedEventError(f"not an ObjectCreated event ({record.get('eventName')!r})")
    s3 = record.get("s3")
    try:
        bucket = s3["bucket"]["name"]
        obj = s3["object"]
        # Keys arrive URL-encoded with '+' for spaces.
        key = unquote_plus(obj["key"])
    except (TypeError, KeyError) as error:
        raise MalformedEventError(f"S3 event record without {error}") from None
    if not isinstance(bucket, str) or not bucket or not key:
        raise MalformedEventError("S3 event record without a bucket name or key")
    size = obj.get("size")
    return Upload(
        bucket=bucket,
        key=key,
        size=int(size) if isinstance(size, int | str) and str(size).isdigit() else None,
        version_id=obj.get("versionId") or None,
        sequencer=obj.get("sequencer") or None,
        etag=obj.get("eTag") or None,
    )


def event_records(event: Any) -> list[Any]:
    """The `Records` of a Lambda event (an S3 notification; or the same event redriven from
    the on-failure SQS queue, whose body wraps it as `requestPayload`)."""
    if isinstance(event, dict) and "requestPayload" in event:  # Lambda destination record
        event = event["requestPayload"]
    if not isinstance(event, dict) or not isinstance(event.get("Records"), list):
        raise MalformedEventError("not an S3 notification (no Records list)")
    return event["Records"]
