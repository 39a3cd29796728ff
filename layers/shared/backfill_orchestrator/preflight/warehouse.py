"""What the warehouse holds: the files under a table's location with their sizes, grouped by
Hive-style partition (`day=2021-06-04/hour=3/feed=web/part-0.json`).

`documents.list_uris` gives names only; an estimate needs sizes, so S3 is listed here with
the same paginator (and local folders with `stat`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from backfill_orchestrator import documents
from backfill_orchestrator.errors import ServiceError

MAX_LISTED_OBJECTS = 1_000_000  # a bound on one table's listing


class WarehouseUnavailableError(ServiceError):
    """The warehouse could not be listed (no permission, no such bucket, network)."""


@dataclass(frozen=True)
class Partition:
    day: str | None
    hour: int | None
    feed: str | None


@dataclass(frozen=True)
class StoredFile:
    relative: str
    size: int

    @property
    def partition(self) -> Partition:
        values = dict(part.split("=", 1) for part in self.relative.split("/")[:-1] if "=" in part)
        hour = values.get("hour")
        return Partition(
            values.get("day"), int(hour) if hour and hour.isdigit() else None, values.get("feed")
        )


Lister = Callable[[str], list[StoredFile]]  # table location -> its files


def _hidden(relative: str) -> bool:
    # Spark's markers and checksums (_SUCCESS, .part-0.crc) are not data.
    return any(part.startswith(("_", ".")) for part in relative.split("/"))


def warehouse_lister(warehouse_uri: str, *, s3_client: Any = None) -> Lister:
    """A lister of tables under `warehouse_uri` (s3://bucket/prefix or a local folder)."""
    root = warehouse_uri.rstrip("/")

    def list_table(location: str) -> list[StoredFile]:
        prefix_uri = f"{root}/{location.strip('/')}/"
        if documents.is_s3(prefix_uri):
            found = _list_s3(prefix_uri, s3_client)
        else:
            folder = documents.local_path(prefix_uri)
            found = (
                [
                    StoredFile(p.relative_to(folder).as_posix(), p.stat().st_size)
                    for p in folder.rglob("*")
                    if p.is_file()
                ]
                if folder.is_dir()
                else []
            )
        return sorted((f for f in found if not _hidden(f.relative)), key=lambda f: f.relative)

    return list_table


def _list_s3(prefix_uri: str, s3_client: Any) -> list[StoredFile]:
    bucket, prefix = documents.s3_location(prefix_uri, allow_prefix=True)
    if s3_client is None:
        import boto3

        s3_client = boto3.client("s3")
    found: list[StoredFile] = []
    try:
        for page in s3_client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            found += [
                StoredFile(item["Key"][len(prefix) :], int(item["Size"])) for item in page.get("Contents", [])
            ]
            if len(found) > MAX_LISTED_OBJECTS:
                raise WarehouseUnavailableError(
                    f"{prefix_uri}: more than {MAX_LISTED_OBJECTS} objects; not listed"
                )
    except WarehouseUnavailableError:
        raise
    except Exception as error:  # botocore raises many types; the caller needs one
        raise WarehouseUnavailableError(f"could not list {prefix_uri}: {error}") from None
    return found
