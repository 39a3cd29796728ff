"""Safe publish's lifecycle in the trigger (docs/lifecycle.md): a backfill whose Spark step the
DAG held is AWAITING_PUBLISH (record, result file, Slack with Publish / Discard), and the
`publish`, `discard` and `undo` control documents act on its staged data on disk under the
deployment's policy, exactly once; each bad input is a located refusal in the result file, in
Slack and from the CLI (exit 1). On moto (S3, DynamoDB, IAM), the Airflow double and the Slack
receiver; the DAG's `finish` is the real Reporting code."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest

from backfill_orchestrator.cli import main
from backfill_orchestrator.contracts import AttemptDone, PublishManifest
from backfill_orchestrator.publish import default_root
from backfill_orchestrator.status import BackfillState
from backfill_orchestrator.trigger.wiring import TriggerWiring
from tests.support.aws import create_table
from tests.support.publish import LIVE_ROWS, STAGED_ROWS, hold_on_disk
from tests.support.trigger import CLAIMS, TABLE, VALID, TriggerHarness, fast_session

POLICY_KEY = "policy/policy.yaml"
POLICY = """\
version: 1
people:
  jane: {slack_user: U0JANE, aws: ["role/data-eng/jane.doe@example.com"]}
  bob: {slack_user: U0BOB, aws: ["role/data-eng/bob@example.com"]}
  mo: {aws: ["role/marketing/mo@example.com"]}
grants:
  - name: orders-team
    members: [jane, bob]
    permissions: [submit, approve, cancel, retry, publish, undo]
    jobs: ["food_delivery/*"]
  - name: marketing
    members: [mo]
    permissions: [cancel]
    jobs: ["food_delivery/*"]
publish:
  four_eyes: true
  defaults: {max_rows_removed_percent: 10, allow_emptied_partitions: false}
"""
JANE = ("data-eng", "jane.doe@example.com")
BOB = ("data-eng", "bob@example.com")
MO = ("marketing", "mo@example.com")


class Deployment:
    """The trigger with the policy above, a claims table, IAM roles (so uploads are attributed
    to people) and a local warehouse whose publish root the DAG records."""

    def __init__(self, stack: ExitStack, warehouse: Path) -> None:
        iam = boto3.client("iam", region_name="us-east-1")
        trust = json.dumps({"Version": "2012-10-17", "Statement": []})
        self.role_ids = {
            name: iam.create_role(RoleName=name, AssumeRolePolicyDocument=trust)["Role"]["RoleId"]
            for name in ("data-eng", "marketing")
        }
        create_table(boto3.client("dynamodb", region_name="us-east-1"), "ClaimsTable", table_name=CLAIMS)
        env = {"CLAIMS_TABLE": CLAIMS, "POLICY_URI": f"s3://backfill-configs-test/{POLICY_KEY}"}
        self.h = TriggerHarness(stack, env=env)
        self.h.airflow.dag_ids |= {"email_discounts", "orders_popular_day_of_week"}
        self.h.s3.put_object(Bucket=self.h.bucket, Key=POLICY_KEY, Body=POLICY.encode())
        self.h.wiring = TriggerWiring(
            self.h.settings,
            s3_client=self.h.s3,
            dynamodb_client=self.h.dynamodb,
            secrets_client=self.h.secrets,
            session_factory=fast_session,
            iam_client_factory=lambda: iam,
        )
        self.warehouse = warehouse

    def upload(self, body: bytes, *, key: str, by: tuple[str, str]) -> dict[str, Any]:
        event = self.h.upload(body, key=key)
        event["Records"][0]["userIdentity"]["principalId"] = f"AWS:{self.role_ids[by[0]]}:{by[1]}"
        return event

    def submit_held(self) -> str:
        """Jane's backfill, run by the DAG up to its held step: AWAITING_PUBLISH."""
        (result,) = self.h.invoke(self.upload(VALID, key="incoming/minimal-batch.yaml", by=JANE))
        assert str(result.state) == "TRIGGERED", result
        backfill_id = str(result.backfill_id)
        record = self.h.status.get(backfill_id)
        plan = self.h.wiring.mode_services(metrics=None, logger=_logger())[0].storage.load_plan(
            record.plan_uri
        )
        _, notifier = self.h.wiring.mode_services(metrics=None, logger=_logger())
        self.table = hold_on_disk(
            backfill_id=backfill_id,
            attempt=record.run_attempt,
            plan=plan,
            plan_uri=record.plan_uri,
            warehouse=self.warehouse,
            store=self.h.status,
            notifier=notifier,
            result_uri=f"s3://{self.h.bucket}/results/minimal-batch.yaml.result.json",
        )
        return backfill_id

    def control(self, backfill_id: str, action: str, *, by: tuple[str, str], reason: str = "read the diff"):
        document = {
            "control_version": 1,
            "action": action,
            "backfill_id": backfill_id,
            "reason": reason,
            "requested_by": f"{by[1]}",
            "requested_at": datetime.now(UTC).isoformat(),
        }
        key = f"control/{backfill_id}/{action}-{self.h.next_sequencer()}.json"
        event = self.upload(json.dumps(document).encode(), key=key, by=by)
        (result,) = self.h.invoke(event)
        return result, self.h.control_result(key), event

    def rows(self) -> dict[str, str]:
        return {
            "/".join(p.parent.relative_to(self.table).parts): p.read_text()
            for p in sorted(self.table.glob("day=*/feed=*/part-00000.txt"))
        }

    def replies(self, backfill_id: str) -> list[str]:
        return [m["text"] for m in self.h.slack.messages if backfill_id in m["text"]]


