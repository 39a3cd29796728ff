"""The deployment policy: who may submit, approve, cancel and retry which backfills, and
which backfills need a second person's approval (docs/policy.md)."""

from backfill_orchestrator.policy.errors import (
    ApprovalRefusedError,
    InvalidPolicyError,
    PolicyDeniedError,
    PolicyUnavailableError,
)
from backfill_orchestrator.policy.evaluate import (
    ACTION_STATES,
    AWAITING_APPROVAL,
    BackfillFacts,
    Decision,
    PlanFacts,
    SubmittedJob,
    Verdict,
    approval_expires_at,
    check_action,
    check_submit,
    decide_submission,
    grants_of,
    jobs_of_plan,
    needs_approval,
    person_of,
    publish_policy_for,
    slack_groups_named,
)
from backfill_orchestrator.policy.model import Policy
from backfill_orchestrator.policy.parse import parse_policy
from backfill_orchestrator.policy.source import PolicySource, read_policy

__all__ = [
    "ACTION_STATES",
    "AWAITING_APPROVAL",
    "ApprovalRefusedError",
    "BackfillFacts",
    "Decision",
    "InvalidPolicyError",
    "PlanFacts",
    "Policy",
    "PolicyDeniedError",
    "PolicySource",
    "PolicyUnavailableError",
    "SubmittedJob",
    "Verdict",
    "approval_expires_at",
    "check_action",
    "check_submit",
    "decide_submission",
    "grants_of",
    "jobs_of_plan",
    "needs_approval",
    "parse_policy",
    "person_of",
    "publish_policy_for",
    "read_policy",
    "slack_groups_named",
]
