"""Is this request from Slack, fresh, and the first of its kind?

Signature: Slack's `v0` HMAC-SHA256 over `v0:<timestamp>:<body>` with the app's signing
secret, compared in constant time (slack_sdk's SignatureVerifier). Freshness: the
`X-Slack-Request-Timestamp` within 5 minutes of now, checked first so a stale request is
told apart from a forged one. Replays: the signature's hash is put once, conditionally, in a
small DynamoDB table with a TTL past the freshness window; a second put of the same
signature is a replay."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from slack_sdk.signature import Clock, SignatureVerifier

from backfill_orchestrator.errors import ServiceError
from backfill_orchestrator.interactivity.errors import (
    BadSignatureError,
    ReplayedRequestError,
    StaleRequestError,
)

MAX_AGE_SECONDS = 5 * 60
TIMESTAMP_HEADER = "x-slack-request-timestamp"
SIGNATURE_HEADER = "x-slack-signature"


class ReplayGuardError(ServiceError):
    """The replay table could not be written; the request is not acted on (fail closed)."""


class _FixedClock(Clock):
    def __init__(self, now: float):
        self._now = now

    def now(self) -> float:
        return self._now


def verify_signature(*, signing_secret: str, body: str, headers: Mapping[str, str], now: float) -> str:
    """The request's signature when it is fresh and correctly signed; else StaleRequestError
    or BadSignatureError. `headers` keys are lower case (API Gateway HTTP APIs send them so)."""
    timestamp = headers.get(TIMESTAMP_HEADER, "")
    signature = headers.get(SIGNATURE_HEADER, "")
    if not timestamp or not signature:
        raise BadSignatureError("missing X-Slack-Request-Timestamp or X-Slack-Signature")
    if not timestamp.isdigit():
        raise BadSignatureError(f"X-Slack-Request-Timestamp is not a number: {timestamp[:20]!r}")
    age = now - int(timestamp)
    if abs(age) > MAX_AGE_SECONDS:
        raise StaleRequestError(
            f"request timestamp is {int(age)} s from now; at most {MAX_AGE_SECONDS} s is accepted"
        )
    verifier = SignatureVerifier(signing_secret=signing_secret, clock=_FixedClock(now))
    if not verifier.is_valid(body=body, timestamp=timestamp, signature=signature):
        raise BadSignatureError(
            "the signature does not match the body (wrong signing secret or a changed body)"
        )
    return signature


@dataclass
class ReplayGuard:
    """Remembers the signatures it has seen for longer than a request stays fresh."""

    dynamodb_client: Any
    table_name: str
    clock: Callable[[], float] = time.time

    def first_use(self, signature: str) -> None:
        """Records the signature; ReplayedRequestError when it was seen before."""
        digest = hashlib.sha256(signature.encode()).hexdigest()
        now = int(self.clock())
        try:
            self.dynamodb_client.put_item(
                TableName=self.table_name,
                Item={
                    "id": {"S": f"slack-signature#{digest}"},
                    "expires_at": {"N": str(now + 2 * MAX_AGE_SECONDS)},
                },
                # An item past its TTL may still be there (DynamoDB deletes lazily): it counts as gone.
                ConditionExpression="attribute_not_exists(id) OR expires_at < :now",
                ExpressionAttributeValues={":now": {"N": str(now)}},
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                raise ReplayedRequestError("this request was already received (a replay)") from None
            raise ReplayGuardError(f"replay table {self.table_name}: {error}") from error
        except BotoCoreError as error:
            raise ReplayGuardError(f"replay table {self.table_name}: {error}") from error
