"""Policy decisions: may this principal submit these jobs, does this plan need a second
person's approval, may this principal act on this backfill now.

With no policy configured (`policy=None`) everything is allowed and nothing needs approval:
the behaviour of a deployment without a policy document. Every refusal names the rule
that refused and, where there is one, the place (`jobs[0]`, a downstream job)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from fnmatch import fnmatchcase

from backfill_orchestrator._compat import UTC, StrEnum
from backfill_orchestrator.config.model import PublishOverride
from backfill_orchestrator.contracts.control_request import PersonAction
from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.contracts.publish import PublishPolicy
from backfill_orchestrator.errors import ROOT, ConfigIssue
from backfill_orchestrator.identity import Principal
from backfill_orchestrator.planner.catalog import CatalogEntry
from backfill_orchestrator.planner.partitions import plan_partitions
from backfill_orchestrator.policy.errors import PolicyDeniedError
from backfill_orchestrator.policy.model import Grant, Permission, Policy

# The grant each action needs: rejecting is deciding an approval, discarding a publish.
PERMISSION_FOR: dict[PersonAction, Permission] = {
    "approve": "approve",
    "reject": "approve",
    "cancel": "cancel",
    "retry": "retry",
    "publish": "publish",
    "discard": "publish",
    "undo": "undo",
}
AWAITING_PUBLISH = "AWAITING_PUBLISH"
AWAITING_APPROVAL = "AWAITING_APPROVAL"
# The states each control action makes sense in (the lifecycle's state machine, docs/lifecycle.md,
# not policy): cancelling a CANCELLED backfill is a no-op, a CANCELLED one may be retried.
ACTION_STATES: dict[str, frozenset[str]] = {
    "approve": frozenset({AWAITING_APPROVAL}),
    "reject": frozenset({AWAITING_APPROVAL}),
    "cancel": frozenset(
        {AWAITING_APPROVAL, "RECEIVED", "PLANNED", "QUEUED", "TRIGGERED", "RUNNING", "CANCELLED"}
    ),
    "retry": frozenset({"FAILED", "CANCELLED", "DISCARDED", "UNDONE"}),
    "publish": frozenset({AWAITING_PUBLISH}),
    "discard": frozenset({AWAITING_PUBLISH}),
    "undo": frozenset({"SUCCEEDED", "UNDONE"}),  # UNDONE: a no-op ("already undone")
}
# Actions the submitter may not take on their own backfill: always approve; publish and undo
# when the policy's `publish.four_eyes` says so.
FOUR_EYES_ACTIONS: frozenset[str] = frozenset({"publish", "undo"})


class Verdict(StrEnum):
    """What the policy says of a submission or a control action."""

    ALLOWED = "allowed"
    NEEDS_APPROVAL = "needs_approval"  # a submission only: a second person must approve it
    REFUSED = "refused"


@dataclass(frozen=True)
class Decision:
    outcome: Verdict
    reasons: tuple[str, ...] = ()
    rule: str | None = None  # the policy rule that refused or asked for approval
    location: str | None = None  # where: `jobs[0]`, `downstream food_delivery/x`
    approvers: tuple[str, ...] = ()  # needs_approval: grants whose members may approve
    issues: tuple[ConfigIssue, ...] = ()  # the reasons, located, for result files and messages

    @property
    def refused(self) -> bool:
        return self.outcome is Verdict.REFUSED

    def raise_if_refused(self) -> None:
        if self.refused:
            raise PolicyDeniedError(
                "; ".join(self.reasons), rule=self.rule or "policy", location=self.location
            )


ALLOWED = Decision(Verdict.ALLOWED)


def _refused(reason: str, *, rule: str) -> Decision:
    return Decision(
        Verdict.REFUSED, (reason,), rule=rule, issues=(ConfigIssue(ROOT, f"{reason} (policy rule: {rule})"),)
    )


@dataclass(frozen=True)
class SubmittedJob:
    """A job the plan rewrites. `location` says where it comes from: `jobs[0]` for a root,
    `downstream <namespace>/<name>` for a job lineage added."""

    namespace: str
    name: str
    location: str
    downstream: bool = False

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def jobs_of_plan(plan: Plan) -> list[SubmittedJob]:
    """Every job the plan rewrites: its roots (`jobs[i]`, in the config's order) then each
    downstream step's job."""
    jobs = [
        SubmittedJob(root.namespace, root.name, f"jobs[{index}]") for index, root in enumerate(plan.roots)
    ]
    roots = {job.key for job in jobs}
    for step in plan.steps:
        key = f"{step.job.namespace}/{step.job.name}"
        if step.reason == "downstream" and key not in roots:
            jobs.append(SubmittedJob(step.job.namespace, step.job.name, f"downstream {key}", downstream=True))
    return jobs


@dataclass(frozen=True)
class PlanFacts:
    """What the approval thresholds look at. Cost and bytes come from an estimator when
    the deployment has one (None: not checked)."""

    partitions: int
    downstream_jobs: int
    namespaces: frozenset[str]
    estimated_cost_usd: float | None = None
    estimated_bytes: int | None = None

    @classmethod
    def from_plan(
        cls,
        plan: Plan,
        *,
        estimated_cost_usd: float | None = None,
        estimated_bytes: int | None = None,
        entries: Mapping[str, CatalogEntry | None] | None = None,
    ) -> PlanFacts:
        """Partitions: what the plan rewrites (planner/partitions.py, the count its estimate,
        its text and page show): the estimate's, made with the catalog, when the plan carries
        one, else counted from the plan alone."""
        estimate = plan.estimate or {}
        partitions = (
            int(estimate["partitions"]) if "partitions" in estimate else plan_partitions(plan, entries)
        )
        namespaces = {root.namespace for root in plan.roots} | {step.job.namespace for step in plan.steps}
        return cls(
            partitions=partitions,
            downstream_jobs=sum(1 for job in jobs_of_plan(plan) if job.downstream),
            namespaces=frozenset(namespaces),
            estimated_cost_usd=estimated_cost_usd,
            estimated_bytes=estimated_bytes,
        )


@dataclass(frozen=True)
class BackfillFacts:
    """What an action on an existing backfill is checked against (from its status record)."""

    backfill_id: str
    state: str
    submitter: Principal | None  # None: not recorded (then nobody can approve: four eyes)
    jobs: tuple[str, ...] = ()  # namespace/name of the root jobs (for the grants' job scope)
    approval_requested_at: datetime | None = None  # when it entered AWAITING_APPROVAL
    approvers: tuple[str, ...] = ()  # grants the submit decision named as approvers (owners)


# -- matching -------------------------------------------------------------------------------
def person_of(policy: Policy, principal: Principal) -> str | None:
    """The policy's person this identity belongs to (a Slack user id, an AWS name glob or an
    Airflow user name glob)."""
    for name, person in policy.people.items():
        if principal.slack_user and person.slack_user == principal.slack_user:
            return name
        if principal.airflow_user is not None and any(
            fnmatchcase(principal.airflow_user, glob) for glob in person.airflow
        ):
            return name
        if any(fnmatchcase(candidate, glob) for glob in person.aws for candidate in principal.match_names):
            return name
    return None


def grants_of(policy: Policy, principal: Principal) -> list[Grant]:
    person = person_of(policy, principal)
    return [
        grant
        for grant in policy.grants
        if (person is not None and person in grant.members)
        or (principal.slack_user is not None and principal.slack_user in grant.slack_users)
        or not principal.slack_groups.isdisjoint(grant.slack_groups)
        or any(fnmatchcase(candidate, glob) for glob in grant.aws for candidate in principal.match_names)
    ]


def slack_groups_named(policy: Policy) -> frozenset[str]:
    """The Slack user groups the policy grants anything to (the only ones worth looking up)."""
    return frozenset(group for grant in policy.grants for group in grant.slack_groups)


def _with(grants: Iterable[Grant], permission: Permission) -> list[Grant]:
    return [grant for grant in grants if permission in grant.permissions or "admin" in grant.permissions]


def _covers(grant: Grant, job_key: str) -> bool:
    return any(fnmatchcase(job_key, glob) for glob in grant.jobs)


def _scope(grants: Sequence[Grant]) -> str:
    return "; ".join(f"{grant.name} covers {', '.join(grant.jobs)}" for grant in grants)


# -- decisions ------------------------------------------------------------------------------
def check_submit(
    policy: Policy | None, *, principal: Principal | None, jobs: Sequence[SubmittedJob]
) -> Decision:
    """May `principal` submit a backfill rewriting `jobs` (roots and downstream)?

    A root outside the submitter's `submit` scope is refused. A downstream job outside it
    needs approval from the grants that may approve it (its owners), or is refused, as
    `downstream_outside_scope` says."""
    if policy is None:
        return ALLOWED
    if principal is None:
        return _refused(
            "the uploader's identity is unknown; the policy allows only named principals", rule="grants"
        )
    submitters = _with(grants_of(policy, principal), "submit")
    if not submitters:
        return _refused(f"no grant gives {principal.display} the submit permission", rule="grants")
    refusals: list[tuple[str, str, str]] = []  # (location, reason, rule)
    approvals: list[tuple[str, str]] = []
    approvers: dict[str, None] = {}
    for job in jobs:
        if any(_covers(grant, job.key) for grant in submitters):
            continue
        outside = f"{job.key} is outside the submit scope of {principal.display} ({_scope(submitters)})"
        if not job.downstream:
            refusals.append((job.location, outside, "grants: submit"))
            continue
        rule = f"downstream_outside_scope: {policy.downstream_outside_scope}"
        owners = [grant.name for grant in _with(policy.grants, "approve") if _covers(grant, job.key)]
        if policy.downstream_outside_scope == "refuse":
            refusals.append((job.location, outside, rule))
        elif not owners:
            refusals.append((job.location, f"{outside}, and no grant may approve it", rule))
        else:
            approvals.append((job.location, f"{outside}; its owners must approve ({', '.join(owners)})"))
            approvers.update(dict.fromkeys(owners))
    if refusals:
        location, _, rule = refusals[0]
        return Decision(
            Verdict.REFUSED,
            tuple(f"{where}: {why}" for where, why, _ in refusals),
            rule=rule,
            location=location,
            issues=tuple(ConfigIssue(where, f"{why} (policy rule: {rule})") for where, why, rule in refusals),
        )
    if approvals:
        rule = "downstream_outside_scope: approve"
        return Decision(
            Verdict.NEEDS_APPROVAL,
            tuple(f"{where}: {why}" for where, why in approvals),
            rule=rule,
            approvers=tuple(approvers),
            issues=tuple(ConfigIssue(where, f"{why} (policy rule: {rule})") for where, why in approvals),
        )
    return ALLOWED


def needs_approval(policy: Policy | None, facts: PlanFacts) -> list[str]:
    """Why this plan needs a second person's approval under the policy's thresholds; empty: it does not."""
    if policy is None or policy.approval is None:
        return []
    limits = policy.approval
    reasons: list[str] = []
    checks = (
        ("partitions", facts.partitions, limits.max_partitions, "max_partitions"),
        ("downstream jobs", facts.downstream_jobs, limits.max_downstream_jobs, "max_downstream_jobs"),
        (
            "estimated cost (USD)",
            facts.estimated_cost_usd,
            limits.max_estimated_cost_usd,
            "max_estimated_cost_usd",
        ),
        ("estimated bytes", facts.estimated_bytes, limits.max_bytes, "max_bytes"),
    )
    for what, value, limit, rule in checks:
        if value is not None and limit is not None and value > limit:
            reasons.append(f"{what}: {value:,} is over approval.{rule} ({limit:,})")
    production = sorted(
        namespace
        for namespace in facts.namespaces
        if any(fnmatchcase(namespace, glob) for glob in limits.production_namespaces)
    )
    if production:
        reasons.append(f"production namespaces: {', '.join(production)} (approval.production_namespaces)")
    return reasons


def decide_submission(
    policy: Policy | None,
    *,
    principal: Principal | None,
    plan: Plan,
    estimated_cost_usd: float | None = None,
    estimated_bytes: int | None = None,
) -> Decision:
    """`check_submit` over every job of the plan, then the approval thresholds: refused,
    needs_approval (scope and threshold reasons together, owners named), or allowed."""
    scope = check_submit(policy, principal=principal, jobs=jobs_of_plan(plan))
    if scope.refused:
        return scope
    facts = PlanFacts.from_plan(plan, estimated_cost_usd=estimated_cost_usd, estimated_bytes=estimated_bytes)
    thresholds = needs_approval(policy, facts)
    if not thresholds:
        return scope
    issues = tuple(ConfigIssue("plan", f"{reason}: needs approval") for reason in thresholds)
    return Decision(
        Verdict.NEEDS_APPROVAL,
        scope.reasons + tuple(thresholds),
        rule=scope.rule or "approval",
        approvers=scope.approvers,
        issues=scope.issues + issues,
    )


def approval_expires_at(policy: Policy | None, requested_at: datetime) -> datetime | None:
    if policy is None or policy.approval is None:
        return None
    return requested_at + timedelta(hours=policy.approval.expires_after_hours)


def check_action(
    policy: Policy | None,
    *,
    principal: Principal,
    action: PersonAction,
    backfill: BackfillFacts,
    now: datetime | None = None,
    granted: bool = False,
) -> Decision:
    """May `principal` approve / reject / cancel / retry / publish / discard / undo this
    backfill now?

    Refused when: the backfill's state does not allow the action; the principal holds no
    grant with the permission over the backfill's jobs (or, for approvals, is not among the
    named owners); the approver is the submitter (four eyes; for publish and undo when the
    policy's `publish.four_eyes` says so); the approval has expired.
    `granted`: the grant check was already passed where more was known (the Slack
    interactivity function sees the presser's Slack user groups; the trigger re-checking its
    control document does not), so only state, four eyes and expiry are checked again."""
    now = now or datetime.now(UTC)
    if backfill.state not in ACTION_STATES[action]:
        allowed = ", ".join(sorted(ACTION_STATES[action]))
        return Decision(
            Verdict.REFUSED,
            (f"cannot {action} {backfill.backfill_id} in state {backfill.state} (only in {allowed})",),
            rule="state",
        )
    if policy is None:
        return ALLOWED
    permission = PERMISSION_FOR[action]
    grants = _with(grants_of(policy, principal), permission)
    if action in ("approve", "reject") and backfill.approvers:
        grants = [g for g in grants if g.name in backfill.approvers or "admin" in g.permissions]
        scope_note = f"the owners named for this backfill ({', '.join(backfill.approvers)})"
    else:
        grants = [g for g in grants if all(_covers(g, job) for job in backfill.jobs)]
        scope_note = f"the jobs {', '.join(backfill.jobs)}" if backfill.jobs else "any job"
    if not grants and not granted:
        return Decision(
            Verdict.REFUSED,
            (f"no grant gives {principal.display} the {permission} permission over {scope_note}",),
            rule=f"grants: {permission}",
        )
    if action == "approve" or (action in FOUR_EYES_ACTIONS and policy.publish.four_eyes):
        rule = "four_eyes" if action == "approve" else "publish.four_eyes"
        if backfill.submitter is None:
            return Decision(
                Verdict.REFUSED,
                ("the submitter is not recorded, so a second person cannot be told apart",),
                rule=rule,
            )
        if _same_person(policy, principal, backfill.submitter):
            return Decision(
                Verdict.REFUSED,
                (
                    f"{principal.display} submitted {backfill.backfill_id} "
                    f"({backfill.submitter.display}); another person must {action}",
                ),
                rule=rule,
            )
    if action == "approve":
        if backfill.approval_requested_at is not None:
            expires = approval_expires_at(policy, backfill.approval_requested_at)
            if expires is not None and now > expires:
                return Decision(
                    Verdict.REFUSED,
                    (f"the approval request expired at {expires.isoformat()}; submit the backfill again",),
                    rule="approval.expires_after_hours",
                )
    return ALLOWED


def publish_policy_for(
    policy: Policy | None, override: PublishOverride | None
) -> tuple[PublishPolicy, list[ConfigIssue]]:
    """The publish policy a backfill's Spark job applies: the deployment's (`publish.defaults`;
    PublishPolicy's defaults without a policy), with the config's `publish:` fields in its
    place. A field that would loosen the deployment's is a located issue (`publish.<field>`),
    and the deployment's policy is what is returned then."""
    deployment = policy.publish.defaults if policy is not None else PublishPolicy()
    if override is None or not override.changes():
        return deployment, []
    effective = PublishPolicy.model_validate({**deployment.model_dump(), **override.changes()})
    issues = [
        ConfigIssue(
            f"publish.{name}",
            f"{json.dumps(getattr(effective, name))} is looser than the deployment's publish policy "
            f"allows ({json.dumps(getattr(deployment, name))}); a config may only narrow it "
            "(policy rule: publish.defaults)",
        )
        for name in effective.within(deployment)
    ]
    return (deployment, issues) if issues else (effective, [])


def _same_person(policy: Policy, first: Principal, second: Principal) -> bool:
    # Names alone would not do: two people may act under one role (different sessions).
    if first.display == second.display or (
        first.slack_user is not None and first.slack_user == second.slack_user
    ):
        return True
    person = person_of(policy, first)
    return person is not None and person == person_of(policy, second)
