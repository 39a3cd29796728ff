"""The approval gate's container-lived parts (built by wiring.py, used by approval.py): the
deployment's policy through its TTL cache, IAM names for uploaders' unique ids, and the
principals whose control documents act for the `requested_by` they name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fnmatch import fnmatchcase

from backfill_orchestrator.identity import IamNameResolver, Principal, principal_from_id
from backfill_orchestrator.policy import Policy, PolicySource
from backfill_orchestrator.trigger.events import Upload


@dataclass(kw_only=True)
class ApprovalGate:
    """The deployment's policy (cached for its TTL), IAM names for uploaders' unique ids
    (None: ids stay unresolved), and the principals whose control documents act for their
    `requested_by` (globs over Principal.match_names: the Slack interactivity function's role)."""

    policy_source: PolicySource
    identities: IamNameResolver | None = None
    delegates: frozenset[str] = frozenset()
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    def policy(self) -> Policy | None:
        return self.policy_source.get()

    def uploader(self, upload: Upload) -> Principal | None:
        """Who uploaded it, with role/user names resolved where IAM tells them."""
        principal = upload.principal
        if (
            principal is None
            or principal.principal_id is None
            or not principal.principal_id.startswith("AWS:")
        ):
            return principal
        return principal_from_id(principal.principal_id, resolver=self.identities)

    def is_delegate(self, principal: Principal) -> bool:
        return any(fnmatchcase(name, glob) for glob in self.delegates for name in principal.match_names)
