"""Cancel or retry a backfill from a notebook or the CLI: write a control document to
`s3://<bucket>/control/<backfill id>/<action>-<UTC timestamp>.json`, which the trigger
picks up (and checks against the deployment's policy). Only the document is written here."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from backfill_orchestrator._compat import UTC
from backfill_orchestrator.client.aws import aws_client
from backfill_orchestrator.contracts.control_request import ControlAction, ControlRequest
from backfill_orchestrator.errors import ServiceError, UserError
from backfill_orchestrator.parsing import issue_from_pydantic

CONTROL_PREFIX = "control/"
_SESSION_NAME = re.compile(r"^arn:aws[\w-]*:(?:sts|iam)::\d+:[\w-]+/(?:.+/)?(?P<name>[^/]+)$")


class InvalidControlRequestError(UserError, ValueError):
    """The request is not valid (a bad backfill id, a blank reason, an unknown requester)."""


class ControlWriteError(ServiceError, RuntimeError):
    """The control document could not be written (credentials, bucket, network)."""


@dataclass(frozen=True)
class ControlReceipt:
    request: ControlRequest
    bucket: str
    key: str

    @property
    def s3_uri(self) -> str:
        return f"s3://{self.bucket}/{self.key}"


def caller_identity(*, session: Any = None, sts_client: Any = None) -> str:
    """Who is asking, from STS: the session name of an assumed role (AWS SSO puts the user
    name there, often an email) or the IAM user name."""
    try:
        arn = aws_client("sts", client=sts_client, session=session).get_caller_identity()["Arn"]
    except Exception as error:  # botocore raises many types
        raise ControlWriteError(f"cannot tell who is asking (sts get-caller-identity): {error}") from error
    match = _SESSION_NAME.match(arn)
    return match.group("name") if match else arn


def control_key(backfill_id: str, action: str, at: datetime, *, prefix: str = CONTROL_PREFIX) -> str:
    stamp = at.astimezone(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return f"{prefix}{backfill_id}/{action}-{stamp}.json"


def request_control(
    action: ControlAction,
    backfill_id: str,
    *,
    reason: str,
    bucket: str,
    requested_by: str | None = None,
    now: datetime | None = None,
    session: Any = None,
    s3_client: Any = None,
    sts_client: Any = None,
) -> ControlReceipt:
    requester = requested_by or caller_identity(session=session, sts_client=sts_client)
    at = now or datetime.now(UTC)
    try:
        request = ControlRequest(
            action=action, backfill_id=backfill_id, reason=reason, requested_by=requester, requested_at=at
        )
    except ValidationError as error:
        issues = [issue_from_pydantic(e) for e in error.errors(include_url=False)]
        hint = "" if requested_by else " (pass requested_by='you@example.com')"
        raise InvalidControlRequestError(
            f"{action} {backfill_id}: " + "; ".join(str(issue) for issue in issues) + hint
        ) from None
    key = control_key(request.backfill_id, action, at)
    try:
        aws_client("s3", client=s3_client, session=session).put_object(
            Bucket=bucket, Key=key, Body=request.to_json().encode(), ContentType="application/json"
        )
    except Exception as error:
        raise ControlWriteError(f"could not write s3://{bucket}/{key}: {error}") from error
    return ControlReceipt(request, bucket, key)


def cancel_backfill(
    backfill_id: str,
    *,
    reason: str,
    bucket: str,
    requested_by: str | None = None,
    session: Any = None,
    s3_client: Any = None,
    sts_client: Any = None,
) -> ControlReceipt:
    """Ask the trigger to cancel the backfill (stop its DAG run or replay). `requested_by` defaults to the caller's AWS identity."""
    return request_control(
        "cancel",
        backfill_id,
        reason=reason,
        bucket=bucket,
        requested_by=requested_by,
        session=session,
        s3_client=s3_client,
        sts_client=sts_client,
    )


def retry_backfill(
    backfill_id: str,
    *,
    reason: str,
    bucket: str,
    requested_by: str | None = None,
    session: Any = None,
    s3_client: Any = None,
    sts_client: Any = None,
) -> ControlReceipt:
    """Ask the trigger to run a failed or cancelled backfill again. `requested_by` defaults to the caller's AWS identity."""
    return request_control(
        "retry",
        backfill_id,
        reason=reason,
        bucket=bucket,
        requested_by=requested_by,
        session=session,
        s3_client=s3_client,
        sts_client=sts_client,
    )
