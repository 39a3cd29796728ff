"""Directories of table data, moved and deleted: on a local disk (a rename is atomic) or on S3
(a "move" is a copy of each object then a delete: nothing about it is atomic).

The Spark job uses the cluster's Hadoop FileSystem instead (spark_jobs.engine.storage.HadoopFs
has the same three calls), so a publish inside the job needs no second set of credentials."""

from __future__ import annotations

import shutil
from typing import Any, Protocol

from backfill_orchestrator import documents
from backfill_orchestrator.publish.errors import PublishStorageError, issue


class DataStore(Protocol):
    def exists(self, uri: str) -> bool: ...
    def move(self, source: str, target: str) -> None: ...  # a directory, to a target that does not exist
    def delete(self, uri: str) -> None: ...  # a directory and all under it; nothing if absent


class FileDataStore:
    """Local paths (and `file:` URIs) and `s3://` / `s3a://` prefixes."""

    def __init__(self, *, s3_client: Any = None) -> None:
        self._s3_client = s3_client

    def exists(self, uri: str) -> bool:
        if documents.is_s3(uri):
            bucket, prefix = self._prefix(uri)
            listed = self._s3().list_objects_v2(Bucket=bucket, Prefix=prefix, MaxKeys=1)
            return bool(listed.get("KeyCount"))
        return documents.local_path(uri).exists()

    def move(self, source: str, target: str) -> None:
        if documents.is_s3(source) != documents.is_s3(target):
            raise PublishStorageError([issue(source, f"cannot move between stores (to {target})")])
        try:
            if documents.is_s3(source):
                self._s3_move(source, target)
            else:
                destination = documents.local_path(target)
                destination.parent.mkdir(parents=True, exist_ok=True)
                documents.local_path(source).rename(destination)
        except OSError as error:
            raise PublishStorageError([issue(source, f"cannot move to {target}: {error}")]) from None

    def delete(self, uri: str) -> None:
        if documents.is_s3(uri):
            bucket, prefix = self._prefix(uri)
            for keys in self._keys(bucket, prefix, batch=1000):
                self._s3().delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": key} for key in keys]})
            return
        path = documents.local_path(uri)
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()

    # -- S3 ----------------------------------------------------------------------------------
    def _s3(self) -> Any:
        if self._s3_client is None:
            import boto3

            self._s3_client = boto3.client("s3")
        return self._s3_client

    @staticmethod
    def _prefix(uri: str) -> tuple[str, str]:
        bucket, key = documents.s3_location(uri.rstrip("/") + "/", allow_prefix=True)
        return bucket, key

    def _keys(self, bucket: str, prefix: str, *, batch: int) -> list[list[str]]:
        keys = [
            item["Key"]
            for page in self._s3().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
            for item in page.get("Contents", [])
        ]
        return [keys[i : i + batch] for i in range(0, len(keys), batch)]

    def _s3_move(self, source: str, target: str) -> None:
        bucket, prefix = self._prefix(source)
        target_bucket, target_prefix = self._prefix(target)
        for keys in self._keys(bucket, prefix, batch=1000):
            for key in keys:
                self._s3().copy_object(
                    Bucket=target_bucket,
                    Key=target_prefix + key[len(prefix) :],
                    CopySource={"Bucket": bucket, "Key": key},
                )
        self.delete(source)
