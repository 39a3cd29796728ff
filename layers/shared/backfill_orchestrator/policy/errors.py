"""The policy package's errors: a broken policy document is the deployment's fault (a
ServiceError: it pages and nothing is let through); a denial is a PolicyRefusal."""

from __future__ import annotations

from backfill_orchestrator.errors import LocatedIssuesError, PolicyRefusal, ServiceError


class InvalidPolicyError(LocatedIssuesError, ServiceError, ValueError):
    """The deployment's policy document is not valid; carries every located issue."""

    document = "policy"


class PolicyUnavailableError(ServiceError, RuntimeError):
    """The policy document could not be read (missing, no permission, unreachable)."""


class PolicyDeniedError(PolicyRefusal):
    """A principal asked for something the policy does not allow; names the rule and where."""

    def __init__(self, message: str, *, rule: str, location: str | None = None):
        self.rule = rule
        self.location = location
        super().__init__(f"{location}: {message}" if location else message)


class ApprovalRefusedError(PolicyRefusal):
    """A control action (approve, reject, cancel, retry) that the policy or the approval gate
    does not allow now; says why and names the rule."""

    def __init__(self, message: str, *, rule: str):
        self.rule = rule
        super().__init__(f"{message} (policy rule: {rule})")
