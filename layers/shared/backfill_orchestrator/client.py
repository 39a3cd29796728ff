"""Submit a backfill config from Python (a Databricks notebook, a script, the CLI).

    from backfill_orchestrator.client import submit_backfill
    result = submit_backfill({"version": 1, ...}, bucket="acme-backfill-configs-prod")
    print(result.backfill_id, result.s3_uri)

The config is validated locally first: an invalid one raises `InvalidConfigError` (every
located error at once) and nothing is uploaded. Then the trigger's preflight runs with the
deployment's settings from the environment (ALLOWED_NAMESPACES, SPARK_PROFILES, MARQUEZ_URL,
BACKFILL_JOB_CATALOG, WAREHOUSE_URI, the limits of docs/planner.md): a refusal raises
`PreflightRefusedError` and nothing is uploaded; what could not be reached is listed in
`Submission.verdict.unchecked`."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backfill_orchestrator.config import BackfillConfig, backfill_id, parse_config
from backfill_orchestrator.config.loader import format_for
from backfill_orchestrator.config.validate import DEFAULT_POLICY, ConfigPolicy
from backfill_orchestrator.errors import PolicyRefusal, ServiceError
from backfill_orchestrator.lineage import URL_ENV, LineageSource, MarquezClient
from backfill_orchestrator.planner import CATALOG_ENV, JobCatalog
from backfill_orchestrator.preflight import PreflightRefusedError, Verdict, preflight_config, warehouse_lister
from backfill_orchestrator.settings.environment import EnvironmentReader
from backfill_orchestrator.settings.preflight import PreflightLimits
from backfill_orchestrator.settings.trigger import DEFAULT_SPARK_PROFILES, comma_set

DEFAULT_PREFIX = "incoming/"
ConfigSource = dict[str, Any] | str | bytes | os.PathLike[str]


class SubmitError(ServiceError, RuntimeError):
    """The config was valid but could not be uploaded (credentials, bucket, network)."""


class OutsideIncomingPrefixError(PolicyRefusal, ValueError):
    """An upload key outside the deployment's incoming prefix: the trigger would never see it."""


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
    verdict: Verdict | None = None

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


def deployment_policy(environ: dict[str, str] | None = None) -> ConfigPolicy:
    """The allowlists the trigger applies, from the same variables (docs/trigger.md)."""
    env = EnvironmentReader(environ)
    return ConfigPolicy(
        allowed_namespaces=comma_set(env.get("ALLOWED_NAMESPACES")),
        spark_profiles=comma_set(env.get("SPARK_PROFILES")) or DEFAULT_SPARK_PROFILES,
    )


def incoming_prefix(environ: dict[str, str] | None = None) -> str:
    prefix = EnvironmentReader(environ).get("INCOMING_PREFIX") or DEFAULT_PREFIX
    return prefix if prefix.endswith("/") else prefix + "/"


def check_prefix(prefix: str, *, incoming: str) -> str:
    """The prefix with its '/', or OutsideIncomingPrefixError when the trigger would not see it."""
    prefix = prefix if not prefix or prefix.endswith("/") else prefix + "/"
    if not prefix.startswith(incoming):
        raise OutsideIncomingPrefixError(
            f"prefix {prefix!r} is outside the deployment's incoming prefix {incoming!r}: "
            "the trigger would never see the upload"
        )
    return prefix


def preflight_prepared(
    prepared: PreparedConfig,
    *,
    lineage: LineageSource | None = None,
    catalog: JobCatalog | None = None,
    limits: PreflightLimits | None = None,
    strict: bool = False,
    environ: dict[str, str] | None = None,
) -> Verdict:
    """The trigger's preflight with what is reachable from here (each default from the environment)."""
    environ = dict(os.environ) if environ is None else environ
    unchecked: list[str] = []
    if lineage is None and environ.get(URL_ENV):
        lineage = MarquezClient.from_env(environ=environ)
    elif lineage is None:
        unchecked.append(f"lineage (no Marquez URL: set {URL_ENV})")
    if catalog is None and environ.get(CATALOG_ENV):
        catalog = JobCatalog.load(environ[CATALOG_ENV])
    if limits is None:
        env = EnvironmentReader(environ)
        limits = PreflightLimits.read(env)
        env.check()
    verdict, _ = preflight_config(
        prepared.config, backfill_id=prepared.backfill_id, lineage=lineage, catalog=catalog, limits=limits,
        lister=warehouse_lister(limits.warehouse_uri) if limits.warehouse_uri else None,
        strict=strict, unchecked=unchecked,
    )
    return verdict


def upload_prepared(
    prepared: PreparedConfig,
    *,
    bucket: str,
    prefix: str = DEFAULT_PREFIX,
    s3_client: Any = None,
    incoming: str | None = None,
    verdict: Verdict | None = None,
) -> Submission:
    prefix = check_prefix(prefix, incoming=incoming or incoming_prefix())
    if s3_client is None:
        import boto3

        s3_client = boto3.client("s3")
    key = f"{prefix}{prepared.backfill_id}{prepared.extension}"
    content_type = "application/json" if prepared.extension == ".json" else "application/yaml"
    try:
        s3_client.put_object(Bucket=bucket, Key=key, Body=prepared.body, ContentType=content_type)
    except Exception as error:  # botocore raises many types; the caller needs one
        raise SubmitError(f"could not upload to s3://{bucket}/{key}: {error}") from error
    return Submission(prepared.backfill_id, bucket, key, prepared.config, verdict)


def submit_backfill(
    source: ConfigSource,
    *,
    bucket: str,
    prefix: str = DEFAULT_PREFIX,
    s3_client: Any = None,
    policy: ConfigPolicy | None = None,
    lineage: LineageSource | None = None,
    catalog: JobCatalog | None = None,
    limits: PreflightLimits | None = None,
    strict: bool = False,
) -> Submission:
    """Validate (the deployment's allowlists: `policy`, default from the environment), run the
    preflight, then upload to `s3://bucket/prefix<backfill_id>.<yaml|json>`.

    Raises InvalidConfigError or PreflightRefusedError (nothing uploaded),
    OutsideIncomingPrefixError, or SubmitError (valid, but S3 refused)."""
    prepared = prepare_config(source, policy=policy or deployment_policy())
    check_prefix(prefix, incoming=incoming_prefix())
    verdict = preflight_prepared(prepared, lineage=lineage, catalog=catalog, limits=limits, strict=strict)
    if not verdict.accepted:
        raise PreflightRefusedError(verdict)
    return upload_prepared(prepared, bucket=bucket, prefix=prefix, s3_client=s3_client, verdict=verdict)