def _logger() -> Any:
    import logging

    return logging.getLogger("test")


@pytest.fixture
def deployment(mocked_aws: None, tmp_path: Path) -> Iterator[Deployment]:
    with ExitStack() as stack:
        yield Deployment(stack, tmp_path / "warehouse")


def test_a_held_step_is_awaiting_publish_with_its_diff_everywhere_and_keeps_its_claims(deployment):
    backfill_id = deployment.submit_held()
    record = deployment.h.status.get(backfill_id)
    assert record.state is BackfillState.AWAITING_PUBLISH
    (held,) = record.publish["held"]
    assert held["step"] == "etl_orders" and (held["rows_before"], held["rows_after"]) == (140, 139)
    assert held["keys_removed"] == 1 and "50.0% of rows removed" in held["reasons"][0]
    assert record.publish["root"] == default_root(str(deployment.warehouse))
    assert "awaiting publish: etl_orders" in record.reason
    written = deployment.h.result_file()
    assert (written["outcome"], written["state"]) == ("awaiting_publish", "AWAITING_PUBLISH")
    assert written["held_steps"][0]["top"][0]["partition"] == "day=2021-05-05/hour=3/feed=web"
    (message,) = [m for m in deployment.h.slack.messages if "AWAITING_PUBLISH" in m["text"]]
    text = json.dumps(message["blocks"])
    assert "rows 140 before, 139 after, 1 keys removed" in text and "day=2021-05-05/hour=3/feed=web" in text
    buttons = [
        b for b in message["blocks"] if b["type"] == "actions" and b["block_id"].startswith("control-")
    ]
    assert [e["action_id"] for e in buttons[0]["elements"]] == ["backfill_publish", "backfill_discard"]
    assert deployment.h.claims_held()["active"] == [backfill_id]  # live: its claims stay
    assert deployment.rows() == LIVE_ROWS


