"""The deployment policy: document validation (located errors), its JSON Schema, where it is
read from (S3, SSM; TTL cache), and every decision it makes."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta

import boto3
import pytest

from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.identity import Principal, principal_from_id, slack_principal
from backfill_orchestrator.policy import (
    BackfillFacts,
    InvalidPolicyError,
    PlanFacts,
    PolicyDeniedError,
    PolicySource,
    PolicyUnavailableError,
    SubmittedJob,
    check_action,
    check_submit,
    jobs_of_plan,
    needs_approval,
    parse_policy,
)
from backfill_orchestrator.policy.schema import render
from tests.support.configs import REPO_ROOT
from tests.support.policy import POLICY_YAML

NOW = datetime(2021, 6, 14, 9, 0, tzinfo=UTC)
JANE = principal_from_id("AWS:AROAJANE:jane.doe@example.com")  # unresolved: matches no grant
JANE_ROLE = Principal(
    name="role/data-eng", session="jane.doe@example.com", principal_id="AWS:AROAJANE:jane.doe@example.com"
)
BOB_ROLE = Principal(name="role/data-eng", session="bob@example.com")


@pytest.fixture
def policy():
    return parse_policy(POLICY_YAML, source="policy.yaml")


def _jobs(*keys: str, downstream: tuple[str, ...] = ()) -> list[SubmittedJob]:
    roots = [SubmittedJob(*key.split("/"), location=f"jobs[{i}]") for i, key in enumerate(keys)]
    return roots + [
        SubmittedJob(*key.split("/"), location=f"downstream {key}", downstream=True) for key in downstream
    ]


# -- the document ----------------------------------------------------------------------------
def test_every_problem_of_a_policy_is_located_at_once() -> None:
    text = """\
version: 1
people:
  jane: {slack_user: jane}
grants:
  - name: a
    members: [nobody]
    permissions: [submit, deploy]
    jobs: ["no-slash"]
  - name: a
    permissions: [approve]
