"""Submit a backfill config from Python (a Databricks notebook, a script, the CLI).

    from backfill_orchestrator.client import submit_backfill
    result = submit_backfill({"version": 1, ...}, bucket="acme-backfill-configs-prod")
    print(result.backfill_id, result.s3_uri)

The config is validated locally first: an invalid one raises `InvalidConfigError` (every
located error at once) and nothing is uploaded."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backfill_orchestrator.config import BackfillConfig, backfill_id, parse_config
from backfill_orchestrator.config.loader import format_for
from backfill_orchestrator.config.validate import DEFAULT_POLICY, ConfigPolicy
from backfill_orchestrator.errors import ServiceError

DEFAULT_PREFIX = "incoming/"
ConfigSource = dict[str, Any] | str | bytes | os.PathLike[str]


class SubmitError(ServiceError, RuntimeError):
    """The config was valid but could not be uploaded (credentials, bucket, network)."""


@dataclass(frozen=True)
class PreparedConfig:
    config: BackfillConfig
    backfill_id: str
    body: bytes
    extension: str  # ".yaml" or ".json"


@dataclass(frozen=True)
class Submission:
    backfill_id: str
    bucket: str
    key: str
    config: BackfillConfig

    @property
    def s3_uri(self) -> str:
        return f"s3://{self.bucket}/{self.key}"


def _looks_like_path(text: str) -> bool:
    return "\n" not in text and not text.lstrip().startswith("{") and len(text) < 4096 and Path(text).is_file()


def prepare_bytes(
    body: bytes, *, source: str, fmt: str | None = None, policy: ConfigPolicy = DEFAULT_POLICY
) -> PreparedConfig:
    """Validate config bytes; `fmt` None takes it from `source`'s extension, else sniffs."""
    fmt = fmt or format_for(source) or ("json" if body.lstrip().startswith(b"{") else "yaml")
    config = parse_config(body, fmt=fmt, source=source, policy=policy)  # type: ignore[arg-type]
    return PreparedConfig(config, backfill_id(config), body, ".json" if fmt == "json" else ".yaml")


def prepare_config(source: ConfigSource, *, policy: ConfigPolicy = DEFAULT_POLICY) -> PreparedConfig:
    """Validate a dict, YAML/JSON text or a path; keep the original bytes for upload."""
    if isinstance(source, dict):
        config = parse_config(source, policy=policy, source="<dict>")
        body = json.dumps(source, indent=2, default=str).encode()
        return PreparedConfig(config, backfill_id(config), body, ".json")
    if isinstance(source, os.PathLike) or (isinstance(source, str) and _looks_like_path(source)):
        path = Path(source)
        try:
            body = path.read_bytes()
        except OSError as error:
            raise SubmitError(f"{path}: cannot read ({error.strerror})") from error
        return prepare_bytes(body, source=str(path), policy=policy)
    body = source.encode("utf-8") if isinstance(source, str) else bytes(source)
    return prepare_bytes(body, source="<text>", policy=policy)


def validate_backfill(source: ConfigSource, *, policy: ConfigPolicy = DEFAULT_POLICY) -> BackfillConfig:
    return prepare_config(source, policy=policy).config


def upload_prepared(
    prepared: PreparedConfig, *, bucket: str, prefix: str = DEFAULT_PREFIX, s3_client: Any = None
) -> Submission:
    if s3_client is None:
        import boto3

        s3_client = boto3.client("s3")
    prefix = prefix if not prefix or prefix.endswith("/") else prefix + "/"
    key = f"{prefix}{prepared.backfill_id}{prepared.extension}"
    content_type = "application/json" if prepared.extension == ".json" else "application/yaml"
    try:
        s3_client.put_object(Bucket=bucket, Key=key, Body=prepared.body, ContentType=content_type)
    except Exception as error:  # botocore raises many types; the caller needs one
        raise SubmitError(f"could not upload to s3://{bucket}/{key}: {error}") from error
    return Submission(prepared.backfill_id, bucket, key, prepared.config)


def submit_backfill(
    source: ConfigSource,
    *,
    bucket: str,
    prefix: str = DEFAULT_PREFIX,
    s3_client: Any = None,
    policy: ConfigPolicy = DEFAULT_POLICY,
) -> Submission:
    """Validate, then upload to `s3://bucket/prefix<backfill_id>.<yaml|json>`.

    Raises InvalidConfigError (nothing uploaded) or SubmitError (valid, but S3 refused)."""
    prepared = prepare_config(source, policy=policy)
    return upload_prepared(prepared, bucket=bucket, prefix=prefix, s3_client=s3_client)
