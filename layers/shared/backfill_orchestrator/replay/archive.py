"""Reading the message archive: S3 objects of JSON lines, plain or gzip, one message per line.

Objects under a feed-hour prefix are read in key order and lines in file order, so every
archived message has a stable position `(key, line)` (line numbers start at 1). The
replay checkpoint is such a position; a retried task skips what lies before it.

Gzip is recognised by its magic bytes, whatever the key or Content-Encoding says.
Blank lines are skipped. A line that is not UTF-8 JSON, or longer than `max_line_bytes`, is
yielded as a problem (never silently dropped) without holding the whole line in memory."""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from botocore.exceptions import BotoCoreError, ClientError

from backfill_orchestrator.errors import ServiceError

GZIP_MAGIC = b"\x1f\x8b"
CHUNK_BYTES = 256 * 1024
# Characters SQS accepts in a message body (anything else makes SQS refuse the request).
_SQS_FORBIDDEN = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


class ArchiveReadError(ServiceError, RuntimeError):
    """S3 could not list or read the archive (missing bucket, no permission, unreachable)."""


@dataclass(frozen=True, order=True)
class Position:
    """Where a message sits in a task's archive: object key, then 1-based line number."""

    key: str
    line: int


@dataclass(frozen=True)
class ArchivedMessage:
    position: Position
    body: str | None  # None when `problem` says why the line cannot be sent
    problem: str | None = None


def list_archive_keys(s3: Any, *, bucket: str, prefix: str, page_size: int = 1000) -> list[str]:
    """Every object key under `prefix` (all pages), in key order; folder markers excluded."""
    keys: list[str] = []
    pages = s3.get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix=prefix, PaginationConfig={"PageSize": page_size}
    )
    try:
        for page in pages:
            keys.extend(obj["Key"] for obj in page.get("Contents", ()) if not obj["Key"].endswith("/"))
    except (ClientError, BotoCoreError) as error:
        raise ArchiveReadError(f"listing s3://{bucket}/{prefix}: {error}") from error
    return sorted(keys)


class _Rejoined:
    """A stream whose first bytes were read already (to sniff gzip), put back in front."""

    def __init__(self, head: bytes, rest: BinaryIO):
        self._head = head
        self._rest = rest

    def read(self, size: int = -1) -> bytes:
        if self._head:
            if size < 0:
                data, self._head = self._head + self._rest.read(), b""
                return data
            data, self._head = self._head[:size], self._head[size:]
            return data
        return self._rest.read(size)


def _raw_lines(stream: Any, *, max_line_bytes: int) -> Iterator[bytes | None]:
    """Lines without their line ending; None stands for a line longer than max_line_bytes."""
    buffer = b""
    overflow = False
    while True:
        chunk = stream.read(CHUNK_BYTES)
        if not chunk:
            break
        buffer += chunk
        *complete, buffer = buffer.split(b"\n")
        for line in complete:
            if overflow:
                overflow = False
                yield None
            else:
                yield line if len(line) <= max_line_bytes else None
        if len(buffer) > max_line_bytes:
            overflow, buffer = True, b""
    if overflow:
        yield None
    elif buffer:
        yield buffer if len(buffer) <= max_line_bytes else None


def _decode(raw: bytes) -> tuple[str | None, str | None]:
    """(body, None) for a sendable line, (None, problem) otherwise."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return None, f"invalid_utf8: not UTF-8 at byte {error.start}"
    try:
        json.loads(text)
    except json.JSONDecodeError as error:
        return None, f"invalid_json: {error.msg} at column {error.colno}"
    bad = _SQS_FORBIDDEN.search(text)
    if bad:
        return (
            None,
            f"invalid_characters: U+{ord(bad.group()):04X} at column {bad.start() + 1} is not allowed by SQS",
        )
    return text, None


def read_object(
    s3: Any, *, bucket: str, key: str, max_line_bytes: int, start_line: int = 1
) -> Iterator[ArchivedMessage]:
    """Messages of one object from line `start_line` on; blank lines are skipped."""
    try:
        body = s3.get_object(Bucket=bucket, Key=key)["Body"]
    except (ClientError, BotoCoreError) as error:
        raise ArchiveReadError(f"reading s3://{bucket}/{key}: {error}") from error
    try:
        head = body.read(len(GZIP_MAGIC))
        stream: Any = _Rejoined(head, body)
        if head == GZIP_MAGIC:
            stream = gzip.GzipFile(fileobj=stream, mode="rb")
        for number, raw in enumerate(_raw_lines(stream, max_line_bytes=max_line_bytes), start=1):
            if number < start_line:
                continue
            position = Position(key, number)
            if raw is None:
                yield ArchivedMessage(position, None, f"too_big: line is longer than {max_line_bytes} bytes")
                continue
            raw = raw.rstrip(b"\r")
            if not raw.strip():
                continue
            text, problem = _decode(raw)
            yield ArchivedMessage(position, text, problem)
    except (OSError, EOFError, zlib.error) as error:  # a corrupt or truncated gzip stream
        raise ArchiveReadError(f"reading s3://{bucket}/{key}: {error}") from error
    except (ClientError, BotoCoreError) as error:
        raise ArchiveReadError(f"reading s3://{bucket}/{key}: {error}") from error
    finally:
        body.close()


def read_archive(
    s3: Any, *, bucket: str, keys: Iterable[str], max_line_bytes: int, resume_from: Position | None = None
) -> Iterator[ArchivedMessage]:
    """Messages of `keys` (in key order) at or after `resume_from`."""
    for key in sorted(keys):
        if resume_from is not None and key < resume_from.key:
            continue
        start = resume_from.line if resume_from is not None and key == resume_from.key else 1
        yield from read_object(s3, bucket=bucket, key=key, max_line_bytes=max_line_bytes, start_line=start)
