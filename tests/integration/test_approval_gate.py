"""The approval gate in the trigger (docs/policy.md), on moto (S3, DynamoDB, IAM, Secrets
Manager), the Marquez double, the Airflow double and the Slack receiver: uploads attributed to
their principal (IAM names resolved through moto), refused / awaiting approval after planning,
approve / reject / cancel control documents checked by the policy, and the whole path from an
over-threshold upload through a Slack button press signed with a real HMAC to the DAG run."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlencode

import boto3
import pytest

from backfill_local.slack_signing import block_actions_body, http_api_event
from backfill_orchestrator.interactivity import handler as interactivity_handler
from backfill_orchestrator.status import BackfillState
from backfill_orchestrator.trigger import TriggerFailedError
from backfill_orchestrator.trigger.wiring import TriggerWiring
from tests.support.aws import create_table
from tests.support.lambda_context import FakeLambdaContext
from tests.support.trigger import TABLE, VALID, TriggerHarness, fast_session, s3_event

CLAIMS = "backfill-claims-test"
POLICY_KEY = "policy/policy.yaml"
SIGNING_SECRET = "approval-gate-test-signing-secret-0123"  # noqa: S105 - a test value
SLACK_ROLE = "backfill-slack-interactivity-test"

PEOPLE = """\
version: 1
people:
  jane: {slack_user: U0JANE, aws: ["role/data-eng/jane.doe@example.com"]}
  bob: {slack_user: U0BOB, aws: ["role/data-eng/bob@example.com"]}
  mo: {slack_user: U0MO, aws: ["role/marketing/mo@example.com"]}
"""
# Jane and Bob own the ETL jobs; the email and reporting DAGs downstream belong to marketing.
SCOPED = (
    PEOPLE
    + """\
grants:
  - name: orders-team
    members: [jane, bob]
    permissions: [submit, approve, cancel, retry]
    jobs: ["food_delivery/etl_*", "food_delivery/delivery_*"]
  - name: marketing-owners
    members: [mo]
    permissions: [approve, cancel]
    jobs: ["food_delivery/email_discounts", "food_delivery/orders_popular_*"]
downstream_outside_scope: MODE
"""
)
# Everything in scope, but the plan's partitions are over the threshold.
THRESHOLD = (
    PEOPLE
    + """\
grants:
  - name: orders-team
    members: [jane, bob]
    permissions: [submit, approve, cancel, retry]
    jobs: ["food_delivery/*"]
  - name: marketing-owners
    members: [mo]
    permissions: [approve]
    jobs: ["marketing/*"]
approval:
  max_partitions: 100
  expires_after_hours: 24
