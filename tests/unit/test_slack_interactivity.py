"""The Slack interactivity function on moto (S3, DynamoDB tables from the template, Secrets
Manager): every refusal changes nothing; an accepted press writes exactly one control document.
Signatures are real HMACs computed here (backfill_local.slack_signing uses hmac; the function
verifies with slack_sdk)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from backfill_local.slack_signing import (
    EXAMPLE_TIMESTAMP,
    TEST_SIGNING_SECRET,
    block_actions_body,
    http_api_event,
    sign,
)
from backfill_orchestrator.identity import SlackGroupResolver
from backfill_orchestrator.interactivity import handler as interactivity_handler
from backfill_orchestrator.interactivity.blocks import control_buttons
from backfill_orchestrator.interactivity.payload import parse_interaction, request_from_http_event
from backfill_orchestrator.interactivity.verify import verify_signature
from backfill_orchestrator.interactivity.wiring import GroupsOf, InteractivityWiring
from backfill_orchestrator.settings import InteractivitySettings
from tests.support.aws import create_table
from tests.support.configs import REPO_ROOT
from tests.support.lambda_context import FakeLambdaContext
from tests.support.policy import POLICY_YAML

BUCKET = "cfg"
BACKFILL = "orders-fix-0123abcd"
NOW = datetime(2021, 6, 14, 9, 0, tzinfo=UTC)
ENV = {
    "CONFIG_BUCKET": BUCKET,
    "STATUS_TABLE": "status",
    "SLACK_SIGNING_SECRET_ID": "slack-signing",
    "SLACK_REQUESTS_TABLE": "slack-requests",
    "POLICY_URI": f"s3://{BUCKET}/policy/policy.yaml",
}


class Harness:
    """The function's wiring on moto (its tables from the template), replies kept, the clock at NOW."""

    def __init__(
        self,
        *,
        policy: str | None = POLICY_YAML,
        clock: Callable[[], datetime] = lambda: NOW,
        slack_groups_of: GroupsOf | None = None,
    ) -> None:
        self.s3 = boto3.client("s3", region_name="us-east-1")
        self.dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        secrets = boto3.client("secretsmanager", region_name="us-east-1")
        self.s3.create_bucket(Bucket=BUCKET)
        env = dict(ENV)
        if policy is None:
            del env["POLICY_URI"]
        else:
            self.s3.put_object(Bucket=BUCKET, Key="policy/policy.yaml", Body=policy.encode())
        create_table(self.dynamodb, "StatusTable", table_name="status")
        create_table(self.dynamodb, "SlackRequestsTable", table_name="slack-requests")
        secrets.create_secret(
            Name="slack-signing", SecretString=json.dumps({"signing_secret": TEST_SIGNING_SECRET})
        )
        self.counts: list[str] = []
        self.replies: list[tuple[str, dict[str, Any]]] = []
        self.wiring = InteractivityWiring(
            InteractivitySettings.from_env(env),
            s3_client=self.s3,
            dynamodb_client=self.dynamodb,
            secrets_client=secrets,
            ssm_client=None,
            respond=lambda url, body: self.replies.append((url, body)),
            clock=clock,
            slack_groups_of=slack_groups_of,
        )
        self.service = self.wiring.service(count=self.counts.append)
        self.record()

    def record(
        self, *, state: str = "AWAITING_APPROVAL", requested_at: datetime = NOW - timedelta(hours=1)
    ) -> None:
        self.dynamodb.put_item(
            TableName="status",
            Item={
                "backfill_id": {"S": BACKFILL},
                "state": {"S": state},
                "submitted_by": {"S": "role/data-eng/jane.doe@example.com"},
                "approval_requested_at": {"S": requested_at.isoformat()},
                "root_jobs": {"L": [{"S": "food_delivery/etl_orders"}]},
            },
        )

    def press(
        self,
        *,
        action: str = "approve",
        user: str = "U0BOB",
        secret: str = TEST_SIGNING_SECRET,
        at: datetime = NOW,
        body: str | None = None,
    ) -> dict[str, Any]:
        body = body or block_actions_body(
            action=action, backfill_id=BACKFILL, user_id=user, user_name=user.lower()
        )
        event = http_api_event(body, secret=secret, timestamp=int(at.timestamp()))
        return self.service.handle(request_from_http_event(event))

    def control_documents(self) -> list[dict[str, Any]]:
        listed = self.s3.list_objects_v2(Bucket=BUCKET, Prefix="control/").get("Contents", [])
        return [
            {
                "key": item["Key"],
                **json.loads(self.s3.get_object(Bucket=BUCKET, Key=item["Key"])["Body"].read()),
            }
            for item in listed
        ]


