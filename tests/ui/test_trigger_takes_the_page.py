"""A press on the page reaches the trigger as the CLI's and Slack's do: one control document,
written by the Airflow environment's role (one of the trigger's CONTROL_DELEGATES), acting for
the Airflow user it names (`requested_by: airflow:<user>`). The trigger checks that user against
the policy again, grants included (moto, the Marquez and Airflow doubles)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import boto3
import pytest

from backfill_orchestrator.status import BackfillState
from backfill_orchestrator.trigger.wiring import TriggerWiring
from backfill_orchestrator.ui.actions import ActionDesk
from tests.support.aws import create_table
from tests.support.trigger import VALID, TriggerHarness, fast_session, s3_event

AIRFLOW_ROLE = "airflow-env-execution"
POLICY = """\
version: 1
people:
  jane: {aws: ["role/data-eng/jane.doe@example.com"], airflow: [jane]}
  bob: {airflow: [bob]}
grants:
  - {name: orders-team, members: [jane, bob], permissions: [submit, approve, cancel, retry], jobs: ["food_delivery/*"]}
approval: {max_partitions: 100}
"""


class PageGate:
    def __init__(self, stack: ExitStack) -> None:
        iam = boto3.client("iam", region_name="us-east-1")
        trust = json.dumps({"Version": "2012-10-17", "Statement": []})
        self.role_ids = {
            name: iam.create_role(RoleName=name, AssumeRolePolicyDocument=trust)["Role"]["RoleId"]
            for name in ("data-eng", AIRFLOW_ROLE)
        }
        create_table(boto3.client("dynamodb", region_name="us-east-1"), "ClaimsTable", table_name="claims")
        env = {
            "CLAIMS_TABLE": "claims",
            "CONTROL_DELEGATES": f"role/{AIRFLOW_ROLE}/*",
            "POLICY_URI": "s3://backfill-configs-test/policy.yaml",
        }
        self.h = TriggerHarness(stack, env=env)
        self.h.s3.put_object(Bucket=self.h.bucket, Key="policy.yaml", Body=POLICY.encode())
        self.h.wiring = TriggerWiring(
            self.h.settings,
            s3_client=self.h.s3,
            dynamodb_client=self.h.dynamodb,
            secrets_client=self.h.secrets,
            session_factory=fast_session,
            iam_client_factory=lambda: iam,
        )
        self.desk = ActionDesk(bucket=self.h.bucket, s3_client=self.h.s3, policy=lambda: None)

    def deliver(self, key: str, *, role: str, session: str) -> Any:
        head = self.h.s3.head_object(Bucket=self.h.bucket, Key=key)
        event = s3_event(
            key,
            size=head["ContentLength"],
            version_id=head.get("VersionId"),
            etag=head["ETag"],
            sequencer=self.h.next_sequencer(),
            bucket=self.h.bucket,
        )
        event["Records"][0]["userIdentity"]["principalId"] = f"AWS:{self.role_ids[role]}:{session}"
        (result,) = self.h.invoke(event)
        return result

    def press(self, action: str, backfill_id: str, *, user: str) -> dict[str, Any]:
        """What the page writes for `user` (its own policy check left out: the trigger's is tested)."""
        record = self.h.status.get(backfill_id)
        assert record is not None
        press = self.desk.press(action=action, record=record, user_name=user, reason="from the page")
        assert press.outcome == "requested", press
        key = f"control/{backfill_id}/{press.control}"
        self.deliver(key, role=AIRFLOW_ROLE, session="airflow-api-server")
        body = self.h.s3.get_object(Bucket=self.h.bucket, Key=f"results/{key}.result.json")["Body"].read()
        return json.loads(body)


@pytest.fixture
def gate(mocked_aws: None) -> Iterator[PageGate]:
    with ExitStack() as stack:
        yield PageGate(stack)


def _awaiting(gate: PageGate) -> str:
    gate.h.s3.put_object(Bucket=gate.h.bucket, Key="incoming/minimal-batch.yaml", Body=VALID)
    result = gate.deliver("incoming/minimal-batch.yaml", role="data-eng", session="jane.doe@example.com")
    assert result.state == BackfillState.AWAITING_APPROVAL, result
    return result.backfill_id


def test_an_approval_pressed_by_a_second_person_runs_the_backfill(gate: PageGate) -> None:
    backfill_id = _awaiting(gate)
    answer = gate.press("approve", backfill_id, user="bob")
    assert answer["outcome"] == "done", answer
    record = gate.h.status.get(backfill_id)
    assert record is not None and record.state is BackfillState.TRIGGERED
    assert record.approval and record.approval["by"] == "airflow:bob"


def test_the_trigger_refuses_the_submitters_own_approval_and_unknown_users(gate: PageGate) -> None:
    backfill_id = _awaiting(gate)
    answer = gate.press("approve", backfill_id, user="jane")  # jane submitted it as her AWS role
    assert answer["outcome"] == "refused" and "another person must approve" in answer["reason"]
    answer = gate.press("cancel", backfill_id, user="mallory")  # the delegate cannot vouch for her grants
    assert answer["outcome"] == "refused" and "no grant gives airflow:mallory" in answer["reason"]
    record = gate.h.status.get(backfill_id)
    assert record is not None and record.state is BackfillState.AWAITING_APPROVAL


def test_a_cancel_pressed_on_a_triggered_backfill_is_checked_against_its_root_jobs(gate: PageGate) -> None:
    small = VALID.replace(b"etl-orders-0604", b"etl-orders-small") + b"downstream: {enabled: false}\n"
    gate.h.s3.put_object(Bucket=gate.h.bucket, Key="incoming/small.yaml", Body=small)
    result = gate.deliver("incoming/small.yaml", role="data-eng", session="jane.doe@example.com")
    assert result.state == BackfillState.TRIGGERED, result  # 24 partitions: no approval needed
    record = gate.h.status.get(result.backfill_id)
    assert record is not None and record.root_jobs == ["food_delivery/etl_orders"]  # what grants' globs match
    answer = gate.press("cancel", result.backfill_id, user="bob")
    assert answer["outcome"] == "done", answer
    cancelled = gate.h.status.get(result.backfill_id)
    assert cancelled is not None and cancelled.state is BackfillState.CANCELLED