"""
)


class Gate:
    """The trigger harness with a policy in S3, a claims table, IAM roles in moto (so unique
    ids resolve to role names) and the Slack interactivity function's role as the delegate."""

    def __init__(self, stack: ExitStack, *, policy: str | None):
        iam = boto3.client("iam", region_name="us-east-1")
        trust = json.dumps({"Version": "2012-10-17", "Statement": []})
        self.role_ids = {
            name: iam.create_role(RoleName=name, AssumeRolePolicyDocument=trust)["Role"]["RoleId"]
            for name in ("data-eng", "marketing", SLACK_ROLE)
        }
        create_table(boto3.client("dynamodb", region_name="us-east-1"), "ClaimsTable", table_name=CLAIMS)
        env = {"CLAIMS_TABLE": CLAIMS, "CONTROL_DELEGATES": f"role/{SLACK_ROLE}/*"}
        if policy is not None:
            env["POLICY_URI"] = f"s3://backfill-configs-test/{POLICY_KEY}"
        self.h = TriggerHarness(stack, env=env)
        self.h.airflow.dag_ids |= {"email_discounts", "orders_popular_day_of_week"}
        if policy is not None:
            self.h.s3.put_object(Bucket=self.h.bucket, Key=POLICY_KEY, Body=policy.encode())
        self.h.wiring = TriggerWiring(
            self.h.settings,
            s3_client=self.h.s3,
            dynamodb_client=self.h.dynamodb,
            secrets_client=self.h.secrets,
            session_factory=fast_session,
            iam_client_factory=lambda: iam,
        )

    def principal_id(self, role: str, session: str) -> str:
        return f"AWS:{self.role_ids[role]}:{session}"

    def upload(
        self,
        body: bytes = VALID,
        *,
        key: str = "incoming/minimal-batch.yaml",
        by: tuple[str, str] = ("data-eng", "jane.doe@example.com"),
    ) -> dict[str, Any]:
        event = self.h.upload(body, key=key)
        event["Records"][0]["userIdentity"]["principalId"] = self.principal_id(*by)
        return event

    def submit(self, **kwargs: Any):  # noqa: ANN201 - UploadResult
        (result,) = self.h.invoke(self.upload(**kwargs))
        return result

    def control(
        self,
        backfill_id: str,
        action: str,
        *,
        by: tuple[str, str],
        requested_by: str = "@someone",
        reason: str = "looked at the plan",
    ) -> tuple[Any, str, dict[str, Any]]:
        document = {
            "control_version": 1,
            "action": action,
            "backfill_id": backfill_id,
            "reason": reason,
            "requested_by": requested_by,
            "requested_at": datetime.now(UTC).isoformat(),
        }
        key = f"control/{backfill_id}/{action}-{self.h.next_sequencer()}.json"
        event = self.upload(json.dumps(document).encode(), key=key, by=by)
        (result,) = self.h.invoke(event)
        return result, key, event

    def control_result(self, key: str) -> dict[str, Any]:
        body = self.h.s3.get_object(Bucket=self.h.bucket, Key=f"results/{key}.result.json")["Body"].read()
        return json.loads(body)

    def triggered_runs(self) -> list[dict[str, Any]]:
        return [
            r
            for r in self.h.airflow.requests
            if r["method"] == "POST" and r["path"].endswith("/dags/backfill/dagRuns")
        ]


JANE = ("data-eng", "jane.doe@example.com")
BOB = ("data-eng", "bob@example.com")
MO = ("marketing", "mo@example.com")


@pytest.fixture
def stack(mocked_aws: None) -> Iterator[ExitStack]:
    with ExitStack() as stack:
        yield stack


def test_a_downstream_job_outside_the_submitters_scope_waits_for_its_owners(stack: ExitStack) -> None:
    gate = Gate(stack, policy=SCOPED.replace("MODE", "approve"))
    result = gate.submit()
    assert (result.disposition, result.state) == ("awaiting_approval", "AWAITING_APPROVAL")
    record = gate.h.status.get(result.backfill_id)
    assert record.submitted_by == "role/data-eng/jane.doe@example.com"  # resolved through IAM
    assert (
        record.history[0]["by"] == record.submitted_by and record.history[-1]["state"] == "AWAITING_APPROVAL"
    )
    assert record.approvers == ["marketing-owners"] and record.root_jobs == ["food_delivery/etl_orders"]
    assert any("downstream food_delivery/email_discounts" in reason for reason in record.approval_reasons)
    assert record.approval_requested_at and gate.triggered_runs() == []
    written = gate.h.result_file()
    assert written["outcome"] == "awaiting_approval" and "marketing-owners" in written["reason"]
    # The thread's first message names the uploader and carries the buttons.
    (message,) = [m for m in gate.h.slack.messages if m["thread_ts"] is None]
    actions = [
        b
        for b in message["blocks"]
        if b["type"] == "actions" and b.get("block_id", "").startswith("control-")
    ]
    assert [e["action_id"] for e in actions[0]["elements"]] == [
        "backfill_approve",
        "backfill_reject",
        "backfill_cancel",
    ]
    assert "role/data-eng/jane.doe@example.com" in json.dumps(message["blocks"])

    # Bob may approve ETL jobs, but the owners named are marketing's.
    refused, key, _ = gate.control(result.backfill_id, "approve", by=BOB)
    assert refused.disposition == "rejected" and "grants: approve" in gate.control_result(key)["reason"]
    assert gate.h.status.get(result.backfill_id).state is BackfillState.AWAITING_APPROVAL
    approved, key, _ = gate.control(result.backfill_id, "approve", by=MO, reason="emails may be resent")
    assert approved.disposition == "accepted", gate.control_result(key)
    record = gate.h.status.get(result.backfill_id)
    assert record.state is BackfillState.TRIGGERED and len(gate.triggered_runs()) == 1
    assert (
        record.approval["by"] == "role/marketing/mo@example.com" and record.approval["outcome"] == "approved"
    )
    assert any(
        e.get("by") == "role/marketing/mo@example.com" and "approved" in e.get("detail", "")
        for e in record.history
    )