def test_publish_by_another_person_swaps_the_staged_partitions_in_and_runs_what_waited(deployment):
    backfill_id = deployment.submit_held()
    result, answer, event = deployment.control(backfill_id, "publish", by=BOB)
    assert (result.disposition, answer["outcome"]) == ("accepted", "done"), answer
    assert deployment.rows() == STAGED_ROWS
    record = deployment.h.status.get(backfill_id)
    assert (record.state, record.run_attempt) == (BackfillState.TRIGGERED, 2)
    assert record.dag_run_id == f"{backfill_id}__attempt2"
    assert record.publish["decisions"]["publish"]["by"] == "role/data-eng/bob@example.com"
    done = AttemptDone.from_json(
        deployment.h.s3.get_object(
            Bucket=deployment.h.bucket, Key=f"backfills/{backfill_id}/attempts/2/done.json"
        )["Body"].read()
    )
    assert done.steps_done == ["etl_orders"]  # published: attempt 2 runs only what waited
    assert "published 1 held step (etl_orders; 2 partitions)" in answer["reason"]
    manifest = json.loads(
        Path(
            f"{default_root(str(deployment.warehouse))}/manifests/{backfill_id}/a1/etl_orders.json"
        ).read_text()
    )
    assert PublishManifest.model_validate(manifest).published_by == "role/data-eng/bob@example.com"
    # The same document again acts on nothing.
    (again,) = deployment.h.invoke(event)
    assert again.disposition == "duplicate" and deployment.rows() == STAGED_ROWS
    assert len([r for r in deployment.h.airflow.requests if r["method"] == "POST"]) == 2


def test_discard_removes_the_staging_leaves_the_warehouse_and_releases_the_claims(deployment):
    backfill_id = deployment.submit_held()
    result, answer, _ = deployment.control(
        backfill_id, "discard", by=JANE, reason="the transform drops a feed"
    )
    assert answer["outcome"] == "done", answer
    assert deployment.rows() == LIVE_ROWS
    root = Path(default_root(str(deployment.warehouse)))
    assert [p for p in (root / "staging" / backfill_id).rglob("*") if p.is_file()] == []
    record = deployment.h.status.get(backfill_id)
    assert record.state is BackfillState.DISCARDED and "the warehouse is as it was" in record.reason
    assert deployment.h.claims_held()["active"] == []
    assert deployment.h.result_file()["state"] == "DISCARDED"
    assert any(
        "discarded by role/data-eng/jane.doe@example.com" in text for text in deployment.replies(backfill_id)
    )


def test_undo_puts_back_what_the_backfill_published_and_a_retry_runs_it_again(deployment):
    backfill_id = deployment.submit_held()
    deployment.control(backfill_id, "publish", by=BOB)
    deployment.h.status.transition(backfill_id, BackfillState.SUCCEEDED, detail="attempt 2 succeeded")
    result, answer, event = deployment.control(backfill_id, "undo", by=BOB, reason="the fix was wrong")
    assert answer["outcome"] == "done", answer
    assert deployment.rows() == LIVE_ROWS
    record = deployment.h.status.get(backfill_id, full_history=True)
    assert record.state is BackfillState.UNDONE
    assert "2 partitions of 1 tables are back" in record.reason
    assert record.history[-1]["by"] == "role/data-eng/bob@example.com"
    assert deployment.h.claims_held()["active"] == []  # claimed for the undo, released after
    (again,) = deployment.h.invoke(event)
    assert again.disposition == "duplicate" and deployment.rows() == LIVE_ROWS
    # A retry of an undone backfill runs every step again (nothing counts as done).
    _, answer, _ = deployment.control(backfill_id, "retry", by=JANE)
    assert answer["outcome"] == "done" and "reruns 6 of 6 steps" in answer["reason"], answer


# -- bad input: located refusals in the result file, in Slack, and from the CLI ------------------
def test_publish_for_an_unknown_backfill_is_refused(deployment):
    result, answer, _ = deployment.control("nonexistent-12345678", "publish", by=BOB)
    assert result.disposition == "rejected"
    assert answer["outcome"] == "refused" and "unknown backfill 'nonexistent-12345678'" in answer["reason"]


