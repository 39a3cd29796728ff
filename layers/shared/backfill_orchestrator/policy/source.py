"""Where the policy document lives and how it is cached.

`POLICY_URI` names it: `s3://bucket/key` (read through backfill_orchestrator.documents) or
`ssm:/parameter/name` (an SSM parameter, SecureString allowed). Empty: no policy, today's
behaviour (everything allowed, nothing needs approval). The parsed policy is kept for
`ttl_seconds`; a document that cannot be read or is invalid raises (fail closed: nothing is
allowed on a policy nobody can read), and the next call tries again."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from backfill_orchestrator import documents
from backfill_orchestrator.documents import DocumentError
from backfill_orchestrator.policy.errors import PolicyUnavailableError
from backfill_orchestrator.policy.model import Policy
from backfill_orchestrator.policy.parse import MAX_POLICY_BYTES, parse_policy

SSM_SCHEME = "ssm:"
DEFAULT_TTL_SECONDS = 60


def read_policy(uri: str, *, s3_client: Any = None, ssm_client: Any = None) -> Policy:
    """Read and validate the policy at `uri`; InvalidPolicyError or PolicyUnavailableError."""
    if uri.startswith(SSM_SCHEME):
        name = uri[len(SSM_SCHEME) :]
        if ssm_client is None:
            raise PolicyUnavailableError(f"{uri}: no SSM client to read the policy parameter with")
        try:
            response = ssm_client.get_parameter(Name=name, WithDecryption=True)
        except Exception as error:  # botocore raises many types
            raise PolicyUnavailableError(f"{uri}: cannot read the policy parameter ({error})") from None
        return parse_policy(response["Parameter"]["Value"], source=uri)
    try:
        data = documents.read_bytes(uri, max_bytes=MAX_POLICY_BYTES, over_limit="keep", s3_client=s3_client)
    except DocumentError as error:
        raise PolicyUnavailableError(f"cannot read the policy document: {error}") from None
    return parse_policy(data, source=uri)


@dataclass
class PolicySource:
    """The deployment's policy, re-read at most every `ttl_seconds` (warm Lambdas share it)."""

    uri: str | None
    ttl_seconds: float = DEFAULT_TTL_SECONDS
    s3_client: Any = None
    ssm_client: Any = None
    clock: Callable[[], float] = time.monotonic
    _policy: Policy | None = field(default=None, init=False)
    _read_at: float | None = field(default=None, init=False)

    def get(self) -> Policy | None:
        """The policy, or None when the deployment has none."""
        if not self.uri:
            return None
        now = self.clock()
        if self._read_at is None or now - self._read_at >= self.ttl_seconds:
            self._policy = read_policy(self.uri, s3_client=self.s3_client, ssm_client=self.ssm_client)
            self._read_at = now
        return self._policy