@pytest.fixture
def harness(mocked_aws: None) -> Harness:
    return Harness()


def test_an_approval_by_an_allowed_approver_writes_one_control_document(harness: Harness) -> None:
    response = harness.press()

    assert response["statusCode"] == 200
    (document,) = harness.control_documents()
    assert document["key"] == f"control/{BACKFILL}/approve-20210614T090000.000000Z.json"
    assert {
        k: document[k] for k in ("control_version", "action", "backfill_id", "requested_by", "requested_at")
    } == {
        "control_version": 1,
        "action": "approve",
        "backfill_id": BACKFILL,
        "requested_by": "slack:U0BOB",
        "requested_at": "2021-06-14T09:00:00+00:00",
    }
    assert "u0bob" in document["reason"] and "U0BOB" in document["reason"]
    assert harness.counts == ["SlackControlWritten"]
    ((url, reply),) = harness.replies  # the thread message: buttons replaced by who did what
    assert url.startswith("https://hooks.slack.com/") and reply["replace_original"] is True
    assert reply["blocks"][-1]["elements"][0]["text"].startswith(
        "Approved by <@U0BOB> at 2021-06-14 09:00:00 UTC"
    )
    assert not any(block["type"] == "actions" for block in reply["blocks"])


@pytest.mark.parametrize(
    ("press", "status", "metric", "told"),
    [
        ({"secret": "not-the-signing-secret"}, 401, "SlackBadSignature", False),
        ({"at": NOW - timedelta(minutes=5, seconds=1)}, 401, "SlackStaleRequest", False),
        ({"user": "U0STRANGER"}, 200, "SlackUnknownUser", True),
        ({"user": "U0VIEW"}, 200, "SlackNotPermitted", True),  # viewers may cancel marketing jobs only
        ({"user": "U0JANE"}, 200, "SlackSelfApproval", True),  # Jane submitted it through her role
        ({"action": "retry"}, 200, "SlackActionNotAllowed", True),  # retry needs FAILED
    ],
    ids=["bad-signature", "stale", "unknown-user", "no-permission", "self-approval", "wrong-state"],
)
def test_each_refusal_changes_nothing_and_is_counted(harness: Harness, press, status, metric, told) -> None:  # noqa: ANN001
    response = harness.press(**press)

    assert response["statusCode"] == status
    assert harness.control_documents() == []
    assert harness.counts == [metric]
    if told:  # proven to come from Slack: the presser is told why, only them
        ((_, reply),) = harness.replies
        assert reply["response_type"] == "ephemeral" and reply["text"].startswith("Refused: ")
    else:
        assert harness.replies == []


def test_a_replayed_request_is_refused(harness: Harness) -> None:
    body = block_actions_body(action="approve", backfill_id=BACKFILL, user_id="U0BOB")
    event = http_api_event(body, timestamp=int(NOW.timestamp()))
    first = harness.service.handle(request_from_http_event(event))
    again = harness.service.handle(request_from_http_event(event))

    assert (first["statusCode"], again["statusCode"]) == (200, 409)
    assert len(harness.control_documents()) == 1
    assert harness.counts == ["SlackControlWritten", "SlackReplayedRequest"]


def test_an_expired_approval_is_refused(harness: Harness) -> None:
    harness.record(requested_at=NOW - timedelta(hours=25))
    assert harness.press()["statusCode"] == 200
    assert harness.control_documents() == [] and harness.counts == ["SlackApprovalExpired"]
    assert "expired" in harness.replies[0][1]["text"]


def test_a_rejection_and_a_tampered_body(harness: Harness) -> None:
    assert harness.press(action="reject")["statusCode"] == 200
    assert [doc["action"] for doc in harness.control_documents()] == ["reject"]
    # A signature over one body does not carry over to another (user swapped after signing).
    good = block_actions_body(action="approve", backfill_id=BACKFILL, user_id="U0BOB")
    event = http_api_event(good, timestamp=int(NOW.timestamp()))
    event["body"] = good.replace("U0BOB", "U0ANA")
    assert harness.service.handle(request_from_http_event(event))["statusCode"] == 401
    assert harness.counts[-1] == "SlackBadSignature" and len(harness.control_documents()) == 1


def test_without_a_policy_no_slack_user_may_act(mocked_aws: None) -> None:
    harness = Harness(policy=None)
    assert harness.press()["statusCode"] == 200
    assert harness.control_documents() == [] and harness.counts == ["SlackUnknownUser"]


