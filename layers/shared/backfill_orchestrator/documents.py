"""One document store: read, write, list and remove small documents (configs, plans, run
reports, results, catalogs) by URI, for every component (CLI, client, planner, trigger,
DAG, Spark job).

URIs:
- `s3://bucket/key` (also `s3a://` and `s3n://`, as Spark spells them) through boto3, which
  honours `AWS_ENDPOINT_URL` (how the local flow points S3 at moto);
- `s3://bucket/key?versionId=<id>`: that version of the object, read-only (the trigger names
  an uploaded config by the version its event announced rather than copying it);
- `file:///path` and plain paths (absolute or relative), including Unity Catalog volumes
  (`/Volumes/<catalog>/<schema>/<volume>/...`, a local path on Databricks);
- `dbfs:/path`, through the `/dbfs` FUSE mount that Databricks clusters have (the mount point
  can be moved with the `BACKFILL_DBFS_MOUNT` environment variable).

Size limits and the errors for missing or unreadable documents live here once:
`DocumentNotFoundError` and `DocumentTooLargeError` are the user's (a wrong path, a huge
file), `DocumentAccessError` is a service failing (permissions, throttling, network).
Local writes are atomic (a temporary file renamed into place); S3 puts are atomic anyway.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlparse

from backfill_orchestrator.errors import BackfillError, ServiceError, UserError

DEFAULT_MAX_BYTES = 16 * 1024 * 1024
S3_SCHEMES = ("s3://", "s3a://", "s3n://")
DBFS_SCHEME = "dbfs:"
_NOT_FOUND_CODES = frozenset({"NoSuchKey", "NoSuchBucket", "NoSuchVersion", "404", "NotFound"})
# S3 version ids are URL-safe (letters, digits, '.', '_', '-'); only the URI's end is read as
# one, so a key holding '?' stays a key.
_VERSION = re.compile(r"\?versionId=([A-Za-z0-9._-]{1,1024})$")


class DocumentError(BackfillError):
    """Base of the document store's errors; the message names the URI. A subject, not a
    category: a missing document is the user's, an unreadable one a service failing."""


class InvalidDocumentUriError(DocumentError, UserError, ValueError):
    """The URI is not one the store understands (`s3://bucket` without a key, an unknown scheme)."""


class DocumentNotFoundError(DocumentError, UserError, FileNotFoundError):
    """Nothing at this URI."""


class DocumentTooLargeError(DocumentError, UserError, ValueError):
    """The document is over the size limit; at most limit + 1 bytes were read."""

    def __init__(self, uri: str, limit: int):
        self.uri = uri
        self.limit = limit
        super().__init__(f"{uri}: larger than {limit} bytes")


class DocumentAccessError(DocumentError, ServiceError, OSError):
    """The document exists or may exist but could not be read or written (permissions, network)."""


# -- URIs ------------------------------------------------------------------------------------
def is_s3(uri: str) -> bool:
    return uri.startswith(S3_SCHEMES)


def has_scheme(uri: str) -> bool:
    return "://" in uri or uri.startswith((DBFS_SCHEME, "file:"))


def s3_location(uri: str, *, allow_prefix: bool = False) -> tuple[str, str]:
    """(bucket, key) of an s3:// URI; `allow_prefix` accepts a key that is empty or ends in '/'."""
    scheme = next((s for s in S3_SCHEMES if uri.startswith(s)), None)
    if scheme is None:
        raise InvalidDocumentUriError(f"{uri}: not an s3:// URI")
    if _VERSION.search(uri):
        raise InvalidDocumentUriError(f"{uri}: names one version of an object, which can only be read")
    bucket, _, key = uri[len(scheme) :].partition("/")
    if not bucket or (not allow_prefix and (not key or key.endswith("/"))):
        raise InvalidDocumentUriError(f"{uri}: expected s3://bucket/key")
    return bucket, key


def s3_object(uri: str) -> tuple[str, str, str | None]:
    """(bucket, key, version id or None) of an s3:// URI that may end in `?versionId=<id>`."""
    found = _VERSION.search(uri) if is_s3(uri) else None
    if found is None:
        return (*s3_location(uri), None)
    return (*s3_location(uri[: found.start()]), found.group(1))


def s3_version_uri(bucket: str, key: str, version_id: str) -> str:
    """The URI of one version of an object (`s3_object` reads it back)."""
    if not _VERSION.fullmatch(f"?versionId={version_id}"):
        raise InvalidDocumentUriError(f"{version_id!r}: not an S3 version id")
    return f"s3://{bucket}/{key}?versionId={version_id}"


def local_path(uri: str) -> Path:
    """The local path a non-S3 URI stands for (`file://`, `dbfs:/` through the mount, a path)."""
    if uri.startswith("file:"):
        return Path(unquote(urlparse(uri).path))
    if uri.startswith(DBFS_SCHEME):
        mount = Path(os.environ.get("BACKFILL_DBFS_MOUNT", "/dbfs"))
        if not mount.is_dir():
            raise InvalidDocumentUriError(
                f"{uri}: dbfs:/ paths are read through the {mount} mount, which this machine does not have "
                "(run on a Databricks cluster, or copy the file and pass a local path)"
            )
        return mount / uri[len(DBFS_SCHEME) :].lstrip("/")
    if "://" in uri:
        raise InvalidDocumentUriError(f"{uri}: unsupported scheme; expected s3://, file://, dbfs:/ or a path")
    return Path(uri)


def sibling(uri: str, name: str) -> str:
    """The URI of `name` (which may contain '/') in the same folder or S3 prefix as `uri`."""
    if has_scheme(uri):
        return uri.rsplit("/", 1)[0] + "/" + name
    return str(Path(uri).resolve().parent / name)


