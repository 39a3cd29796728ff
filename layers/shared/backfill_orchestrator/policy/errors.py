"""The policy package's errors: a broken policy document is the deployment's fault (a
ServiceError: it pages and nothing is let through); a denial is a PolicyRefusal."""

from __future__ import annotations

from collections.abc import Iterable

from backfill_orchestrator.config.errors import ConfigIssue
from backfill_orchestrator.errors import PolicyRefusal, ServiceError


class InvalidPolicyError(ServiceError, ValueError):
    """The deployment's policy document is not valid; carries every located issue."""

    def __init__(self, issues: Iterable[ConfigIssue], *, source: str | None = None):
        self.issues: list[ConfigIssue] = list(issues)
        self.source = source
        prefix = f"{source}: " if source else ""
        super().__init__("\n".join(f"{prefix}{issue}" for issue in self.issues))


class PolicyUnavailableError(ServiceError, RuntimeError):
    """The policy document could not be read (missing, no permission, unreachable)."""


class PolicyDeniedError(PolicyRefusal):
    """A principal asked for something the policy does not allow; names the rule and where."""

    def __init__(self, message: str, *, rule: str, location: str | None = None):
        self.rule = rule
        self.location = location
        super().__init__(f"{location}: {message}" if location else message)