def test_publish_in_the_wrong_state_is_refused_and_changes_nothing(deployment):
    (result,) = deployment.h.invoke(deployment.upload(VALID, key="incoming/minimal-batch.yaml", by=JANE))
    backfill_id = str(result.backfill_id)  # TRIGGERED: nothing is held
    for action in ("publish", "discard", "undo"):
        _, answer, _ = deployment.control(backfill_id, action, by=BOB)
        assert answer["outcome"] == "refused", answer
        assert f"cannot {action} {backfill_id} in state TRIGGERED" in answer["reason"]
    assert deployment.h.status.get(backfill_id).state is BackfillState.TRIGGERED
    assert any(
        "publish by bob@example.com refused: cannot publish" in t for t in deployment.replies(backfill_id)
    )


def test_publish_by_someone_the_policy_does_not_allow_is_refused(deployment):
    backfill_id = deployment.submit_held()
    _, answer, _ = deployment.control(backfill_id, "publish", by=MO)
    assert answer["outcome"] == "refused" and "(policy rule: grants: publish)" in answer["reason"]
    assert "no grant gives role/marketing/mo@example.com the publish permission" in answer["reason"]
    _, answer, _ = deployment.control(backfill_id, "publish", by=JANE)  # four eyes: she submitted it
    assert answer["outcome"] == "refused"
    assert "another person must publish" in answer["reason"]
    assert deployment.rows() == LIVE_ROWS
    assert deployment.h.status.get(backfill_id).state is BackfillState.AWAITING_PUBLISH
    replies = deployment.replies(backfill_id)
    assert any("refused" in text and "another person must publish" in text for text in replies)


def test_undo_after_the_backups_expired_is_refused_located(deployment):
    backfill_id = deployment.submit_held()
    deployment.control(backfill_id, "publish", by=BOB)
    deployment.h.status.transition(backfill_id, BackfillState.SUCCEEDED, detail="attempt 2 succeeded")
    path = Path(f"{default_root(str(deployment.warehouse))}/manifests/{backfill_id}/a1/etl_orders.json")
    manifest = PublishManifest.model_validate_json(path.read_text())
    expired = manifest.model_copy(update={"backups_expire_at": datetime.now(UTC) - timedelta(days=1)})
    path.write_text(expired.to_json())
    _, answer, _ = deployment.control(backfill_id, "undo", by=BOB)
    assert answer["outcome"] == "refused", answer
    assert f"cannot undo {backfill_id}: {backfill_id}/a1/etl_orders: backups expired at" in answer["reason"]
    assert deployment.rows() == STAGED_ROWS  # nothing changed
    assert deployment.h.status.get(backfill_id).state is BackfillState.SUCCEEDED
    assert deployment.h.claims_held()["active"] == []  # the undo's claims released


def test_the_cli_exits_1_with_the_refusal(deployment, capsys, monkeypatch):
    for name in ("STATUS_TABLE", "CONFIG_BUCKET"):
        monkeypatch.delenv(name, raising=False)
    backfill_id = deployment.submit_held()
    with deployment.h.delivering():
        code = main(["undo", backfill_id, "--reason", "wrong", "--bucket", deployment.h.bucket])
    out = capsys.readouterr().out
    assert code == 1, out
    assert f"undo {backfill_id}: refused: cannot undo {backfill_id} in state AWAITING_PUBLISH" in out
    code = main(["publish", backfill_id, "--bucket", deployment.h.bucket, "--table", TABLE, "--no-wait"])
    assert code == 0  # written; the trigger answers later
    code = main(
        ["undo", "nonexistent-12345678", "--reason", "x", "--bucket", deployment.h.bucket, "--table", TABLE]
    )
    assert code == 1 and "unknown backfill" in capsys.readouterr().out