# -- reading ---------------------------------------------------------------------------------
def read_bytes(
    uri: str,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    over_limit: Literal["raise", "keep"] = "raise",
    s3_client: Any = None,
) -> bytes:
    """The document's bytes; never more than max_bytes + 1 are read.

    `over_limit="keep"` returns those max_bytes + 1 bytes instead of raising, for callers that
    report the size problem themselves (a config's located size error)."""
    if is_s3(uri):
        bucket, key, version = s3_object(uri)
        try:
            response = _s3(s3_client).get_object(
                Bucket=bucket,
                Key=key,
                Range=f"bytes=0-{max_bytes}",
                **({"VersionId": version} if version else {}),
            )
            body = response["Body"].read(max_bytes + 1)
        except Exception as error:  # botocore raises many types
            if _aws_code(error) == "InvalidRange":  # an empty object has no byte 0
                return b""
            raise _aws_error(uri, error, "read") from None
    else:
        path = local_path(uri)
        try:
            if path.is_dir():
                raise DocumentAccessError(f"{uri}: is a directory")
            with path.open("rb") as handle:
                body = handle.read(max_bytes + 1)
        except FileNotFoundError:
            raise DocumentNotFoundError(f"{uri}: no such file") from None
        except PermissionError:
            raise DocumentAccessError(f"{uri}: permission denied") from None
        except OSError as error:
            raise DocumentAccessError(f"{uri}: cannot read ({error.strerror or error})") from None
    if len(body) > max_bytes and over_limit == "raise":
        raise DocumentTooLargeError(uri, max_bytes)
    return body


def read_text(uri: str, *, max_bytes: int = DEFAULT_MAX_BYTES, s3_client: Any = None) -> str:
    body = read_bytes(uri, max_bytes=max_bytes, s3_client=s3_client)
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DocumentAccessError(f"{uri}: not UTF-8 text (byte {error.start})") from None


def exists(uri: str, *, s3_client: Any = None) -> bool:
    if is_s3(uri):
        bucket, key, version = s3_object(uri)
        try:
            _s3(s3_client).head_object(Bucket=bucket, Key=key, **({"VersionId": version} if version else {}))
        except Exception as error:
            if _aws_code(error) in _NOT_FOUND_CODES:
                return False
            raise _aws_error(uri, error, "check") from None
        return True
    return local_path(uri).is_file()


def list_uris(prefix_uri: str, *, suffix: str = "", s3_client: Any = None) -> list[str]:
    """Every document under a folder or S3 prefix (recursively), sorted; empty when none."""
    if is_s3(prefix_uri):
        bucket, prefix = s3_location(prefix_uri, allow_prefix=True)
        scheme = prefix_uri.split("://", 1)[0]
        found: list[str] = []
        try:
            for page in (
                _s3(s3_client).get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
            ):
                found += [
                    f"{scheme}://{bucket}/{item['Key']}"
                    for item in page.get("Contents", [])
                    if item["Key"].endswith(suffix)
                ]
        except Exception as error:
            raise _aws_error(prefix_uri, error, "list") from None
        return sorted(found)
    root = local_path(prefix_uri)
    if not root.is_dir():
        return []
    base = prefix_uri.rstrip("/")
    return sorted(
        f"{base}/{path.relative_to(root).as_posix()}"
        for path in root.rglob("*")
        if path.is_file() and path.name.endswith(suffix)
    )


# -- writing ---------------------------------------------------------------------------------
def write_bytes(
    uri: str, body: bytes, *, content_type: str = "application/json", s3_client: Any = None
) -> None:
    """Whole or not at all."""
    if is_s3(uri):
        bucket, key = s3_location(uri)
        try:
            _s3(s3_client).put_object(Bucket=bucket, Key=key, Body=body, ContentType=content_type)
        except Exception as error:
            raise _aws_error(uri, error, "write") from None
        return
    path = local_path(uri)
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
        raise DocumentAccessError(f"{uri}: cannot write ({error.strerror or error})") from None


def write_text(uri: str, text: str, *, content_type: str = "application/json", s3_client: Any = None) -> None:
    write_bytes(uri, text.encode("utf-8"), content_type=content_type, s3_client=s3_client)


def remove(uri: str, *, s3_client: Any = None) -> None:
    """Delete the document if it exists (a stale run report must not pass for a new one)."""
    if is_s3(uri):
        bucket, key = s3_location(uri)
        try:
            _s3(s3_client).delete_object(Bucket=bucket, Key=key)
        except Exception as error:
            raise _aws_error(uri, error, "delete") from None
        return
    try:
        local_path(uri).unlink(missing_ok=True)
    except OSError as error:
        raise DocumentAccessError(f"{uri}: cannot delete ({error.strerror or error})") from None


# -- internals -------------------------------------------------------------------------------
def _s3(s3_client: Any) -> Any:
    if s3_client is not None:
        return s3_client
    import boto3

    return boto3.client("s3")


def _aws_code(error: Exception) -> str:
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", ""))
    return ""


def _aws_error(uri: str, error: Exception, verb: str) -> DocumentError:
    code = _aws_code(error)
    if code in _NOT_FOUND_CODES and verb in ("read", "check", "list"):
        return DocumentNotFoundError(f"{uri}: not found ({code})")
    if code:
        message = getattr(error, "response", {}).get("Error", {}).get("Message", "")
        return DocumentAccessError(f"{uri}: cannot {verb} ({code}: {message})".replace(": )", ")"))
    return DocumentAccessError(f"{uri}: cannot {verb} ({type(error).__name__}: {error})")
