"""Upload a validated config to the config bucket, and optionally follow it to its end."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from backfill_orchestrator.client.aws import aws_client
from backfill_orchestrator.client.preflight import check_prefix, incoming_prefix
from backfill_orchestrator.client.sources import ConfigSource, PreparedConfig
from backfill_orchestrator.client.status import status_table, watch_backfill
from backfill_orchestrator.client.validate import check_backfill
from backfill_orchestrator.config import BackfillConfig
from backfill_orchestrator.config.validate import ConfigPolicy
from backfill_orchestrator.errors import ServiceError
from backfill_orchestrator.lineage import LineageSource
from backfill_orchestrator.planner import JobCatalog
from backfill_orchestrator.preflight import Verdict
from backfill_orchestrator.settings.preflight import PreflightLimits
from backfill_orchestrator.status.model import StatusRecord

DEFAULT_PREFIX = "incoming/"


class SubmitError(ServiceError, RuntimeError):
    """The config was valid but could not be uploaded (credentials, bucket, network)."""


@dataclass(frozen=True)
class Submission:
    backfill_id: str
    bucket: str
    key: str
    config: BackfillConfig
    final_status: StatusRecord | None = None  # with wait=True: the record it ended with
    verdict: Verdict | None = None  # the preflight's (warnings, estimate, what was not checked)

    @property
    def s3_uri(self) -> str:
        return f"s3://{self.bucket}/{self.key}"


def upload_prepared(
    prepared: PreparedConfig,
    *,
    bucket: str,
    prefix: str = DEFAULT_PREFIX,
    s3_client: Any = None,
    session: Any = None,
    incoming: str | None = None,
    verdict: Verdict | None = None,
) -> Submission:
    prefix = check_prefix(prefix, incoming=incoming or incoming_prefix())
    s3_client = aws_client("s3", client=s3_client, session=session)
    key = f"{prefix}{prepared.backfill_id}{prepared.extension}"
    content_type = "application/json" if prepared.extension == ".json" else "application/yaml"
    try:
        s3_client.put_object(Bucket=bucket, Key=key, Body=prepared.body, ContentType=content_type)
    except Exception as error:  # botocore raises many types; the caller needs one
        raise SubmitError(f"could not upload to s3://{bucket}/{key}: {error}") from error
    return Submission(prepared.backfill_id, bucket, key, prepared.config, verdict=verdict)


def submit_backfill(
    source: ConfigSource,
    *,
    bucket: str,
    prefix: str = DEFAULT_PREFIX,
    policy: ConfigPolicy | None = None,
    marquez_url: str | None = None,
    lineage: LineageSource | None = None,
    catalog: JobCatalog | str | None = None,
    limits: PreflightLimits | None = None,
    strict: bool = False,
    wait: bool = False,
    table: str | None = None,
    interval: float = 5.0,
    timeout: float | None = None,
    on_update: Callable[[StatusRecord], None] | None = None,
    session: Any = None,
    s3_client: Any = None,
    dynamodb_client: Any = None,
) -> Submission:
    """Validate (the deployment's allowlists: `policy`, default from the environment), run the
    trigger's preflight (lineage: `lineage`, else Marquez at `marquez_url` or $MARQUEZ_URL; the
    catalog: `catalog` or $BACKFILL_JOB_CATALOG), then upload to `s3://bucket/prefix<backfill_id>.<yaml|json>`.
    A refusal raises PreflightRefusedError and a prefix the trigger never sees
    OutsideIncomingPrefixError; nothing is uploaded then.

    With `wait=True`, follow the status record (`table`, default $STATUS_TABLE) until the
    backfill ends and return it in `final_status`. Raises InvalidConfigError (nothing
    uploaded), SubmitError (valid, but S3 refused) or, waiting, WatchTimeoutError."""
    if wait:
        table = status_table(table)  # a usage error now, not after the upload
    check_prefix(prefix, incoming=incoming_prefix())  # refused before anything is read or asked
    checked = check_backfill(
        source,
        policy=policy,
        marquez_url=marquez_url,
        lineage=lineage,
        catalog=catalog,
        limits=limits,
        strict=strict,
        session=session,
        s3_client=s3_client,
    ).accepted()
    submission = upload_prepared(
        checked, bucket=bucket, prefix=prefix, s3_client=s3_client, session=session, verdict=checked.verdict
    )
    if not wait:
        return submission
    final = watch_backfill(
        submission.backfill_id,
        table=table,
        interval=interval,
        timeout=timeout,
        on_update=on_update,
        session=session,
        dynamodb_client=dynamodb_client,
    )
    return dataclasses.replace(submission, final_status=final)
