"""One preflight, three doors: `backfill plan`/`backfill submit`, the Python client and the
trigger give the same input the same verdict (moto S3 for the config bucket and the warehouse,
the Marquez double seeded with the food delivery sample, the example job catalog)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass

import pytest

from backfill_orchestrator.cli import main
from backfill_orchestrator.client import OutsideIncomingPrefixError, submit_backfill
from backfill_orchestrator.preflight import PreflightRefusedError
from backfill_orchestrator.trigger import Disposition
from tests.integration.test_trigger_flow import REPO, TriggerHarness

CATALOG = REPO / "examples" / "catalog.yaml"
WAREHOUSE = "s3://backfill-configs-test/warehouse"
BASE = """\
version: 1
name: etl-orders-0604
owner: "@jane"
mode: batch
jobs:
  - {namespace: food_delivery, name: etl_orders}
dates: [2021-06-04]
"""


@dataclass(frozen=True)
class Case:
    config: str
    env: dict[str, str]
    location: str | None  # None: accepted
    text: str = ""
    partitions: tuple[str, ...] = ("day=2021-06-04/hour=3/feed=web",)


CASES = {
    "unknown-feed": Case(BASE + "feeds: [wbe]\n", {}, "feeds[0]", "did you mean 'web'"),
    "exclusion-matches-nothing-strict": Case(
        BASE + "strict: true\ndownstream: {exclude: [{namespace: food_delivery, name: nothing_here}]}\n",
        {}, "downstream.exclude[0]", "no effect",
    ),
    "nothing-to-reprocess": Case(
        BASE + "feeds: [app]\n", {}, "steps.etl_orders.inputs[0]", "nothing to reprocess"
    ),
    "accepted": Case(BASE + "feeds: [web]\n", {}, None),
}


@pytest.fixture
def harness(mocked_aws: None, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[TriggerHarness]:
    case: Case = CASES[request.node.callspec.params["name"]]
    env = {"WAREHOUSE_URI": WAREHOUSE, **case.env}
    with ExitStack() as stack:
        harness = TriggerHarness(stack, env=env)
        for partition in case.partitions:
            harness.s3.put_object(Bucket=harness.bucket, Key=f"warehouse/raw/orders/{partition}/part-0.json", Body=b"{}\n" * 10)
        # The client and the CLI read the same deployment variables the trigger does.
        for key, value in {**env, "MARQUEZ_URL": harness.env["MARQUEZ_URL"], "BACKFILL_JOB_CATALOG": str(CATALOG)}.items():
            monkeypatch.setenv(key, value)
        yield harness


def cli_verdict(harness: TriggerHarness, case: Case, tmp_path, capsys) -> tuple[str | None, str]:
    path = tmp_path / "backfill.yaml"
    path.write_text(case.config)
    code = main(["plan", str(path)])
    _, err = capsys.readouterr()
    if code == 0:
        return None, err
    assert code == 1, err
    located = [line for line in err.splitlines() if line.startswith(f"{path}: ")]
    return located[0].removeprefix(f"{path}: ").split(": ", 1)[0], err


def client_verdict(harness: TriggerHarness, case: Case, tmp_path, capsys) -> tuple[str | None, str]:
    try:
        submission = submit_backfill(case.config, bucket=harness.bucket, s3_client=harness.s3)
    except PreflightRefusedError as error:
        return error.issues[0].location, str(error)
    return None, str(submission.verdict)


def trigger_verdict(harness: TriggerHarness, case: Case, tmp_path, capsys) -> tuple[str | None, str]:
    result = harness.invoke(harness.upload(case.config.encode()))[0]
    if result.disposition is not Disposition.REJECTED:
        return None, str(result.disposition)
    error = harness.result_file()["errors"][0]
    return error["location"], error["message"]


@pytest.mark.parametrize("door", [cli_verdict, client_verdict, trigger_verdict], ids=["cli", "client", "trigger"])
@pytest.mark.parametrize("name", list(CASES))
def test_the_same_input_gets_the_same_verdict_everywhere(name, door, harness, tmp_path, capsys):
    case = CASES[name]
    location, text = door(harness, case, tmp_path, capsys)
    assert location == case.location, text
    assert case.text in text


def test_submit_refuses_a_prefix_outside_the_incoming_prefix(harness_plain, tmp_path, capsys):
    path = tmp_path / "backfill.yaml"
    path.write_text(BASE)
    assert main(["submit", str(path), "--bucket", harness_plain.bucket, "--prefix", "elsewhere/"]) == 1
    assert "outside the deployment's incoming prefix 'incoming/'" in capsys.readouterr().err
    with pytest.raises(OutsideIncomingPrefixError):
        submit_backfill(BASE, bucket=harness_plain.bucket, prefix="elsewhere", s3_client=harness_plain.s3)
    assert "Contents" not in harness_plain.s3.list_objects_v2(Bucket=harness_plain.bucket, Prefix="elsewhere")


def test_submit_applies_the_deployment_allowlist_like_the_trigger(harness_plain, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ALLOWED_NAMESPACES", "payments")
    path = tmp_path / "backfill.yaml"
    path.write_text(BASE)
    assert main(["submit", str(path), "--bucket", harness_plain.bucket]) == 1
    assert "jobs[0].namespace: namespace 'food_delivery' is not in this deployment's allowlist" in capsys.readouterr().err


def test_submit_says_what_it_could_not_check_without_marquez(harness_plain, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("MARQUEZ_URL", raising=False)
    path = tmp_path / "backfill.yaml"
    path.write_text(BASE)
    assert main(["submit", str(path), "--bucket", harness_plain.bucket]) == 0
    assert "not checked: lineage (no Marquez URL" in capsys.readouterr().err


@pytest.fixture
def harness_plain(mocked_aws: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[TriggerHarness]:
    with ExitStack() as stack:
        harness = TriggerHarness(stack)
        monkeypatch.setenv("MARQUEZ_URL", harness.env["MARQUEZ_URL"])
        monkeypatch.delenv("ALLOWED_NAMESPACES", raising=False)
        yield harness


def test_the_trigger_keeps_the_estimate_and_the_picture(harness_plain):
    result = harness_plain.invoke(harness_plain.upload(BASE.encode()))[0]
    assert result.disposition is Disposition.ACCEPTED
    estimate = harness_plain.result_file()["plan"]["estimate"]
    assert estimate["dag_reruns"] == {"value": 14, "basis": "measured", "unit": "reruns"} and "steps" not in estimate
    record = harness_plain.status.get(result.backfill_id)
    assert record.plan_summary["estimate"] == estimate
    page_key = record.plan_uri.removeprefix(f"s3://{harness_plain.bucket}/").replace("plan.json", "plan.html")
    page = harness_plain.s3.get_object(Bucket=harness_plain.bucket, Key=page_key)["Body"].read().decode()
    assert "etl_orders_7_days" in page and "<script" not in page
    first_message = harness_plain.slack.messages[0]
    assert "*Estimate:*" in str(first_message)
