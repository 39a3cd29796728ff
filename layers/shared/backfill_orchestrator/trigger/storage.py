"""The trigger's S3 layout in the config bucket:

- `<incoming>/<path>`: what users drop (read only);
- `<results>/<path>.result.json`: what became of that file (accepted, rejected, already
  known, failed), at the same relative path, so a user finds it without reading logs;
- `<backfills>/<backfill id>/plan.json` (and `plan.html`, its picture: written here for a dry
  run, a backfill held for approval or queued, else by the DAG run's start): the plan; the DAG run's conf
  points at it and at the config: the uploaded version itself
  (`s3://<bucket>/<incoming>/<path>?versionId=<id>`, the bucket is versioned) when the event
  named one, else a copy at `<backfills>/<backfill id>/config.<ext>`.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from backfill_orchestrator.contracts import InvalidDocumentError, ResultFile
from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.documents import s3_version_uri
from backfill_orchestrator.errors import ServiceError, UserError
from backfill_orchestrator.parsing import too_large
from backfill_orchestrator.preflight.render import render_html
from backfill_orchestrator.trigger.events import Upload


class StorageError(ServiceError, RuntimeError):
    """S3 refused or failed a read or write (throttling past retries, permissions, outage)."""


class ConfigTooLargeError(UserError, ValueError):
    """The uploaded object is over the size limit; it was not read."""

    def __init__(self, size: int, limit: int):
        self.size = size
        self.limit = limit
        super().__init__(too_large(size, limit))


class ConfigGoneError(UserError, LookupError):
    """The uploaded object (or that version of it) no longer exists."""


@dataclass(frozen=True)
class StoredBackfill:
    config_uri: str
    plan_uri: str
    picture: bool = True  # plan.html was written beside plan.json (else the DAG run's start writes it)


@dataclass(kw_only=True)
class TriggerStorage:
    s3_client: Any
    bucket: str
    incoming_prefix: str
    results_prefix: str
    backfills_prefix: str

    # -- uploads -----------------------------------------------------------------------
    def is_control_document(self, upload: Upload, *, control_prefix: str) -> bool:
        return (
            upload.bucket == self.bucket
            and upload.key.startswith(control_prefix)
            and bool(upload.extension)
            and not upload.key.endswith("/")
        )

    def store_document(self, backfill_id: str, name: str, body: bytes, *, versioned: bool = False) -> str:
        """A document of the backfill's own (claims, an attempt's done work) under its id. With
        `versioned`, the URI names the version written (`?versionId=`, the bucket is versioned):
        what it names never changes, so a reader may keep it."""
        key = self.backfill_key(backfill_id, name)
        version = self._put(key, body, "application/json")
        if versioned and version and version != "null":
            return s3_version_uri(self.bucket, key, version)
        return f"s3://{self.bucket}/{key}"

    def read_document(self, uri: str) -> bytes | None:
        """A document in this bucket by its s3:// URI; None when it does not exist."""
        key = self._key(uri)
        if key is None:
            raise StorageError(f"{uri}: not in the config bucket {self.bucket}")
        return self._get(key)

    def is_incoming_config(self, upload: Upload) -> bool:
        return (
            upload.bucket == self.bucket
            and upload.key.startswith(self.incoming_prefix)
            and bool(upload.extension)
            and not upload.key.endswith("/")
        )

    def read_upload(self, upload: Upload, *, max_bytes: int) -> bytes:
        """The object's bytes (the version the event announced). An object over
        `max_bytes` raises ConfigTooLargeError without being downloaded; at most
        max_bytes + 1 bytes are ever read, even if the event's size was wrong."""
        if upload.size is not None and upload.size > max_bytes:
            raise ConfigTooLargeError(upload.size, max_bytes)
        kwargs: dict[str, Any] = {"Bucket": upload.bucket, "Key": upload.key, "Range": f"bytes=0-{max_bytes}"}
        if upload.version_id:
            kwargs["VersionId"] = upload.version_id
        try:
            response = self.s3_client.get_object(**kwargs)
            body = response["Body"].read(max_bytes + 1)
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            if code in ("NoSuchKey", "NoSuchVersion", "404"):
                raise ConfigGoneError(f"{upload.uri} no longer exists") from None
            if code == "InvalidRange":  # an empty object has no byte 0
                return b""
            raise StorageError(f"reading {upload.uri}: {code or error}") from error
        except BotoCoreError as error:
            raise StorageError(f"reading {upload.uri}: {error}") from error
        total = _total_size(response.get("ContentRange"))
        if total is not None and total > max_bytes:
            raise ConfigTooLargeError(total, max_bytes)
        if len(body) > max_bytes:
            raise ConfigTooLargeError(len(body), max_bytes)
        return body

    def result_key(self, upload: Upload) -> str:
        relative = (
            upload.key[len(self.incoming_prefix) :]
            if upload.key.startswith(self.incoming_prefix)
            else upload.key
        )
        return f"{self.results_prefix}{relative}.result.json"

    def result_uri(self, upload: Upload) -> str:
        return f"s3://{self.bucket}/{self.result_key(upload)}"

    def write_result(self, upload: Upload, result: ResultFile) -> str:
        """Write the outcome document for `upload`; returns its s3:// URI."""
        key = self.result_key(upload)
        self._put(key, result.to_json().encode(), "application/json")
        return f"s3://{self.bucket}/{key}"

    def read_result(self, upload: Upload) -> ResultFile | None:
        """The outcome document written for `upload`'s path, or None (a retry checks that its
        dead attempt's outcome reached the user); one that is not a valid result file counts
        as none."""
        key = self.result_key(upload)
        body = self._get(key)
        if body is None:
            return None
        try:
            return ResultFile.from_json(body, source=f"s3://{self.bucket}/{key}")
        except InvalidDocumentError:
            return None

    # -- backfills ---------------------------------------------------------------------
    def backfill_key(self, backfill_id: str, name: str) -> str:
        return f"{self.backfills_prefix}{backfill_id}/{name}"

    def config_version_uri(self, upload: Upload) -> str | None:
        """The uploaded version itself, when the event named one in this bucket: what the DAG
        reads instead of a copy. None without one (an unversioned bucket; "null" is the
        version of an object written while versioning was off, which the next upload replaces)."""
        if upload.bucket != self.bucket or not upload.version_id or upload.version_id == "null":
            return None
        return s3_version_uri(upload.bucket, upload.key, upload.version_id)

    def store_backfill(
        self, backfill_id: str, *, upload: Upload, config_body: bytes, plan: Plan, picture: bool = True
    ) -> StoredBackfill:
        """Store the plan (and, when the upload has no version to name, a copy of the config;
        with `picture`, `plan.html` beside it) under the backfill id: independent PutObjects,
        sent side by side (the wait is the slowest, not the sum); StorageError if any failed,
        once all have ended. Without `picture` the DAG run writes `plan.html` when it starts."""
        plan_key = self.backfill_key(backfill_id, "plan.json")
        config_uri = self.config_version_uri(upload)
        documents = []
        if config_uri is None:
            config_key = self.backfill_key(backfill_id, f"config{upload.extension}")
            content_type = "application/json" if upload.extension == ".json" else "application/yaml"
            documents.append((config_key, config_body, content_type))
            config_uri = f"s3://{self.bucket}/{config_key}"
        documents.append((plan_key, plan.to_json().encode(), "application/json"))
        if picture:
            documents.append(self._picture(backfill_id, plan))
        stored = StoredBackfill(config_uri, f"s3://{self.bucket}/{plan_key}", picture=picture)
        if len(documents) == 1:
            self._put(*documents[0])
            return stored
        with ThreadPoolExecutor(max_workers=len(documents), thread_name_prefix="store-backfill") as pool:
            sent = [pool.submit(self._put, *document) for document in documents]
        for future in sent:
            future.result()  # the first failure, as StorageError
        return stored

    def store_picture(self, backfill_id: str, plan: Plan) -> None:
        """`plan.html` beside `plan.json` (for a backfill stored without it that waits before
        its run: queued, or awaiting approval)."""
        self._put(*self._picture(backfill_id, plan))

    def _picture(self, backfill_id: str, plan: Plan) -> tuple[str, bytes, str]:
        # The plan as a picture: one self-contained page (no scripts, nothing fetched).
        return (
            self.backfill_key(backfill_id, "plan.html"),
            render_html(plan).encode(),
            "text/html; charset=utf-8",
        )

    def load_plan(self, plan_uri: str) -> Plan | None:
        """A plan stored earlier (a retry reuses it so a run that may exist keeps its plan)."""
        key = self._key(plan_uri)
        body = self._get(key) if key is not None else None
        return Plan.from_json(body) if body is not None else None

    def _key(self, uri: str) -> str | None:
        """The key of an s3:// URI in this bucket; None for one elsewhere."""
        prefix = f"s3://{self.bucket}/"
        return uri[len(prefix) :] if uri.startswith(prefix) else None

    def _get(self, key: str) -> bytes | None:
        """GetObject's bytes; None when the object does not exist."""
        try:
            return self.s3_client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return None
            raise StorageError(f"reading s3://{self.bucket}/{key}: {error}") from error
        except BotoCoreError as error:
            raise StorageError(f"reading s3://{self.bucket}/{key}: {error}") from error

    def _put(self, key: str, body: bytes, content_type: str) -> str | None:
        """PutObject; the version it wrote (None on an unversioned bucket)."""
        try:
            answer = self.s3_client.put_object(
                Bucket=self.bucket, Key=key, Body=body, ContentType=content_type
            )
        except (ClientError, BotoCoreError) as error:
            raise StorageError(f"writing s3://{self.bucket}/{key}: {error}") from error
        return answer.get("VersionId")


def _total_size(content_range: str | None) -> int | None:
    """'bytes 0-262144/1048576' -> 1048576."""
    if not content_range or "/" not in content_range:
        return None
    total = content_range.rsplit("/", 1)[1]
    return int(total) if total.isdigit() else None