def test_a_downstream_job_outside_scope_is_refused_when_the_policy_says_refuse(stack: ExitStack) -> None:
    gate = Gate(stack, policy=SCOPED.replace("MODE", "refuse"))
    result = gate.submit()
    assert (result.disposition, result.state) == ("rejected", "REJECTED")
    errors = gate.h.result_file()["errors"]
    locations = [error["location"] for error in errors]
    assert locations == [
        "downstream food_delivery/email_discounts",
        "downstream food_delivery/orders_popular_day_of_week",
    ]
    assert all("policy rule: downstream_outside_scope: refuse" in error["message"] for error in errors)
    assert "downstream_outside_scope: refuse" in gate.h.status.get(result.backfill_id).reason
    assert gate.triggered_runs() == []


def test_self_approval_is_refused_and_another_approver_triggers_the_run(stack: ExitStack) -> None:
    gate = Gate(stack, policy=THRESHOLD)
    backfill_id = gate.submit().backfill_id
    record = gate.h.status.get(backfill_id)
    assert record.state is BackfillState.AWAITING_APPROVAL and record.approvers == []
    assert any("over approval.max_partitions (100)" in reason for reason in record.approval_reasons)
    # Jane cannot approve her own backfill, not even by naming someone else as the requester.
    refused, key, _ = gate.control(backfill_id, "approve", by=JANE, requested_by="slack:U0BOB")
    assert refused.disposition == "rejected" and "four_eyes" in gate.control_result(key)["reason"]
    assert (
        gate.h.status.get(backfill_id).state is BackfillState.AWAITING_APPROVAL
        and gate.triggered_runs() == []
    )
    approved, key, _ = gate.control(backfill_id, "approve", by=BOB)
    assert approved.disposition == "accepted" and approved.state == "TRIGGERED", gate.control_result(key)
    (run,) = gate.triggered_runs()
    assert run["body"]["dag_run_id"] == backfill_id and run["body"]["conf"]["backfill_id"] == backfill_id
    assert gate.h.airflow.runs[("backfill", backfill_id)]["conf"]["result_uri"].endswith(
        "results/minimal-batch.yaml.result.json"
    )
    assert any(e.get("state") == "TRIGGERED" for e in gate.h.status.get(backfill_id).history)


def test_an_approval_after_the_request_expired_is_refused_and_the_backfill_rejected(stack: ExitStack) -> None:
    gate = Gate(stack, policy=THRESHOLD)
    backfill_id = gate.submit().backfill_id
    asked = datetime.now(UTC) - timedelta(hours=24, minutes=1)
    gate.h.status.annotate(backfill_id, {"approval_requested_at": asked.isoformat()})
    refused, key, _ = gate.control(backfill_id, "approve", by=BOB)
    written = gate.control_result(key)
    assert refused.disposition == "rejected" and written["outcome"] == "refused"
    assert "approval.expires_after_hours" in written["reason"] and written["state"] == "REJECTED"
    record = gate.h.status.get(backfill_id)
    assert record.state is BackfillState.REJECTED and record.approval["outcome"] == "expired"
    assert gate.triggered_runs() == []
    assert gate.h.result_file()["outcome"] == "rejected" and "expired" in gate.h.result_file()["reason"]