aproval: {}
"""
    with pytest.raises(InvalidPolicyError) as caught:
        parse_policy(text, source="policy.yaml")
    found = {(issue.location, issue.message.split(" (")[0].split(",")[0]) for issue in caught.value.issues}
    assert ("people.jane.slack_user", "must be a Slack user id such as U0123ABCD") in found
    assert any(location == "grants[0].permissions[1]" for location, _ in found)
    assert any(location == "grants[0].jobs[0]" for location, _ in found)
    assert ("aproval", "unknown key; did you mean 'approval'?") in found
    assert str(caught.value).startswith("policy.yaml: ")


def test_cross_field_rules_are_located() -> None:
    text = (
        "version: 1\npeople: {a: {slack_user: U1A}, b: {slack_user: U1A}}\ngrants:\n"
        "  - {name: g, members: [a, zed], permissions: [submit]}\n  - {name: g, permissions: [approve]}\n"
    )
    with pytest.raises(InvalidPolicyError) as caught:
        parse_policy(text)
    messages = {issue.location: issue.message for issue in caught.value.issues}
    assert messages["grants[0].members[1]"].startswith("unknown person 'zed'")
    assert messages["grants[1].name"] == "duplicate of grants[0].name"
    assert messages["people.b.slack_user"] == "U1A is already people.a"


def test_unsafe_yaml_is_refused_like_a_config() -> None:
    with pytest.raises(InvalidPolicyError, match="duplicate key 'version'"):
        parse_policy("version: 1\nversion: 1\n")
    with pytest.raises(InvalidPolicyError, match="anchors are not allowed"):
        parse_policy("version: 1\ngrants: &g []\n")
    with pytest.raises(InvalidPolicyError, match="version"):
        parse_policy("version: 2\n")


def test_committed_json_schema_is_current() -> None:
    committed = (REPO_ROOT / "docs" / "schemas" / "policy.schema.json").read_text()
    assert committed == render(), (
        "stale: python -m backfill_orchestrator.policy.schema > docs/schemas/policy.schema.json"
    )
    schema = json.loads(committed)
    assert schema["additionalProperties"] is False and schema["required"] == ["version"]


# -- where it comes from ---------------------------------------------------------------------
def test_policy_is_read_from_s3_and_cached_for_its_ttl(mocked_aws: None) -> None:
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="cfg")
    s3.put_object(Bucket="cfg", Key="policy/policy.yaml", Body=POLICY_YAML.encode())
    now = [0.0]
    source = PolicySource("s3://cfg/policy/policy.yaml", ttl_seconds=60, s3_client=s3, clock=lambda: now[0])
    assert [grant.name for grant in source.get().grants][:1] == ["data-eng"]

    s3.put_object(Bucket="cfg", Key="policy/policy.yaml", Body=b"version: 1\n")
    now[0] = 59
    assert len(source.get().grants) == 3  # still cached
    now[0] = 61
    assert source.get().grants == []  # re-read after the TTL

    s3.put_object(Bucket="cfg", Key="policy/policy.yaml", Body=b"version: 1\nbogus: 1\n")
    now[0] = 200
    with pytest.raises(InvalidPolicyError, match="bogus: unknown key"):
        source.get()  # fails closed: a broken policy never falls back to "allow"


def test_policy_from_ssm_and_missing_documents(mocked_aws: None) -> None:
    ssm = boto3.client("ssm", region_name="us-east-1")
    ssm.put_parameter(Name="/backfill/policy", Value=POLICY_YAML, Type="SecureString")
    assert len(PolicySource("ssm:/backfill/policy", ssm_client=ssm).get().people) == 3
    with pytest.raises(PolicyUnavailableError, match="/backfill/nope"):
        PolicySource("ssm:/backfill/nope", ssm_client=ssm).get()
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="cfg")
    with pytest.raises(PolicyUnavailableError, match="s3://cfg/none.yaml"):
        PolicySource("s3://cfg/none.yaml", s3_client=s3).get()
    assert PolicySource(None).get() is None and PolicySource("").get() is None


# -- submit ----------------------------------------------------------------------------------
def test_no_policy_allows_everything_and_needs_no_approval() -> None:
    assert check_submit(None, principal=None, jobs=_jobs("anything/x")).outcome == "allowed"
    assert (
        needs_approval(
            None, PlanFacts(partitions=10**9, downstream_jobs=999, namespaces=frozenset({"x_prod"}))
        )
        == []
    )


def test_submit_within_scope_is_allowed(policy) -> None:
    decision = check_submit(
        policy,
        principal=JANE_ROLE,
        jobs=_jobs("food_delivery/etl_orders", downstream=("food_delivery/etl_7d",)),
    )
    assert decision.outcome == "allowed" and not decision.refused


def test_root_outside_scope_is_refused_at_its_location(policy) -> None:
    decision = check_submit(
        policy, principal=JANE_ROLE, jobs=_jobs("food_delivery/etl_orders", "marketing/emails")
    )
    assert (
        decision.outcome == "refused" and decision.location == "jobs[1]" and decision.rule == "grants: submit"
    )
    assert decision.reasons[0].startswith(
        "jobs[1]: marketing/emails is outside the submit scope of "
        "role/data-eng/jane.doe@example.com (data-eng covers food_delivery/*)"
    )
    with pytest.raises(PolicyDeniedError) as caught:
        decision.raise_if_refused()
    assert caught.value.rule == "grants: submit" and caught.value.location == "jobs[1]"


def test_downstream_outside_scope_needs_its_owners_approval(policy) -> None:
    decision = check_submit(
        policy, principal=JANE_ROLE, jobs=_jobs("food_delivery/etl_orders", downstream=("analytics/revenue",))
    )
    assert decision.outcome == "needs_approval" and decision.approvers == ("analytics-owners",)
    assert decision.reasons[0].startswith(
        "downstream analytics/revenue: analytics/revenue is outside the submit scope"
    )
    assert decision.rule == "downstream_outside_scope: approve"


def test_downstream_outside_scope_is_refused_when_the_policy_says_so(policy) -> None:
    strict = policy.model_copy(update={"downstream_outside_scope": "refuse"})
    decision = check_submit(
        strict, principal=JANE_ROLE, jobs=_jobs("food_delivery/etl_orders", downstream=("analytics/revenue",))
    )
    assert decision.refused and decision.location == "downstream analytics/revenue"
    assert decision.rule == "downstream_outside_scope: refuse"


def test_downstream_nobody_may_approve_is_refused(policy) -> None:
    decision = check_submit(
        policy, principal=JANE_ROLE, jobs=_jobs("food_delivery/etl_orders", downstream=("finance/ledger",))
    )
    assert decision.refused and "no grant may approve it" in decision.reasons[0]


def test_unknown_or_unresolved_principals_are_refused(policy) -> None:
    assert check_submit(policy, principal=None, jobs=_jobs("food_delivery/a")).rule == "grants"
    decision = check_submit(policy, principal=JANE, jobs=_jobs("food_delivery/a"))
    assert decision.refused and decision.reasons == (
        "no grant gives AROAJANE/jane.doe@example.com the submit permission",
    )


def _plan() -> Plan:
    step = {"dag_id": "d", "kind": "airflow_dag", "hours": None, "feeds": None, "upstream": []}
    return Plan.model_validate(
        {
            "backfill_id": "fix-0123abcd",
            "name": "fix",
            "owner": "a@b.co",
            "created_at": NOW,
            "roots": [{"namespace": "food_delivery", "name": "etl_orders"}],
            "dates": [date(2021, 6, 4)],
            "waves": [
                {
                    "index": 0,
                    "steps": [
                        {
                            **step,
                            "id": "etl_orders",
                            "job": {"namespace": "food_delivery", "name": "etl_orders"},
                            "dates": [date(2021, 6, 4)],
                            "reason": "root",
                        }
                    ],
                },
                {
                    "index": 1,
                    "steps": [
                        {
                            **step,
                            "id": "revenue",
                            "job": {"namespace": "analytics_prod", "name": "revenue"},
                            "dates": [date(2021, 6, 4), date(2021, 6, 5)],
                            "hours": [0, 1],
                            "reason": "downstream",
                            "upstream": ["etl_orders"],
                        }
                    ],
                },
            ],
        }
    )


def test_jobs_and_facts_of_a_plan() -> None:
    plan = _plan()
    assert [(job.key, job.location, job.downstream) for job in jobs_of_plan(plan)] == [
        ("food_delivery/etl_orders", "jobs[0]", False),
        ("analytics_prod/revenue", "downstream analytics_prod/revenue", True),
    ]
    facts = PlanFacts.from_plan(plan, estimated_cost_usd=12.5)
    # planner/partitions.py: without a catalog, a partition per date (and selected feed) of each step
    assert facts.partitions == 1 + 2 and facts.downstream_jobs == 1
    assert facts.namespaces == {"food_delivery", "analytics_prod"} and facts.estimated_cost_usd == 12.5


def test_each_threshold_asks_for_approval(policy) -> None:
    under = PlanFacts(
        partitions=100,
        downstream_jobs=3,
        namespaces=frozenset({"food_delivery"}),
        estimated_cost_usd=50,
        estimated_bytes=1000,
    )
    assert needs_approval(policy, under) == []
    over = PlanFacts(
        partitions=101,
        downstream_jobs=4,
        namespaces=frozenset({"food_delivery", "orders_prod"}),
        estimated_cost_usd=50.5,
        estimated_bytes=1001,
    )
    reasons = needs_approval(policy, over)
    assert reasons == [
        "partitions: 101 is over approval.max_partitions (100)",
        "downstream jobs: 4 is over approval.max_downstream_jobs (3)",
        "estimated cost (USD): 50.5 is over approval.max_estimated_cost_usd (50.0)",
        "estimated bytes: 1,001 is over approval.max_bytes (1,000)",
        "production namespaces: orders_prod (approval.production_namespaces)",
    ]


# -- actions ---------------------------------------------------------------------------------
def _awaiting(**overrides) -> BackfillFacts:
    fields = {
        "backfill_id": "fix-0123abcd",
        "state": "AWAITING_APPROVAL",
        "submitter": JANE_ROLE,
        "jobs": ("food_delivery/etl_orders",),
        "approval_requested_at": NOW - timedelta(hours=1),
    }
    return BackfillFacts(**{**fields, **overrides})


def test_approval_by_another_allowed_approver(policy) -> None:
    assert (
        check_action(
            policy, principal=slack_principal("U0BOB"), action="approve", backfill=_awaiting(), now=NOW
        ).outcome
        == "allowed"
    )
    assert (
        check_action(policy, principal=BOB_ROLE, action="approve", backfill=_awaiting(), now=NOW).outcome
        == "allowed"
    )


def test_self_approval_is_refused_across_identities(policy) -> None:
    # Jane submitted through her role session; she presses Approve in Slack.
    decision = check_action(
        policy, principal=slack_principal("U0JANE"), action="approve", backfill=_awaiting(), now=NOW
    )
    assert decision.refused and decision.rule == "four_eyes"
    same_session = check_action(policy, principal=JANE_ROLE, action="approve", backfill=_awaiting(), now=NOW)
    assert same_session.refused and same_session.rule == "four_eyes"
    unknown = check_action(
        policy,
        principal=slack_principal("U0BOB"),
        action="approve",
        backfill=_awaiting(submitter=None),
        now=NOW,
    )
    assert unknown.refused and unknown.rule == "four_eyes"


def test_expired_approval_is_refused_but_rejection_still_works(policy) -> None:
    old = _awaiting(approval_requested_at=NOW - timedelta(hours=24, seconds=1))
    decision = check_action(
        policy, principal=slack_principal("U0BOB"), action="approve", backfill=old, now=NOW
    )
    assert decision.refused and decision.rule == "approval.expires_after_hours"
    assert "expired at 2021-06-14T08:59:59+00:00" in decision.reasons[0]
    assert (
        check_action(
            policy, principal=slack_principal("U0BOB"), action="reject", backfill=old, now=NOW
        ).outcome
        == "allowed"
    )


def test_approval_of_out_of_scope_downstream_needs_its_owners(policy) -> None:
    facts = _awaiting(approvers=("analytics-owners",))
    assert (
        check_action(
            policy, principal=slack_principal("U0BOB"), action="approve", backfill=facts, now=NOW
        ).rule
        == "grants: approve"
    )
    assert (
        check_action(
            policy, principal=slack_principal("U0ANA"), action="approve", backfill=facts, now=NOW
        ).outcome
        == "allowed"
    )


def test_actions_need_a_permission_over_the_jobs_and_the_right_state(policy) -> None:
    viewer = slack_principal("U0VIEW")
    assert (
        check_action(policy, principal=viewer, action="cancel", backfill=_awaiting(), now=NOW).rule
        == "grants: cancel"
    )
    running = _awaiting(state="RUNNING")
    assert (
        check_action(
            policy, principal=slack_principal("U0BOB"), action="cancel", backfill=running, now=NOW
        ).outcome
        == "allowed"
    )
    refused = check_action(
        policy, principal=slack_principal("U0BOB"), action="approve", backfill=running, now=NOW
    )
    assert refused.rule == "state" and "in state RUNNING (only in AWAITING_APPROVAL)" in refused.reasons[0]
    assert (
        check_action(
            policy, principal=slack_principal("U0BOB"), action="retry", backfill=running, now=NOW
        ).rule
        == "state"
    )
    assert (
        check_action(
            policy,
            principal=slack_principal("U0BOB"),
            action="retry",
            backfill=_awaiting(state="FAILED"),
            now=NOW,
        ).outcome
        == "allowed"
    )
    # No policy: the state machine still applies, nothing else does.
    assert check_action(None, principal=viewer, action="retry", backfill=running, now=NOW).rule == "state"
    assert (
        check_action(None, principal=viewer, action="cancel", backfill=running, now=NOW).outcome == "allowed"
    )


def test_documented_policies_are_valid() -> None:
    example = parse_policy(
        (REPO_ROOT / "examples" / "policies" / "data-platform.yaml").read_bytes(),
        source="examples/policies/data-platform.yaml",
    )
    assert [grant.name for grant in example.grants] == ["data-eng", "analytics-owners", "platform-admins"]
    docs = (REPO_ROOT / "docs" / "policy.md").read_text()
    snippet = docs.split("## The policy document", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    assert parse_policy(snippet, source="docs/policy.md").approval.max_partitions == 2000


def test_a_submission_combines_scope_and_thresholds(policy) -> None:
    from backfill_orchestrator.policy import decide_submission

    plan = _plan()  # a downstream job in analytics_prod: outside data-eng's scope, and production
    decision = decide_submission(policy, principal=JANE_ROLE, plan=plan)  # nobody owns analytics_prod
    assert decision.refused and decision.location == "downstream analytics_prod/revenue"
    assert decision.issues[0].message.endswith(
        "and no grant may approve it (policy rule: downstream_outside_scope: approve)"
    )
    owned = policy.model_copy(
        update={
            "grants": [
                *policy.grants,
                policy.grants[1].model_copy(update={"name": "prod-owners", "jobs": ["analytics_prod/*"]}),
            ]
        }
    )
    decision = decide_submission(owned, principal=JANE_ROLE, plan=plan)
    assert decision.outcome == "needs_approval" and decision.approvers == ("prod-owners",)
    assert [issue.location for issue in decision.issues] == ["downstream analytics_prod/revenue", "plan"]
    assert (
        decision.issues[1].message
        == "production namespaces: analytics_prod (approval.production_namespaces): needs approval"
    )
    refused = decide_submission(policy, principal=None, plan=plan)
    assert refused.refused and refused.issues[0].location == "<root>"
    assert decide_submission(None, principal=None, plan=plan).outcome == "allowed"


def test_a_delegates_grant_check_stands_but_state_four_eyes_and_expiry_are_checked_again(policy) -> None:
    """`granted`: the Slack function checked the presser's grants (it sees Slack user groups);
    the trigger re-checks the rest of the decision when the control document arrives."""
    stranger = slack_principal("U0STRANGER")
    assert (
        check_action(policy, principal=stranger, action="approve", backfill=_awaiting(), now=NOW).rule
        == "grants: approve"
    )
    assert (
        check_action(
            policy, principal=stranger, action="approve", backfill=_awaiting(), now=NOW, granted=True
        ).outcome
        == "allowed"
    )
    jane = slack_principal("U0JANE")
    assert (
        check_action(
            policy, principal=jane, action="approve", backfill=_awaiting(), now=NOW, granted=True
        ).rule
        == "four_eyes"
    )
    late = NOW + timedelta(hours=25)
    assert (
        check_action(
            policy, principal=stranger, action="approve", backfill=_awaiting(), now=late, granted=True
        ).rule
        == "approval.expires_after_hours"
    )
    assert (
        check_action(
            policy,
            principal=stranger,
            action="approve",
            backfill=_awaiting(state="TRIGGERED"),
            now=NOW,
            granted=True,
        ).rule
        == "state"
    )


def test_cancel_and_retry_follow_the_lifecycles_states(policy) -> None:
    bob = slack_principal("U0BOB")
    assert (
        check_action(
            policy, principal=bob, action="cancel", backfill=_awaiting(state="QUEUED"), now=NOW
        ).outcome
        == "allowed"
    )
    assert (
        check_action(
            policy, principal=bob, action="retry", backfill=_awaiting(state="CANCELLED"), now=NOW
        ).outcome
        == "allowed"
    )
    assert (
        check_action(
            policy, principal=bob, action="cancel", backfill=_awaiting(state="SUCCEEDED"), now=NOW
        ).rule
        == "state"
    )


# -- safe publish: who may publish and undo, four eyes, the publish policy --------------------
PUBLISHING = (
    POLICY_YAML.replace(
        "permissions: [submit, approve, cancel, retry]",
        "permissions: [submit, approve, cancel, retry, publish, undo]",
        1,
    )
    + "publish:\n  four_eyes: true\n  defaults: {max_rows_removed_percent: 10, allow_emptied_partitions: false}\n"
)


def _held(state: str = "AWAITING_PUBLISH") -> BackfillFacts:
    return BackfillFacts(
        backfill_id="fix-orders-0123abcd",
        state=state,
        submitter=JANE_ROLE,
        jobs=("food_delivery/etl_orders",),
    )


def test_publish_and_undo_need_their_grant_and_another_person_when_the_policy_says_four_eyes() -> None:
    policy = parse_policy(PUBLISHING, source="policy.yaml")
    bob = slack_principal("U0BOB")
    assert (
        check_action(policy, principal=bob, action="publish", backfill=_held(), now=NOW).outcome == "allowed"
    )
    assert (
        check_action(policy, principal=bob, action="discard", backfill=_held(), now=NOW).outcome == "allowed"
    )
    own = check_action(
        policy, principal=slack_principal("U0JANE"), action="publish", backfill=_held(), now=NOW
    )
    assert own.refused and own.rule == "publish.four_eyes" and "another person must publish" in own.reasons[0]
    # Discarding her own held backfill is allowed: it changes nothing live.
    assert not check_action(
        policy, principal=slack_principal("U0JANE"), action="discard", backfill=_held(), now=NOW
    ).refused
    assert (
        check_action(policy, principal=bob, action="undo", backfill=_held("SUCCEEDED"), now=NOW).outcome
        == "allowed"
    )
    wrong = check_action(policy, principal=bob, action="undo", backfill=_held(), now=NOW)
    assert wrong.refused and wrong.rule == "state"
    viewer = check_action(
        policy, principal=slack_principal("U0ANA"), action="publish", backfill=_held(), now=NOW
    )
    assert viewer.refused and viewer.rule == "grants: publish"
    # The policy as it was (no publish grant, no four eyes): nobody but admins may publish.
    old = parse_policy(POLICY_YAML, source="policy.yaml")
    assert check_action(old, principal=bob, action="publish", backfill=_held(), now=NOW).refused


def test_a_configs_publish_override_may_only_narrow_the_deployments() -> None:
    from backfill_orchestrator.config.model import PublishOverride
    from backfill_orchestrator.contracts.publish import PublishPolicy
    from backfill_orchestrator.policy import publish_policy_for

    policy = parse_policy(PUBLISHING, source="policy.yaml")
    assert policy.publish.defaults == PublishPolicy(
        max_rows_removed_percent=10, allow_emptied_partitions=False
    )
    narrower, issues = publish_policy_for(
        policy, PublishOverride(max_rows_removed_percent=5, auto_publish=False)
    )
    assert issues == [] and (narrower.max_rows_removed_percent, narrower.auto_publish) == (5, False)
    assert narrower.allow_emptied_partitions is False  # the deployment's, where the config says nothing
    kept, issues = publish_policy_for(
        policy, PublishOverride(max_rows_removed_percent=20, require_rules=False)
    )
    assert kept == policy.publish.defaults
    assert [issue.location for issue in issues] == [
        "publish.require_rules",
        "publish.max_rows_removed_percent",
    ]
    assert "20.0 is looser than the deployment's publish policy allows (10.0)" in issues[1].message
    assert publish_policy_for(None, None) == (PublishPolicy(), [])
    # The override has PublishPolicy's fields, one for one.
    assert set(PublishOverride.model_fields) == set(PublishPolicy.model_fields) - {"policy_version"}


def test_a_policys_publish_section_is_located_when_wrong() -> None:
    with pytest.raises(InvalidPolicyError) as caught:
        parse_policy("version: 1\npublish: {four_eyes: 3, defaults: {max_rows_removed_percent: 150}}\n")
    locations = {issue.location for issue in caught.value.issues}
    assert "publish.defaults.max_rows_removed_percent" in locations and "publish.four_eyes" in locations
