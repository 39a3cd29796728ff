"""Policy text to a `Policy`, or one InvalidPolicyError listing every located issue.
YAML is read like every document (backfill_orchestrator.parsing: one document, no duplicate
keys, anchors or tags)."""

from __future__ import annotations

import difflib
from typing import Any

from backfill_orchestrator.errors import ConfigIssue
from backfill_orchestrator.parsing import DocumentKind, issue_from_pydantic
from backfill_orchestrator.policy.errors import InvalidPolicyError
from backfill_orchestrator.policy.model import MODELS_BY_PATH, Policy

MAX_POLICY_BYTES = 256 * 1024


def _issue(error: Any) -> ConfigIssue:
    return issue_from_pydantic(error, unknown_key=_unknown_key)


def _unknown_key(loc: Any) -> str:
    parent = tuple(part for part in loc[:-1] if isinstance(part, str) and part != "people")
    if loc[:1] == ("people",):
        parent = ("people",)
    model = MODELS_BY_PATH.get(parent)
    close = difflib.get_close_matches(str(loc[-1]), list(model.model_fields), n=1) if model else []
    return f"unknown key; did you mean '{close[0]}'?" if close else "unknown key"


def _cross_issues(policy: Policy) -> list[ConfigIssue]:
    """Rules between fields: grants name known people; names and Slack users are unique."""
    issues: list[ConfigIssue] = []
    seen_grants: dict[str, int] = {}
    for index, grant in enumerate(policy.grants):
        if grant.name in seen_grants:
            issues.append(
                ConfigIssue(f"grants[{index}].name", f"duplicate of grants[{seen_grants[grant.name]}].name")
            )
        seen_grants.setdefault(grant.name, index)
        for position, member in enumerate(grant.members):
            if member not in policy.people:
                known = ", ".join(sorted(policy.people)) or "none defined"
                issues.append(
                    ConfigIssue(
                        f"grants[{index}].members[{position}]", f"unknown person {member!r} (people: {known})"
                    )
                )
    slack_owner: dict[str, str] = {}
    for name, person in policy.people.items():
        if person.slack_user is None:
            continue
        if person.slack_user in slack_owner:
            issues.append(
                ConfigIssue(
                    f"people.{name}.slack_user",
                    f"{person.slack_user} is already people.{slack_owner[person.slack_user]}",
                )
            )
        slack_owner.setdefault(person.slack_user, name)
    return issues


POLICY_DOCUMENT = DocumentKind(
    Policy, error=InvalidPolicyError, max_bytes=MAX_POLICY_BYTES, issue=_issue, model_checks=_cross_issues
)


def parse_policy(data: bytes | str | dict[str, Any], *, source: str | None = None) -> Policy:
    return POLICY_DOCUMENT.parse(data, source=source)