def test_a_rejection_ends_the_backfill_with_who_and_why(stack: ExitStack) -> None:
    gate = Gate(stack, policy=THRESHOLD)
    backfill_id = gate.submit().backfill_id
    rejected, _, _ = gate.control(backfill_id, "reject", by=BOB, reason="a year of orders is too much")
    assert rejected.disposition == "accepted" and rejected.state == "REJECTED"
    record = gate.h.status.get(backfill_id)
    assert record.reason == "rejected by role/data-eng/bob@example.com: a year of orders is too much"
    assert (
        record.approval["outcome"] == "rejected"
        and record.history[-1]["by"] == "role/data-eng/bob@example.com"
    )
    assert gate.triggered_runs() == []
    again, key, _ = gate.control(backfill_id, "approve", by=BOB)  # nothing awaits approval any more
    assert again.disposition == "rejected" and "state" in gate.control_result(key)["reason"]
    # The identical config uploaded again is evaluated again: it waits for approval again.
    resubmitted = gate.submit(key="incoming/again.yaml")
    assert resubmitted.backfill_id == backfill_id and resubmitted.state == "AWAITING_APPROVAL"
    assert gate.h.status.get(backfill_id).approval is None


def test_cancel_while_awaiting_approval(stack: ExitStack) -> None:
    gate = Gate(stack, policy=THRESHOLD)
    backfill_id = gate.submit().backfill_id
    cancelled, _, _ = gate.control(backfill_id, "cancel", by=JANE, reason="wrong dates")
    assert cancelled.disposition == "accepted" and cancelled.state == "CANCELLED"
    record = gate.h.status.get(backfill_id)
    assert (
        record.history[-1]["by"] == "role/data-eng/jane.doe@example.com"
        and "before it was triggered" in record.history[-1]["detail"]
    )
    approved, key, _ = gate.control(backfill_id, "approve", by=BOB)
    assert approved.disposition == "rejected" and "CANCELLED" in gate.control_result(key)["reason"]
    assert gate.triggered_runs() == []


def test_an_approved_backfill_overlapping_a_running_one_waits_then_starts(stack: ExitStack) -> None:
    gate = Gate(stack, policy=THRESHOLD)
    first = gate.submit().backfill_id
    gate.control(first, "approve", by=BOB)
    second = gate.submit(
        body=VALID.replace(b"etl-orders-0604", b"etl-orders-0604-b"), key="incoming/second.yaml"
    ).backfill_id
    assert (
        gate.h.status.get(second).state is BackfillState.AWAITING_APPROVAL
    )  # nothing claimed while it waits
    approved, _, _ = gate.control(second, "approve", by=BOB)
    assert approved.disposition == "accepted" and approved.state == "QUEUED"
    assert first in gate.h.status.get(second).reason and len(gate.triggered_runs()) == 1
    written = gate.h.result_file("incoming/second.yaml")  # the upload's result file follows the decision
    assert (written["outcome"], written["state"]) == ("queued", "QUEUED") and "approved by" in written[
        "reason"
    ]
    gate.control(first, "cancel", by=JANE)  # the first ends: the second is started by a `start` document
    (start,) = [
        o["Key"]
        for o in gate.h.s3.list_objects_v2(Bucket=gate.h.bucket, Prefix=f"control/{second}/")["Contents"]
        if "/start-" in o["Key"]
    ]
    head = gate.h.s3.head_object(Bucket=gate.h.bucket, Key=start)
    event = s3_event(
        start,
        size=head["ContentLength"],
        version_id=head.get("VersionId"),
        etag=head["ETag"],
        sequencer="00000000000000AA",
        bucket=gate.h.bucket,
    )
    (started,) = gate.h.invoke(event)
    assert started.state == "TRIGGERED" and len(gate.triggered_runs()) == 2


def test_grants_scope_who_may_cancel(stack: ExitStack) -> None:
    gate = Gate(stack, policy=THRESHOLD)
    backfill_id = gate.submit().backfill_id
    assert gate.h.status.get(backfill_id).root_jobs == ["food_delivery/etl_orders"]
    refused, key, _ = gate.control(backfill_id, "cancel", by=MO)  # marketing may approve marketing/* only
    assert refused.disposition == "rejected" and "grants: cancel" in gate.control_result(key)["reason"]
    assert gate.h.status.get(backfill_id).state is BackfillState.AWAITING_APPROVAL


