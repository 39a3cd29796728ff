"""Where things live: small documents (plan, report, config) on local disk or S3, and
partition directories of warehouse tables through Hadoop's FileSystem (local, s3a, EMRFS,
DBFS: whatever the Spark cluster is configured for).

Documents go through boto3 so that they can be read and validated before Spark starts;
table directories go through the JVM so that the job needs no second set of credentials."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

S3_SCHEMES = ("s3://", "s3a://", "s3n://")


class DocumentError(Exception):
    """A document (plan, report, config) could not be read or written."""


@dataclass(frozen=True)
class S3Location:
    bucket: str
    key: str

    @classmethod
    def parse(cls, uri: str) -> S3Location:
        scheme = next((s for s in S3_SCHEMES if uri.startswith(s)), None)
        if scheme is None:
            raise DocumentError(f"{uri}: not an s3:// URI")
        bucket, _, key = uri[len(scheme):].partition("/")
        if not bucket or not key or key.endswith("/"):
            raise DocumentError(f"{uri}: expected s3://bucket/key")
        return cls(bucket, key)


class WarehouseNotFoundError(ValueError):
    """A local warehouse directory that does not exist."""


def resolve_warehouse(warehouse: str) -> str:
    """A URI is taken as is (the cluster checks it); a local path must be an existing directory."""
    if has_scheme(warehouse):
        return warehouse.rstrip("/")
    path = Path(warehouse)
    if not path.is_dir():
        raise WarehouseNotFoundError(f"warehouse {warehouse}: no such directory")
    return str(path.resolve())


def is_s3(uri: str) -> bool:
    return uri.startswith(S3_SCHEMES)


def has_scheme(uri: str) -> bool:
    return "://" in uri or uri.startswith(("dbfs:/", "file:/"))


def sibling(uri: str, name: str) -> str:
    """`name` in the same directory (or S3 prefix) as `uri`."""
    if is_s3(uri) or has_scheme(uri):
        return uri.rsplit("/", 1)[0] + "/" + name
    return str(Path(uri).resolve().parent / name)


def read_document(uri: str, *, s3_client: Any = None, max_bytes: int = 16 * 1024 * 1024) -> bytes:
    if is_s3(uri):
        location = S3Location.parse(uri)
        if s3_client is None:
            raise DocumentError(f"{uri}: an S3 client is needed to read it")
        try:
            response = s3_client.get_object(Bucket=location.bucket, Key=location.key)
            body = response["Body"].read(max_bytes + 1)
        except Exception as error:  # botocore raises many types; all mean "cannot read"
            raise DocumentError(f"{uri}: cannot read ({_aws_reason(error)})") from None
    else:
        path = Path(uri)
        try:
            if path.is_dir():
                raise DocumentError(f"{uri}: is a directory")
            with path.open("rb") as handle:
                body = handle.read(max_bytes + 1)
        except FileNotFoundError:
            raise DocumentError(f"{uri}: no such file") from None
        except PermissionError:
            raise DocumentError(f"{uri}: permission denied") from None
        except OSError as error:
            raise DocumentError(f"{uri}: cannot read ({error.strerror})") from None
    if len(body) > max_bytes:
        raise DocumentError(f"{uri}: larger than {max_bytes} bytes")
    return body


def write_document(uri: str, body: bytes, *, s3_client: Any = None, content_type: str = "application/json") -> None:
    """Write whole or not at all: S3 puts are atomic; local files are renamed into place."""
    if is_s3(uri):
        location = S3Location.parse(uri)
        if s3_client is None:
            raise DocumentError(f"{uri}: an S3 client is needed to write it")
        try:
            s3_client.put_object(Bucket=location.bucket, Key=location.key, Body=body, ContentType=content_type)
        except Exception as error:  # botocore raises many types; all mean "cannot write"
            raise DocumentError(f"{uri}: cannot write ({_aws_reason(error)})") from None
        return
    path = Path(uri)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(body)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as error:
        raise DocumentError(f"{uri}: cannot write ({error.strerror or error})") from None


def _aws_reason(error: Exception) -> str:
    response = getattr(error, "response", None)
    if isinstance(response, dict) and "Error" in response:
        return f"{response['Error'].get('Code', '?')}: {response['Error'].get('Message', '')}".rstrip(": ")
    return f"{type(error).__name__}: {error}"


# -- table directories, through the cluster's Hadoop FileSystem ------------------------------

class HadoopFs:
    """The few FileSystem calls the job needs, on any URI the cluster understands."""

    def __init__(self, spark: SparkSession):
        self._jvm = spark.sparkContext._jvm
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()

    def _path(self, uri: str):
        return self._jvm.org.apache.hadoop.fs.Path(uri)

    def exists(self, uri: str) -> bool:
        path = self._path(uri)
        return bool(path.getFileSystem(self._conf).exists(path))

    def glob_directories(self, pattern: str) -> list[str]:
        path = self._path(pattern)
        statuses = path.getFileSystem(self._conf).globStatus(path)
        if statuses is None:  # a pattern without wildcards whose path does not exist
            return []
        return [status.getPath().toString() for status in statuses if status.isDirectory()]

    def delete(self, uri: str) -> None:
        path = self._path(uri)
        path.getFileSystem(self._conf).delete(path, True)
