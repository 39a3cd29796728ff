"""Where tables live: the warehouse root and partition directories of warehouse tables through
Hadoop's FileSystem (local, s3a, EMRFS, DBFS: whatever the Spark cluster is configured for).

Small documents (plan, report, config) go through `backfill_orchestrator.documents` (boto3)
so that they can be read and validated before Spark starts; table directories go through the
JVM so that the job needs no second set of credentials."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from backfill_orchestrator.documents import has_scheme
from backfill_orchestrator.errors import UserError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class WarehouseNotFoundError(UserError, ValueError):
    """A local warehouse directory that does not exist."""


def resolve_warehouse(warehouse: str) -> str:
    """A URI is taken as is (the cluster checks it); a local path must be an existing directory."""
    if has_scheme(warehouse):
        return warehouse.rstrip("/")
    path = Path(warehouse)
    if not path.is_dir():
        raise WarehouseNotFoundError(f"warehouse {warehouse}: no such directory")
    return str(path.resolve())


def local_path(uri: str) -> str | None:
    """The path of a local-disk URI (a bare path or `file:`), else None."""
    if uri.startswith("file:"):
        return urlsplit(uri).path
    return None if has_scheme(uri) else uri


# -- table directories, through the cluster's Hadoop FileSystem ------------------------------


class HadoopFs:
    """The few FileSystem calls the job needs, on any URI the cluster understands."""

    def __init__(self, spark: SparkSession):
        # The class once: Py4J resolves each part of a dotted name in a JVM round trip, a
        # miss scanning every jar of the class path.
        self._path_class = spark.sparkContext._jvm.org.apache.hadoop.fs.Path
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()

    def _path(self, uri: str):
        return self._path_class(uri)

    def exists(self, uri: str) -> bool:
        path = self._path(uri)
        return bool(path.getFileSystem(self._conf).exists(path))

    def glob_directories(self, pattern: str) -> list[str]:
        path = self._path(pattern)
        statuses = path.getFileSystem(self._conf).globStatus(path)
        if statuses is None:  # a pattern without wildcards whose path does not exist
            return []
        return [status.getPath().toString() for status in statuses if status.isDirectory()]

    def size(self, uri: str) -> int:
        """Bytes under `uri` (the lineage events' output statistics)."""
        path = self._path(uri)
        return int(path.getFileSystem(self._conf).getContentSummary(path).getLength())

    def total_size(self, uris: Iterable[str]) -> int:
        """Bytes under all of `uris`: on a local disk with os calls (a write of a thousand
        hourly partitions would otherwise cost a thousand JVM round trips), elsewhere with
        `size` each."""
        total = 0
        for uri in uris:
            local = local_path(uri)
            if local is None:
                total += self.size(uri)
                continue
            for directory, _, names in os.walk(local):
                total += sum(
                    os.stat(os.path.join(directory, name)).st_size
                    for name in names
                    if not (name.startswith(".") and name.endswith(".crc"))  # Hadoop's checksums: not data
                )
        return total

    def children(self, uri: str) -> list[str]:
        path = self._path(uri)
        return [status.getPath().toString() for status in path.getFileSystem(self._conf).listStatus(path)]

    def files(self, uri: str) -> list[tuple[str, int]]:
        """Every file under `uri`, at any depth: (URI, modification time in ms)."""
        path = self._path(uri)
        found, listing = [], path.getFileSystem(self._conf).listFiles(path, True)
        while listing.hasNext():
            status = listing.next()
            found.append((status.getPath().toString(), int(status.getModificationTime())))
        return found

    def directories(self, uri: str) -> list[str]:
        """Every directory under `uri`, at any depth (none on object stores, whose prefixes
        exist only through files)."""
        fs = self._path(uri).getFileSystem(self._conf)
        found, pending = [], [self._path(uri)]
        while pending:
            for status in fs.listStatus(pending.pop()):
                if status.isDirectory():
                    found.append(status.getPath().toString())
                    pending.append(status.getPath())
        return found

    def modified_ms(self, uri: str) -> int:
        """Modification time in ms since the epoch; 0 where the store keeps none (S3 prefixes)."""
        path = self._path(uri)
        return int(path.getFileSystem(self._conf).getFileStatus(path).getModificationTime())

    def delete(self, uri: str) -> None:
        path = self._path(uri)
        path.getFileSystem(self._conf).delete(path, True)

    def move(self, source: str, target: str) -> None:
        """A directory to a target that does not exist yet (its parents are made): a rename,
        atomic on HDFS and local disks, a copy and delete on object stores."""
        from backfill_orchestrator.publish.errors import PublishStorageError, issue

        origin, destination = self._path(source), self._path(target)
        fs = origin.getFileSystem(self._conf)
        fs.mkdirs(destination.getParent())
        if not fs.rename(origin, destination):
            raise PublishStorageError([issue(source, f"cannot move to {target}")])