def test_a_duplicate_approve_delivery_acts_once(stack: ExitStack) -> None:
    gate = Gate(stack, policy=THRESHOLD)
    backfill_id = gate.submit().backfill_id
    approved, _, event = gate.control(backfill_id, "approve", by=BOB)
    assert approved.disposition == "accepted"
    for _ in range(3):
        (again,) = gate.h.invoke(event)
        assert again.disposition == "duplicate"
    assert len(gate.triggered_runs()) == 1
    assert gate.h.action_item(backfill_id, event)["phase"] == "done"


def test_an_approval_that_failed_half_way_is_finished_by_lambdas_retry(stack: ExitStack) -> None:
    gate = Gate(stack, policy=THRESHOLD)
    backfill_id = gate.submit().backfill_id
    gate.h.airflow.fail_next(10, status=503)  # Airflow is down: every retry of the trigger call fails
    document = {
        "control_version": 1,
        "action": "approve",
        "backfill_id": backfill_id,
        "reason": "ok",
        "requested_by": "@bob",
        "requested_at": datetime.now(UTC).isoformat(),
    }
    key = f"control/{backfill_id}/approve-1.json"
    event = gate.upload(json.dumps(document).encode(), key=key, by=BOB)
    with pytest.raises(TriggerFailedError):
        gate.h.invoke(event)
    record = gate.h.status.get(backfill_id)
    assert record.state is BackfillState.AWAITING_APPROVAL and record.approval["outcome"] == "approved"
    assert gate.control_result(key)["outcome"] == "failed"
    gate.h.airflow._failures.clear()  # Airflow is back
    (retried,) = gate.h.invoke(event)  # Lambda delivers the same event again
    assert (retried.disposition, retried.state) == ("accepted", "TRIGGERED")
    assert gate.control_result(key)["outcome"] == "done"
    (again,) = gate.h.invoke(event)  # and once done, a further delivery is only a duplicate
    assert again.disposition == "duplicate"


class Killed(BaseException):
    """The process dies here (no `except Exception` of the code under test catches it)."""


