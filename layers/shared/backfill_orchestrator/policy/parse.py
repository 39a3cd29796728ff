"""Policy text to a `Policy`, or one InvalidPolicyError listing every located issue.
YAML is read by the config loader (one document, no duplicate keys, anchors or tags)."""

from __future__ import annotations

import difflib
from typing import Any

from pydantic import ValidationError

from backfill_orchestrator.config.errors import ConfigIssue, InvalidConfigError, issue_from_pydantic
from backfill_orchestrator.config.loader import load_document
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
            issues.append(ConfigIssue(f"grants[{index}].name", f"duplicate of grants[{seen_grants[grant.name]}].name"))
        seen_grants.setdefault(grant.name, index)
        for position, member in enumerate(grant.members):
            if member not in policy.people:
                known = ", ".join(sorted(policy.people)) or "none defined"
                issues.append(ConfigIssue(f"grants[{index}].members[{position}]", f"unknown person {member!r} (people: {known})"))
    slack_owner: dict[str, str] = {}
    for name, person in policy.people.items():
        if person.slack_user is None:
            continue
        if person.slack_user in slack_owner:
            issues.append(ConfigIssue(
                f"people.{name}.slack_user", f"{person.slack_user} is already people.{slack_owner[person.slack_user]}"
            ))
        slack_owner.setdefault(person.slack_user, name)
    return issues


def parse_policy(data: bytes | str | dict[str, Any], *, source: str | None = None) -> Policy:
    if isinstance(data, dict):
        document: Any = data
    else:
        try:
            document = load_document(data, source=source, max_bytes=MAX_POLICY_BYTES)
        except InvalidConfigError as error:
            raise InvalidPolicyError(error.issues, source=source) from None
    try:
        policy = Policy.model_validate(document)
    except ValidationError as error:
        issues = [_issue(e) for e in error.errors(include_url=False)]
        raise InvalidPolicyError(list(dict.fromkeys(issues)), source=source) from None
    issues = _cross_issues(policy)
    if issues:
        raise InvalidPolicyError(issues, source=source)
    return policy
