"""One preflight, three doors: `backfill plan`/`backfill submit`, the Python client and the
trigger give the same input the same verdict (moto S3 for the config bucket and the warehouse,
the Marquez double seeded with the food delivery sample, the example job catalog)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import pytest

from backfill_local.marquez_double import run_events
from backfill_orchestrator.cli import main
from backfill_orchestrator.client import OutsideIncomingPrefixError, submit_backfill
from backfill_orchestrator.preflight import PreflightRefusedError
from backfill_orchestrator.trigger import Disposition, TriggerFailedError
from tests.support.trigger import REPO, TriggerHarness

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


# etl_orders_7_days reads what etl_menus, etl_menu_items, etl_orders and etl_categories write.
UPSTREAM = ("etl_menus", "etl_menu_items", "etl_orders", "etl_categories")
ROLLING = """\
version: 1
name: orders-7d-0604
owner: "@jane"
mode: batch
jobs:
  - {namespace: food_delivery, name: etl_orders_7_days}
dates: [2021-06-04]
downstream: {enabled: false}
"""
ROLLING_INPUTS = ("processed/orders/day=2021-06-04/feed=web", "raw/menu_items")
DAY = datetime(2021, 6, 4, tzinfo=UTC)


@dataclass(frozen=True)
class Case:
    config: str
    env: dict[str, str]
    location: str | None  # None: accepted
    text: str = ""
    partitions: tuple[str, ...] = ("raw/orders/day=2021-06-04/hour=3/feed=web",)
    upstream_runs: dict[str, str] | None = None  # job -> outcome of its run for 2021-06-04


CASES = {
    "unknown-feed": Case(BASE + "feeds: [wbe]\n", {}, "feeds[0]", "did you mean 'web'"),
    "exclusion-matches-nothing": Case(
        BASE + "downstream: {exclude: [{namespace: food_delivery, name: email_discount}]}\n",
        {},
        "downstream.exclude[0]",
        "did you mean 'food_delivery/email_discounts'",
    ),
    "nothing-to-reprocess": Case(
        BASE + "feeds: [app]\n", {}, "steps.etl_orders.inputs[0]", "nothing to reprocess"
    ),
    "accepted": Case(BASE + "feeds: [web]\n", {}, None),
    "failed-upstream-warns": Case(
        ROLLING,
        {},
        None,
        "latest run FAILED for 2021-06-04",
        partitions=ROLLING_INPUTS,
        upstream_runs={**dict.fromkeys(UPSTREAM, "COMPLETE"), "etl_orders": "FAIL"},
    ),
    "failed-upstream-refused-when-required": Case(
        ROLLING + "require_fresh_upstream: true\n",
        {},
        "jobs[0]",
        "upstream food_delivery/etl_orders (it writes what food_delivery/etl_orders_7_days reads): latest run FAILED for 2021-06-04",
        partitions=ROLLING_INPUTS,
        upstream_runs={**dict.fromkeys(UPSTREAM, "COMPLETE"), "etl_orders": "FAIL"},
    ),
    "missing-upstream-refused-by-the-deployment": Case(
        ROLLING,
        {"REQUIRE_FRESH_UPSTREAM": "true"},
        "jobs[0]",
        "no run for 2021-06-04",
        partitions=ROLLING_INPUTS,
    ),
    "fresh-upstream-required-and-met": Case(
        ROLLING + "require_fresh_upstream: true\n",
        {},
        None,
        partitions=ROLLING_INPUTS,
        upstream_runs=dict.fromkeys(UPSTREAM, "COMPLETE"),
    ),
    "over-the-spark-time-limit-strict": Case(
        BASE + "strict: true\ndownstream: {enabled: false}\n",
        {"SPARK_TIMEOUT_SECONDS": "60"},
        "plan",
        "over the Spark job's time limit of 1 min",
    ),
}


@pytest.fixture
def harness(
    mocked_aws: None, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[TriggerHarness]:
    case: Case = CASES[request.node.callspec.params["name"]]
    env = {"WAREHOUSE_URI": WAREHOUSE, **case.env}
    with ExitStack() as stack:
        harness = TriggerHarness(stack, env=env)
        for partition in case.partitions:
            harness.s3.put_object(
                Bucket=harness.bucket, Key=f"warehouse/{partition}/part-0.json", Body=b"{}\n" * 10
            )
        for job, outcome in (case.upstream_runs or {}).items():
            assert harness.marquez is not None
            harness.marquez.store.ingest_all(
                run_events(
                    "food_delivery",
                    job,
                    nominal=(DAY, DAY + timedelta(days=1)),
                    outcome=outcome,
                    event_time=DAY + timedelta(days=1, hours=1),
                )
            )
        # The client and the CLI read the same deployment variables the trigger does.
        for key, value in {
            **env,
            "MARQUEZ_URL": harness.env["MARQUEZ_URL"],
            "BACKFILL_JOB_CATALOG": str(CATALOG),
        }.items():
            monkeypatch.setenv(key, value)
        yield harness


def cli_verdict(harness: TriggerHarness, case: Case, tmp_path, capsys) -> tuple[str | None, str]:
    path = tmp_path / "backfill.yaml"
    path.write_text(case.config)
    code = main(["plan", str(path)])
    out, err = capsys.readouterr()
    if code == 0:
        return None, err + out
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
        warnings = harness.result_file()["plan"].get("warnings", [])
        return None, f"{result.disposition} {warnings}"
    error = harness.result_file()["errors"][0]
    return error["location"], error["message"]


@pytest.mark.parametrize(
    "door", [cli_verdict, client_verdict, trigger_verdict], ids=["cli", "client", "trigger"]
)
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


def test_submit_applies_the_deployment_allowlist_like_the_trigger(
    harness_plain, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("ALLOWED_NAMESPACES", "payments")
    path = tmp_path / "backfill.yaml"
    path.write_text(BASE)
    assert main(["submit", str(path), "--bucket", harness_plain.bucket]) == 1
    assert (
        "jobs[0].namespace: namespace 'food_delivery' is not in this deployment's allowlist"
        in capsys.readouterr().err
    )


def test_submit_says_what_it_could_not_check_without_marquez(harness_plain, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("MARQUEZ_URL", raising=False)
    path = tmp_path / "backfill.yaml"
    path.write_text(BASE)
    assert main(["submit", str(path), "--bucket", harness_plain.bucket]) == 0
    assert (
        "not checked: the jobs in Marquez, the plan, its limits and estimate (no lineage: --marquez-url or $MARQUEZ_URL)"
        in capsys.readouterr().err
    )


@pytest.fixture
def harness_plain(mocked_aws: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[TriggerHarness]:
    with ExitStack() as stack:
        harness = TriggerHarness(stack)
        monkeypatch.setenv("MARQUEZ_URL", harness.env["MARQUEZ_URL"])
        monkeypatch.delenv("ALLOWED_NAMESPACES", raising=False)
        yield harness


def test_the_trigger_keeps_the_estimate_and_leaves_the_picture_to_the_run(harness_plain):
    result = harness_plain.invoke(harness_plain.upload(BASE.encode()))[0]
    assert result.disposition is Disposition.ACCEPTED
    estimate = harness_plain.result_file()["plan"]["estimate"]
    assert (
        estimate["dag_reruns"] == {"value": 14, "basis": "measured", "unit": "reruns"}
        and "steps" not in estimate
    )
    record = harness_plain.status.get(result.backfill_id)
    assert record.plan_summary["estimate"] == estimate
    page_key = record.plan_uri.removeprefix(f"s3://{harness_plain.bucket}/").replace("plan.json", "plan.html")
    # A triggered run writes plan.html when it starts (one PutObject fewer for the trigger) ...
    assert harness_plain.s3.list_objects_v2(Bucket=harness_plain.bucket, Prefix=page_key)["KeyCount"] == 0
    first_message = harness_plain.slack.messages[0]
    assert "*Estimate:*" in str(first_message)
    # ... so the message names the picture to come and links no page that is not there yet.
    assert "written when the run starts" in str(first_message)
    assert "/s3/object/" not in str(first_message) and "Plan picture" not in str(first_message)


def test_a_dry_run_stores_the_picture_and_links_it(harness_plain):
    result = harness_plain.invoke(
        harness_plain.upload(BASE.replace("name:", "dry_run: true\nname:", 1).encode())
    )[0]
    assert result.disposition is Disposition.DRY_RUN
    record = harness_plain.status.get(result.backfill_id)
    page_key = record.plan_uri.removeprefix(f"s3://{harness_plain.bucket}/").replace("plan.json", "plan.html")
    page = harness_plain.s3.get_object(Bucket=harness_plain.bucket, Key=page_key)["Body"].read().decode()
    assert "etl_orders_7_days" in page and "<script" not in page
    first_message = harness_plain.slack.messages[0]
    # A clickable link to the picture: the S3 console's page of the object (no PLAN_LINK_BASE).
    assert f"/s3/object/{harness_plain.bucket}?region=" in str(first_message)
    assert quote(page_key, safe="") in str(first_message)


def test_the_estimate_says_which_durations_come_from_marquez_history(harness_plain):
    result = harness_plain.invoke(harness_plain.upload(BASE.encode()))[0]
    assert result.disposition is Disposition.ACCEPTED
    record = harness_plain.status.get(result.backfill_id)
    steps = {step["step"]: step for step in _stored_plan(harness_plain, record.plan_uri)["estimate"]["steps"]}
    # The food delivery sample has one COMPLETED run per job: every duration is measured.
    assert steps["etl_orders"]["seconds"]["basis"] == "measured"
    assert {step["seconds"]["basis"] for step in steps.values()} == {"measured"}


def _stored_plan(harness: TriggerHarness, plan_uri: str) -> dict:
    import json

    key = plan_uri.removeprefix(f"s3://{harness.bucket}/")
    return json.loads(harness.s3.get_object(Bucket=harness.bucket, Key=key)["Body"].read())


def _rolling_harness(stack: ExitStack, env: dict[str, str]) -> TriggerHarness:
    harness = TriggerHarness(stack, env={"WAREHOUSE_URI": WAREHOUSE, **env})
    for partition in ROLLING_INPUTS:
        harness.s3.put_object(Bucket=harness.bucket, Key=f"warehouse/{partition}/part-0.json", Body=b"{}\n")
    return harness


def test_the_trigger_retries_when_required_freshness_cannot_be_checked(mocked_aws: None):
    with ExitStack() as stack:
        harness = _rolling_harness(stack, {"REQUIRE_FRESH_UPSTREAM": "true"})
        assert harness.marquez is not None
        harness.marquez.fail_next(503, times=100, on="runs")
        event = harness.upload(ROLLING.encode())
        with pytest.raises(TriggerFailedError):
            harness.invoke(event)
        assert harness.airflow.requests == []
        assert (
            "MarquezUnavailableError"
            in harness.status.get(
                next(iter(harness.dynamodb.scan(TableName=harness.env["STATUS_TABLE"])["Items"]))[
                    "backfill_id"
                ]["S"]
            ).reason
        )
        # Marquez answers again: the retry checks freshness (no run for the date) and refuses.
        harness.marquez._faults["runs"].clear()
        assert harness.invoke(event)[0].disposition is Disposition.REJECTED
        assert "no run for 2021-06-04" in harness.result_file()["errors"][0]["message"]


def test_the_trigger_warns_when_optional_freshness_cannot_be_checked(mocked_aws: None):
    with ExitStack() as stack:
        harness = _rolling_harness(stack, {})
        assert harness.marquez is not None
        harness.marquez.fail_next(503, times=100, on="runs")
        result = harness.invoke(harness.upload(ROLLING.encode()))[0]
        assert result.disposition is Disposition.ACCEPTED
        warnings = _stored_plan(harness, harness.status.get(result.backfill_id).plan_uri)["warnings"]
        assert any(w["code"] == "upstream_not_checked" and "503" in w["message"] for w in warnings)


def test_the_cli_and_the_client_say_freshness_was_not_checked_when_marquez_runs_fail(
    harness_plain, tmp_path, capsys
):
    assert harness_plain.marquez is not None
    harness_plain.marquez.fail_next(400, times=1000, on="runs")  # 400 is not retried: the test stays quick
    path = tmp_path / "backfill.yaml"
    path.write_text(ROLLING + "require_fresh_upstream: true\n")
    assert main(["plan", str(path)]) == 0
    assert "not checked: upstream freshness (unexpected answer from Marquez at" in capsys.readouterr().err
    submission = submit_backfill(
        ROLLING + "require_fresh_upstream: true\n", bucket=harness_plain.bucket, s3_client=harness_plain.s3
    )
    assert any(
        note.startswith("upstream freshness (unexpected answer") for note in submission.verdict.unchecked
    )


def test_submit_refuses_a_stale_upstream_when_required_and_uploads_nothing(harness_plain, tmp_path, capsys):
    path = tmp_path / "backfill.yaml"
    path.write_text(ROLLING + "require_fresh_upstream: true\n")
    assert main(["submit", str(path), "--bucket", harness_plain.bucket]) == 1
    err = capsys.readouterr().err
    assert (
        f"{path}: jobs[0]: upstream food_delivery/etl_orders (it writes what food_delivery/etl_orders_7_days reads): no run for 2021-06-04"
        in err
    )
    assert "Contents" not in harness_plain.s3.list_objects_v2(Bucket=harness_plain.bucket, Prefix="incoming/")