def test_buttons_we_post_are_the_buttons_we_accept() -> None:
    block = control_buttons(BACKFILL, ["approve", "reject", "cancel", "retry"])
    for element in block["elements"]:
        payload = {"type": "block_actions", "user": {"id": "U1"}, "actions": [element]}
        body = "payload=" + json.dumps(payload)
        interaction = parse_interaction(body)
        assert (interaction.backfill_id, f"backfill_{interaction.action}") == (BACKFILL, element["action_id"])


def test_the_committed_example_event_is_signed_and_accepted(
    mocked_aws: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    event = json.loads((REPO_ROOT / "events" / "slack-interaction-approve.json").read_text())
    request = request_from_http_event(event)
    assert request.headers["x-slack-signature"] == sign(
        request.body, secret=TEST_SIGNING_SECRET, timestamp=EXAMPLE_TIMESTAMP
    )
    verify_signature(
        signing_secret=TEST_SIGNING_SECRET, body=request.body, headers=request.headers, now=EXAMPLE_TIMESTAMP
    )

    # Through the Lambda handler, as `sam local invoke` would, at the moment it was signed.
    harness = Harness(clock=lambda: datetime.fromtimestamp(EXAMPLE_TIMESTAMP, UTC))
    harness.dynamodb.put_item(
        TableName="status",
        Item={
            "backfill_id": {"S": "orders-outage-june-81a4673a"},
            "state": {"S": "AWAITING_APPROVAL"},
            "submitted_by": {"S": "role/data-eng/jane.doe@example.com"},
            "approval_requested_at": {"S": "2021-06-14T08:00:00+00:00"},
            "root_jobs": {"L": [{"S": "food_delivery/etl_orders"}]},
        },
    )
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "Test")
    context = FakeLambdaContext(function_name="backfill-slack-interactivity-test", request_id="request-1")
    with interactivity_handler.interactivity_wiring(harness.wiring):
        response = interactivity_handler.handler(event, context)
    assert response["statusCode"] == 200, response
    (document,) = harness.control_documents()
    assert (
        document["backfill_id"] == "orders-outage-june-81a4673a" and document["requested_by"] == "slack:U0BOB"
    )
    assert harness.replies and harness.replies[0][1]["replace_original"] is True


class FakeSlackGroups:
    """usergroups.users.list as slack_sdk's WebClient answers it (a dict-like response)."""

    def __init__(self, members: dict[str, list[str]]):
        self.members = members
        self.calls: list[str] = []

    def usergroups_users_list(self, *, usergroup: str) -> dict[str, Any]:
        self.calls.append(usergroup)
        if usergroup not in self.members:
            raise RuntimeError("no_such_subteam")
        return {"ok": True, "users": self.members[usergroup]}


def test_slack_user_groups_grant_actions_to_their_members(mocked_aws: None) -> None:
    policy = POLICY_YAML.replace(
        "downstream_outside_scope:",
        """  - name: on-call
    slack_groups: [S0ONCALL, S0GONE]
    permissions: [cancel]
    jobs: ["food_delivery/*"]
downstream_outside_scope:""",
    )
    slack = FakeSlackGroups({"S0ONCALL": ["U0ONCALL"]})
    harness = Harness(policy=policy, slack_groups_of=SlackGroupResolver(client=slack).groups_of)
    harness.record(state="RUNNING")

    assert harness.press(action="cancel", user="U0ONCALL")["statusCode"] == 200
    assert harness.press(action="cancel", user="U0NOTON")["statusCode"] == 200
    assert [doc["requested_by"] for doc in harness.control_documents()] == ["slack:U0ONCALL"]
    assert harness.counts == ["SlackControlWritten", "SlackUnknownUser"]
    # Members are cached; a group Slack cannot list contains nobody (asked again next time).
    assert slack.calls.count("S0ONCALL") == 1 and slack.calls.count("S0GONE") == 2


def test_a_broken_status_record_or_a_failing_service_writes_nothing(harness: Harness) -> None:
    harness.dynamodb.update_item(
        TableName="status",
        Key={"backfill_id": {"S": BACKFILL}},
        UpdateExpression="SET approval_requested_at = :v",
        ExpressionAttributeValues={":v": {"S": "yesterday"}},
    )
    assert harness.press()["statusCode"] == 503
    assert harness.control_documents() == [] and harness.counts == ["SlackServiceFailures"]
    assert "nothing changed" in harness.replies[0][1]["text"]
