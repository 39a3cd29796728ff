"""Read and write small documents (plan, sub-plans, run reports) by URI: `s3://bucket/key`,
`file:///path` or an absolute path. boto3 honours `AWS_ENDPOINT_URL`, which is how the local
flow points S3 at moto."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse


class DocumentNotFoundError(FileNotFoundError):
    """Nothing at this URI."""


class DocumentAccessError(OSError):
    """The URI exists or may exist but could not be read or written (permissions, network)."""


def _s3_parts(uri: str) -> tuple[str, str]:
    parsed = urlparse(uri)
    if not parsed.netloc or not parsed.path.lstrip("/"):
        raise ValueError(f"{uri}: expected s3://bucket/key")
    return parsed.netloc, parsed.path.lstrip("/")


def _local_path(uri: str) -> Path:
    return Path(unquote(urlparse(uri).path)) if uri.startswith("file://") else Path(uri)


def _s3_client(s3_client: Any) -> Any:
    if s3_client is not None:
        return s3_client
    import boto3

    return boto3.client("s3")


def read_text(uri: str, *, s3_client: Any = None) -> str:
    if uri.startswith("s3://"):
        from botocore.exceptions import BotoCoreError, ClientError

        bucket, key = _s3_parts(uri)
        try:
            body = _s3_client(s3_client).get_object(Bucket=bucket, Key=key)["Body"].read()
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NoSuchBucket"):
                raise DocumentNotFoundError(f"{uri}: not found") from None
            raise DocumentAccessError(f"{uri}: {error}") from error
        except BotoCoreError as error:
            raise DocumentAccessError(f"{uri}: {error}") from error
        return body.decode("utf-8")
    path = _local_path(uri)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DocumentNotFoundError(f"{uri}: not found") from None
    except OSError as error:
        raise DocumentAccessError(f"{uri}: {error.strerror}") from error


def write_text(uri: str, text: str, *, s3_client: Any = None, content_type: str = "application/json") -> None:
    if uri.startswith("s3://"):
        from botocore.exceptions import BotoCoreError, ClientError

        bucket, key = _s3_parts(uri)
        try:
            _s3_client(s3_client).put_object(Bucket=bucket, Key=key, Body=text.encode("utf-8"), ContentType=content_type)
        except (ClientError, BotoCoreError) as error:
            raise DocumentAccessError(f"{uri}: {error}") from error
        return
    path = _local_path(uri)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise DocumentAccessError(f"{uri}: {error.strerror}") from error


def sibling(uri: str, name: str) -> str:
    """The URI of `name` in the same folder as `uri` (`name` may contain '/')."""
    head, _, _ = uri.rpartition("/")
    return f"{head}/{name}"


def remove(uri: str, *, s3_client: Any = None) -> None:
    """Delete the document if it exists (a stale run report must not pass for a new one)."""
    if uri.startswith("s3://"):
        from botocore.exceptions import BotoCoreError, ClientError

        bucket, key = _s3_parts(uri)
        try:
            _s3_client(s3_client).delete_object(Bucket=bucket, Key=key)
        except (ClientError, BotoCoreError) as error:
            raise DocumentAccessError(f"{uri}: {error}") from error
        return
    try:
        _local_path(uri).unlink(missing_ok=True)
    except OSError as error:
        raise DocumentAccessError(f"{uri}: {error.strerror}") from error