def test_an_approval_killed_after_its_run_was_recorded_is_finished_by_lambdas_retry(
    stack: ExitStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    from backfill_orchestrator.trigger import approval

    gate = Gate(stack, policy=THRESHOLD)
    backfill_id = gate.submit().backfill_id
    document = {
        "control_version": 1,
        "action": "approve",
        "backfill_id": backfill_id,
        "reason": "ok",
        "requested_by": "@bob",
        "requested_at": datetime.now(UTC).isoformat(),
    }
    key = f"control/{backfill_id}/approve-1.json"
    event = gate.upload(json.dumps(document).encode(), key=key, by=BOB)

    def killed(*args: object, **kwargs: object) -> None:
        raise Killed("out of memory after the run was recorded")

    with monkeypatch.context() as patched:
        patched.setattr(approval, "started", killed)  # the lineage START, after TRIGGERED
        with pytest.raises(Killed):
            gate.h.invoke_lambda(event, request_id="approve-request")
    assert gate.h.status.get(backfill_id).state is BackfillState.TRIGGERED
    assert gate.h.action_item(backfill_id, event)["phase"] == "started"

    answer = gate.h.invoke_lambda(event, request_id="approve-request")  # Lambda's retry

    assert [r["disposition"] for r in answer["results"]] == ["accepted"]
    assert len(gate.triggered_runs()) == 1
    assert gate.control_result(key)["outcome"] == "done"
    assert "triggered" in gate.control_result(key)["reason"]
    assert gate.h.result_file()["state"] == "TRIGGERED"  # the submitter's result file says so


def test_without_a_policy_nothing_is_gated_and_the_uploader_is_still_recorded(stack: ExitStack) -> None:
    gate = Gate(stack, policy=None)
    result = gate.submit()
    assert result.state == "TRIGGERED"
    # No IAM lookup without a policy: the unique id stands.
    assert (
        gate.h.status.get(result.backfill_id).submitted_by
        == f"{gate.role_ids['data-eng']}/jane.doe@example.com"
    )
    refused, key, _ = gate.control(result.backfill_id, "approve", by=BOB)
    assert refused.disposition == "rejected" and "AWAITING_APPROVAL" in gate.control_result(key)["reason"]


def test_an_unreadable_policy_lets_nothing_through(stack: ExitStack) -> None:
    gate = Gate(stack, policy=THRESHOLD)
    gate.h.s3.delete_object(Bucket=gate.h.bucket, Key=POLICY_KEY)
    with pytest.raises(TriggerFailedError, match="policy"):
        gate.h.invoke(gate.upload())
    assert gate.triggered_runs() == []


# -- end to end: upload -> Slack button (signed) -> control document -> DAG run -------------------
def _sign(body: str, timestamp: int) -> str:
    """Slack's v0 signature, computed here independently of the function's verifier."""
    return (
        "v0="
        + hmac.new(SIGNING_SECRET.encode(), f"v0:{timestamp}:{body}".encode(), hashlib.sha256).hexdigest()
    )


def test_end_to_end_an_over_threshold_upload_approved_in_slack_runs_the_dag(
    stack: ExitStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate(stack, policy=THRESHOLD)
    h = gate.h
    backfill_id = gate.submit().backfill_id
    assert h.status.get(backfill_id).state is BackfillState.AWAITING_APPROVAL and gate.triggered_runs() == []

    # The Slack interactivity function's Lambda handler, configured as the template does, on
    # moto's tables and secret; its replies go to the Slack receiver's webhook.
    create_table(h.dynamodb, "SlackRequestsTable", table_name="slack-requests")
    secret = h.secrets.create_secret(
        Name="slack-signing", SecretString=json.dumps({"signing_secret": SIGNING_SECRET})
    )
    for name, value in {
        "CONFIG_BUCKET": h.bucket,
        "STATUS_TABLE": TABLE,
        "SLACK_SIGNING_SECRET_ID": secret["ARN"],
        "SLACK_REQUESTS_TABLE": "slack-requests",
        "POLICY_URI": f"s3://{h.bucket}/{POLICY_KEY}",
        "SLACK_RESPONSE_URL_PREFIX": h.slack.webhook_url,
        "POWERTOOLS_METRICS_NAMESPACE": "Test",
    }.items():
        monkeypatch.setenv(name, value)
    stack.enter_context(
        interactivity_handler.interactivity_wiring()
    )  # a container built from this environment

    # Bob presses the Approve button of the thread's first message, as Slack posts it.
    (message,) = [m for m in h.slack.messages if m["thread_ts"] is None]
    (buttons,) = [
        b
        for b in message["blocks"]
        if b["type"] == "actions" and b.get("block_id", "").startswith("control-")
    ]
    approve = next(e for e in buttons["elements"] if e["action_id"] == "backfill_approve")
    body = block_actions_body(
        action="approve",
        backfill_id=approve["value"],
        user_id="U0BOB",
        user_name="bob",
        response_url=h.slack.webhook_url,
        message_ts=message["ts"],
        channel_id=message["channel"],
    )
    payload = json.loads(parse_qs(body)["payload"][0])
    payload["message"]["blocks"] = message["blocks"]  # the message as it is in the thread
    body = urlencode({"payload": json.dumps(payload)})
    timestamp = int(time.time())
    forged = http_api_event(body, timestamp=timestamp, signature=_sign(body, timestamp)[:-4] + "0000")
    context = FakeLambdaContext(function_name="backfill-slack-interactivity-test", request_id="request-1")
    assert interactivity_handler.handler(forged, context)["statusCode"] == 401
    assert h.s3.list_objects_v2(Bucket=h.bucket, Prefix="control/").get("KeyCount") == 0
    signed = http_api_event(body, timestamp=timestamp, signature=_sign(body, timestamp))
    assert interactivity_handler.handler(signed, context)["statusCode"] == 200
    assert interactivity_handler.handler(signed, context)["statusCode"] == 409  # a replay
    (updated,) = [m for m in h.slack.messages if m["via"] == "webhook"]  # buttons replaced by who approved
    assert "Approved by <@U0BOB>" in updated["text"]
    assert not any(
        b["type"] == "actions" and b.get("block_id", "").startswith("control-") for b in updated["blocks"]
    )

    # The control document it wrote reaches the trigger as S3 announces it: uploaded by the
    # interactivity function's role, acting for slack:U0BOB.
    (listed,) = h.s3.list_objects_v2(Bucket=h.bucket, Prefix="control/")["Contents"]
    head = h.s3.head_object(Bucket=h.bucket, Key=listed["Key"])
    event = s3_event(
        listed["Key"],
        size=listed["Size"],
        version_id=head.get("VersionId"),
        etag=head["ETag"],
        sequencer="00000000000000FF",
        bucket=h.bucket,
    )
    event["Records"][0]["userIdentity"]["principalId"] = gate.principal_id(
        SLACK_ROLE, "backfill-slack-interactivity-test"
    )
    (result,) = h.invoke(event)
    assert (result.disposition, result.state) == ("accepted", "TRIGGERED"), result

    record = h.status.get(backfill_id)
    assert record.state is BackfillState.TRIGGERED and record.dag_run_id == backfill_id
    assert (
        record.approval["by"] == "slack:U0BOB" and record.submitted_by == "role/data-eng/jane.doe@example.com"
    )
    (run,) = gate.triggered_runs()
    assert run["body"]["conf"]["backfill_id"] == backfill_id
    assert h.airflow.runs[("backfill", backfill_id)]["conf"]["plan_uri"] == record.plan_uri
    assert any("approve by slack:U0BOB" in (m["text"] or "") for m in h.slack.thread(message["ts"]))


# -- the template's part: the trigger reads the policy, and no more -----------------------------
def test_the_trigger_function_reads_the_policy_with_least_privilege() -> None:
    from tests.support.aws import template

    function = template()["Resources"]["TriggerFunction"]["Properties"]
    variables = function["Environment"]["Variables"]
    assert variables["POLICY_URI"] == {
        "If": [
            "HasPolicyKey",
            {"Sub": "s3://${ConfigBucketName}/${PolicyKey}"},
            {"If": ["HasPolicyParameter", {"Sub": "ssm:${PolicyParameterName}"}, ""]},
        ]
    }
    assert variables["CONTROL_DELEGATES"] == {
        "If": ["SlackInteractivityEnabled", {"Sub": "${SlackInteractivityFunctionRole.RoleId}:*"}, ""]
    }
    gated = {p["If"][0]: p["If"][1]["Statement"] for p in function["Policies"] if "If" in p}
    (document,) = gated["HasPolicyKey"]
    assert (document["Action"], document["Resource"]) == (
        "s3:GetObject",
        {"Sub": "arn:${AWS::Partition}:s3:::${ConfigBucketName}/${PolicyKey}"},
    )
    (parameter,) = gated["HasPolicyParameter"]
    assert parameter["Action"] == "ssm:GetParameter" and parameter["Resource"]["Sub"].endswith(
        ":parameter${PolicyParameterName}"
    )
    (names,) = gated["HasPolicy"]
    assert names["Action"] == ["iam:ListRoles", "iam:ListUsers"] and "*" not in names["Resource"]
    # A delegate glob as the template writes it matches the Slack function's sessions only.
    from backfill_orchestrator.identity import principal_from_id
    from backfill_orchestrator.policy import PolicySource
    from backfill_orchestrator.trigger.approval_gate import ApprovalGate

    gate = ApprovalGate(policy_source=PolicySource(None), delegates=frozenset({"AROASLACK:*"}))
    assert gate.is_delegate(principal_from_id("AWS:AROASLACK:backfill-slack-interactivity-prod"))
    assert not gate.is_delegate(principal_from_id("AWS:AROAJANE:AROASLACK"))
