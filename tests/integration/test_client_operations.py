"""The notebook operations against moto: plan (text and HTML), submit with wait, status,
list, watch, cancel and retry, and the CLI subcommands that share them."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import boto3
import pytest

from backfill_local.marquez_double import InProcessMarquez, LineageStore, food_delivery_events
from backfill_orchestrator.cli import main
from backfill_orchestrator.client import (
    BackfillNotFoundError,
    ControlWriteError,
    InvalidControlRequestError,
    NoStatusTableError,
    PlanView,
    backfill_status,
    cancel_backfill,
    list_backfills,
    plan_backfill,
    retry_backfill,
    submit_backfill,
    validate_backfill,
    watch_backfill,
)
from backfill_orchestrator.config import ConfigPolicy, InvalidConfigError, backfill_id, parse_config
from backfill_orchestrator.contracts import ControlRequest
from backfill_orchestrator.lineage import InvalidMarquezUrlError
from backfill_orchestrator.planner import render_plan_text
from backfill_orchestrator.preflight import PreflightRefusedError
from backfill_orchestrator.status import BackfillState, StatusStore
from tests.support.aws import create_table
from tests.support.configs import EXAMPLES, VALID_BATCH

BUCKET = "backfill-configs-test"
TABLE = "status"
BATCH_ID = backfill_id(parse_config(VALID_BATCH))
AT = datetime(2026, 11, 23, 20, 30, 5, 123456, tzinfo=timezone.utc)  # noqa: UP017 - runs on 3.10 too


@pytest.fixture
def aws(mocked_aws, monkeypatch):
    monkeypatch.delenv("STATUS_TABLE", raising=False)
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket=BUCKET)
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    create_table(dynamodb, "StatusTable", table_name=TABLE)
    return s3, dynamodb, StatusStore(table_name=TABLE, dynamodb_client=dynamodb)


def control_documents(s3) -> dict[str, ControlRequest]:
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="control/").get("Contents", [])]
    return {
        key: ControlRequest.from_json(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()) for key in keys
    }


def finish(store: StatusStore, backfill: str) -> None:
    store.create(backfill)
    for state in (BackfillState.PLANNED, BackfillState.TRIGGERED, BackfillState.SUCCEEDED):
        store.transition(backfill, state, detail=str(state))


# -- plan --------------------------------------------------------------------------------------
def lineage() -> InProcessMarquez:
    store = LineageStore()
    store.ingest_all(food_delivery_events())
    return InProcessMarquez(store)


def test_plan_renders_as_the_cli_text_and_as_an_html_table():
    view = plan_backfill(VALID_BATCH, lineage=lineage(), catalog=str(EXAMPLES / "catalog.yaml"))
    assert str(view) == render_plan_text(view.plan)
    assert view.plan.backfill_id == BATCH_ID and len(view.plan.steps) > 1
    page = view._repr_html_()
    assert page.count("<tr>") == len(view.plan.steps) + 1  # the header and one row per step
    for step in view.plan.steps:
        assert f"<td>{step.id}</td>" in page


def test_plan_escapes_what_it_shows():
    view = plan_backfill(VALID_BATCH, lineage=lineage())
    hostile = PlanView(view.plan.model_copy(update={"owner": "<script>alert(1)</script>"}))
    page = hostile._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_plan_without_lineage_says_how_to_give_it(monkeypatch):
    monkeypatch.delenv("MARQUEZ_URL", raising=False)
    with pytest.raises(InvalidMarquezUrlError, match="MARQUEZ_URL"):
        plan_backfill(VALID_BATCH)


def test_validate_checks_what_the_trigger_checks_and_the_plan_where_lineage_is_given():
    policy = ConfigPolicy(allowed_namespaces=frozenset({"payments"}))
    with pytest.raises(InvalidConfigError) as caught:
        validate_backfill(VALID_BATCH, policy=policy)
    assert [issue.location for issue in caught.value.issues] == ["jobs[0].namespace"]

    unknown = {**VALID_BATCH, "jobs": [{"namespace": "food_delivery", "name": "no_such_job"}]}
    assert validate_backfill(unknown).name == VALID_BATCH["name"]  # no lineage: the config alone
    with pytest.raises(PreflightRefusedError) as refused:  # every refusal, located as the trigger does
        validate_backfill(unknown, lineage=lineage())
    assert [issue.location for issue in refused.value.issues] == ["jobs[0]"]
    assert "Marquez has no job food_delivery/no_such_job" in refused.value.issues[0].message
    assert validate_backfill(VALID_BATCH, lineage=lineage(), catalog=str(EXAMPLES / "catalog.yaml")).name


# -- submit, status, list, watch ---------------------------------------------------------------
def test_submit_and_wait_returns_the_final_record(aws):
    s3, dynamodb, store = aws
    finish(store, BATCH_ID)  # the trigger and the DAG, done already
    seen = []
    result = submit_backfill(
        VALID_BATCH,
        bucket=BUCKET,
        wait=True,
        table=TABLE,
        interval=0,
        timeout=5,
        on_update=seen.append,
        s3_client=s3,
        dynamodb_client=dynamodb,
    )
    assert result.final_status is not None and str(result.final_status.state) == "SUCCEEDED"
    assert [str(r.state) for r in seen] == ["SUCCEEDED"]
    assert s3.head_object(Bucket=BUCKET, Key=result.key)["ContentLength"] > 0


def test_status_list_and_watch_with_a_session(aws):
    _, _, store = aws
    session = boto3.Session(region_name="us-east-1")  # nothing else: the default credential chain
    with pytest.raises(BackfillNotFoundError, match="no status record for 'b-00000001' in status"):
        backfill_status("b-00000001", table=TABLE, session=session)
    store.create("b-00000001")
    finish(store, "b-00000002")
    assert str(backfill_status("b-00000001", table=TABLE, session=session).state) == "RECEIVED"
    assert [r.backfill_id for r in list_backfills(table=TABLE, state="succeeded", session=session)] == [
        "b-00000002"
    ]
    assert {r.backfill_id for r in list_backfills(table=TABLE, session=session)} == {
        "b-00000001",
        "b-00000002",
    }

    moves = [lambda: store.transition("b-00000001", BackfillState.REJECTED, detail="bad")]
    lines = []
    final = watch_backfill(
        "b-00000001",
        table=TABLE,
        interval=0,
        timeout=5,
        session=session,
        on_update=lines.append,
        sleep=lambda _s: moves and moves.pop(0)(),
    )
    assert str(final.state) == "REJECTED" and [str(r.state) for r in lines] == ["RECEIVED", "REJECTED"]


def test_the_table_comes_from_the_environment_when_not_given(aws, monkeypatch):
    _, _, store = aws
    store.create("b-00000003")
    monkeypatch.setenv("STATUS_TABLE", TABLE)
    assert backfill_status("b-00000003").backfill_id == "b-00000003"


# -- cancel and retry (waiting for the trigger: tests/integration/test_control_outcomes.py) --------
def test_cancel_and_retry_write_control_documents(aws):
    s3, _, _ = aws
    cancel = cancel_backfill(
        BATCH_ID,
        reason="wrong dates",
        bucket=BUCKET,
        requested_by="jane.doe@example.com",
        s3_client=s3,
        wait=False,
    )
    retry = retry_backfill(
        BATCH_ID, reason=" fixed upstream ", bucket=BUCKET, requested_by="@jane", wait=False
    )
    written = control_documents(s3)
    assert set(written) == {cancel.key, retry.key}
    assert cancel.key.startswith(f"control/{BATCH_ID}/cancel-") and cancel.key.endswith("Z.json")
    assert written[cancel.key] == cancel.request and cancel.request.action == "cancel"
    assert written[retry.key].reason == "fixed upstream" and written[retry.key].requested_by == "@jane"
    assert retry.s3_uri == f"s3://{BUCKET}/{retry.key}"


def test_the_requester_is_the_callers_aws_identity_as_the_trigger_records_it(aws):
    s3, _, _ = aws
    sts = boto3.client("sts", region_name="us-east-1")
    credentials = sts.assume_role(
        RoleArn="arn:aws:iam::123456789012:role/databricks-cluster", RoleSessionName="jane.doe@example.com"
    )["Credentials"]
    session = boto3.Session(
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
        region_name="us-east-1",
    )
    outcome = cancel_backfill(BATCH_ID, reason="stop", bucket=BUCKET, session=session, wait=False)
    # identity.caller_principal: the role and its session, as Principal.display records an uploader
    assert outcome.request.requested_by == "role/databricks-cluster/jane.doe@example.com"
    assert list(control_documents(s3)) == [outcome.key]


def test_the_callers_aws_identity_is_the_requester_and_bad_requests_write_nothing(aws):
    s3, _, _ = aws  # moto's default identity is the IAM user `moto`: an AWS principal is a requester too
    cancel_backfill(BATCH_ID, reason="stop", bucket=BUCKET, wait=False)
    (written,) = control_documents(s3).values()
    assert written.action == "cancel" and written.requested_by == "user/moto"
    s3.delete_object(Bucket=BUCKET, Key=next(iter(control_documents(s3))))
    with pytest.raises(InvalidControlRequestError, match="reason"):
        retry_backfill(BATCH_ID, reason="   ", bucket=BUCKET, requested_by="@jane")
    with pytest.raises(InvalidControlRequestError, match="backfill_id"):
        retry_backfill("Not An Id", reason="x", bucket=BUCKET, requested_by="@jane")
    assert control_documents(s3) == {}
    with pytest.raises(ControlWriteError, match="could not write s3://no-such-bucket/control/"):
        cancel_backfill(BATCH_ID, reason="stop", bucket="no-such-bucket", requested_by="@jane")


# -- the CLI -----------------------------------------------------------------------------------
def test_cli_cancel_and_retry(aws, capsys):
    s3, _, _ = aws
    base = ["--bucket", BUCKET, "--no-wait"]
    assert main(["cancel", BATCH_ID, "--reason", "wrong dates", *base, "--requested-by", "@jane"]) == 0
    assert f"cancel of {BATCH_ID} requested by @jane: s3://{BUCKET}/control/" in capsys.readouterr().out
    assert main(["retry", BATCH_ID, "--reason", "again", *base, "--requested-by", "@jane"]) == 0
    assert sorted(r.action for r in control_documents(s3).values()) == ["cancel", "retry"]
    assert main(["retry", BATCH_ID, "--reason", "again", *base]) == 0  # as the AWS identity `user/moto`
    assert "requested by user/moto" in capsys.readouterr().out
    assert (
        main(["cancel", BATCH_ID, "--reason", "x", "--bucket", "no-such-bucket", "--requested-by", "@j"]) == 2
    )
    assert main(["cancel", BATCH_ID, "--bucket", BUCKET]) == 2  # --reason is required
    assert main(["cancel", BATCH_ID, "--reason", "x"]) == 2  # no bucket: --bucket or $CONFIG_BUCKET
    assert "no config bucket: pass --bucket or set CONFIG_BUCKET" in capsys.readouterr().err


def test_cli_submit_wait(aws, tmp_path, capsys):
    _, _, store = aws
    path = tmp_path / "orders.json"
    path.write_text(json.dumps(VALID_BATCH))
    finish(store, BATCH_ID)
    assert main(["submit", str(path), "--bucket", BUCKET, "--wait", "--table", TABLE, "--interval", "0"]) == 0
    out = capsys.readouterr().out
    assert f"backfill id: {BATCH_ID}" in out and f"{BATCH_ID} SUCCEEDED" in out
    assert main(["submit", str(tmp_path / "orderz.json"), "--bucket", BUCKET]) == 2
    assert "no such file" in capsys.readouterr().err


def test_waiting_without_a_status_table_uploads_nothing(aws, tmp_path, capsys):
    s3, _, _ = aws
    with pytest.raises(NoStatusTableError):
        submit_backfill(VALID_BATCH, bucket=BUCKET, wait=True, s3_client=s3)
    path = tmp_path / "orders.json"
    path.write_text(json.dumps(VALID_BATCH))
    assert main(["submit", str(path), "--bucket", BUCKET, "--wait"]) == 2
    assert "no status table: pass --table or set STATUS_TABLE" in capsys.readouterr().err
    assert "Contents" not in s3.list_objects_v2(Bucket=BUCKET)