def test_a_looser_publish_override_in_the_config_is_rejected_located(deployment):
    body = VALID.decode() + "publish: {max_rows_removed_percent: 50, allow_emptied_partitions: true}\n"
    (result,) = deployment.h.invoke(deployment.upload(body.encode(), key="incoming/loose.yaml", by=JANE))
    assert str(result.state) == "REJECTED"
    errors = {e["location"]: e["message"] for e in deployment.h.result_file("incoming/loose.yaml")["errors"]}
    assert set(errors) == {"publish.max_rows_removed_percent", "publish.allow_emptied_partitions"}
    assert (
        "50.0 is looser than the deployment's publish policy allows (10.0)"
        in errors["publish.max_rows_removed_percent"]
    )
    assert deployment.h.airflow.requests == [] or all(
        r["method"] != "POST" for r in deployment.h.airflow.requests
    )
    narrower = VALID.decode() + "publish: {max_rows_removed_percent: 5}\n"
    (result,) = deployment.h.invoke(deployment.upload(narrower.encode(), key="incoming/narrow.yaml", by=JANE))
    assert str(result.state) == "TRIGGERED"
    plan = json.loads(
        deployment.h.s3.get_object(
            Bucket=deployment.h.bucket, Key=f"backfills/{result.backfill_id}/plan.json"
        )["Body"].read()
    )
    assert plan["publish_policy"]["max_rows_removed_percent"] == 5.0
    assert plan["publish_policy"]["allow_emptied_partitions"] is False  # the deployment's stays


class FailingMoves:
    """The tables' storage, whose `at`-th move fails as S3 does when throttled past its retries."""

    def __init__(self, inner: Any, at: int) -> None:
        self._inner, self.at, self.moves = inner, at, 0

    def exists(self, uri: str) -> bool:
        return bool(self._inner.exists(uri))

    def delete(self, uri: str) -> None:
        self._inner.delete(uri)

    def move(self, source: str, target: str) -> None:
        from backfill_orchestrator.publish import PublishStorageError
        from backfill_orchestrator.publish.errors import issue

        self.moves += 1
        if self.moves == self.at:
            raise PublishStorageError([issue(source, "SlowDown: please reduce your request rate")])
        self._inner.move(source, target)


def test_a_publish_that_fails_half_way_is_finished_by_the_retry_exactly_once(deployment):
    from backfill_orchestrator.publish import Publisher
    from backfill_orchestrator.trigger import TriggerFailedError

    backfill_id = deployment.submit_held()
    wiring = deployment.h.wiring
    build = wiring.publisher
    failing: list[FailingMoves] = []

    def publisher(root: str) -> Publisher:
        built = build(root)
        failing.append(FailingMoves(built.store, at=3))  # the second partition's first move
        return Publisher(layout=built.layout, store=failing[-1], catalogs=built.catalogs)

    wiring.publisher = publisher  # type: ignore[method-assign]  # this container's storage, failing
    document = {
        "control_version": 1,
        "action": "publish",
        "backfill_id": backfill_id,
        "reason": "read the diff",
        "requested_by": "bob@example.com",
        "requested_at": datetime.now(UTC).isoformat(),
    }
    key = f"control/{backfill_id}/publish-{deployment.h.next_sequencer()}.json"
    event = deployment.upload(json.dumps(document).encode(), key=key, by=BOB)
    with pytest.raises(TriggerFailedError):
        deployment.h.invoke_lambda(event, request_id="publish-request")
    assert deployment.h.control_result(key)["outcome"] == "failed"  # and the trigger retries
    assert deployment.h.status.get(backfill_id).state is BackfillState.AWAITING_PUBLISH
    wiring.publisher = build  # type: ignore[method-assign]  # S3 answers again
    answer = deployment.h.invoke_lambda(event, request_id="publish-request")  # Lambda's retry
    assert answer["results"][0]["disposition"] == "accepted", answer
    assert deployment.rows() == STAGED_ROWS
    record = deployment.h.status.get(backfill_id)
    assert (record.state, record.run_attempt) == (BackfillState.TRIGGERED, 2)
    assert len([r for r in deployment.h.airflow.requests if r["method"] == "POST"]) == 2  # one attempt 2
    (again,) = deployment.h.invoke(event)
    assert again.disposition == "duplicate"
