"""The DAG's support code without Airflow processes: rounds, the ledger, conf checks, the run
report reader, URIs (fast; no network)."""

from __future__ import annotations

import json
import sys
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from backfill_orchestrator.plan import Plan

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "dags"))

from backfill_runtime.conf import InvalidRunConfError, parse_run_conf  # noqa: E402
from backfill_runtime.ledger import BLOCKED, FAILED, PENDING, SUCCEEDED, DagRunRequest, Ledger  # noqa: E402
from backfill_runtime.rounds import PlanTooDeepError, assign_rounds, check_fits, sub_plan  # noqa: E402
from backfill_runtime.spark import report_steps  # noqa: E402

from backfill_orchestrator.documents import DocumentNotFoundError, read_text, remove, sibling, write_text  # noqa: E402

from .conftest import step  # noqa: E402

D = ["2021-06-04", "2021-06-05"]


def make_plan(waves: list[list[dict]]) -> Plan:
    return Plan.model_validate(
        {
            "backfill_id": "unit-0123abcd",
            "name": "unit",
            "owner": "jane@example.com",
            "created_at": datetime(2021, 6, 14, tzinfo=UTC).isoformat(),
            "roots": [{"namespace": "food_delivery", "name": waves[0][0]["id"]}],
            "dates": D,
            "waves": [{"index": i, "steps": s} for i, s in enumerate(waves)],
        }
    )


INTERLEAVED = [
    [step("a", "spark", dates=D), step("x", "spark", dates=D)],
    [step("b", "spark", dates=D, upstream=["a"]), step("d1", "airflow_dag", dates=D, upstream=["x"])],
    [step("d2", "airflow_dag", dates=D, upstream=["b"]), step("c", "spark", dates=D, upstream=["d1"])],
    [step("e", "spark", dates=D, upstream=["c", "b"]), step("d3", "airflow_dag", dates=D[:1], upstream=["d2"])],
]


def test_chained_spark_steps_share_a_round_and_each_kind_switch_starts_a_new_one() -> None:
    rounds = assign_rounds(make_plan(INTERLEAVED))
    assert rounds == {"a": 0, "x": 0, "b": 0, "d1": 1, "d2": 1, "c": 2, "e": 2, "d3": 2}


def test_a_plan_deeper_than_the_slots_is_refused_with_the_option_to_raise() -> None:
    plan = make_plan(INTERLEAVED)
    assert check_fits(plan, max_rounds=3) == 3
    with pytest.raises(PlanTooDeepError, match="needs 3 rounds.*max_rounds"):
        check_fits(plan, max_rounds=2)


def test_sub_plan_keeps_only_the_chosen_steps_and_their_inner_edges_and_is_valid() -> None:
    plan = make_plan(INTERLEAVED)
    sub = sub_plan(plan, {"c", "e"})
    assert [[s.id for s in w.steps] for w in sub.waves] == [["c"], ["e"]]
    assert [w.index for w in sub.waves] == [2, 3]
    assert sub.step("c").upstream == [] and sub.step("e").upstream == ["c"]
    assert Plan.from_json(sub.to_json()) == sub


def test_the_ledger_blocks_dependants_of_failures_only() -> None:
    plan = make_plan(INTERLEAVED)
    ledger = Ledger.for_plan(plan)
    work = ledger.plan_round(plan, 0)
    assert work.spark_step_ids == ["a", "x", "b"] and work.dag_runs == []
    ledger.record_spark(
        ["a", "x", "b"],
        report_steps={
            "a": {"status": FAILED, "detail": "boom"},
            "x": {"status": SUCCEEDED, "figures": {"rows_out": 5}},
            "b": {"status": BLOCKED, "detail": "not run: upstream a did not succeed"},
        },
        task_state="failed",
    )
    work = ledger.plan_round(plan, 1)
    assert work.blocked == {"d2": "not run: upstream b did not succeed"}
    assert work.dag_runs == [DagRunRequest("d1", "d1", date(2021, 6, 4)), DagRunRequest("d1", "d1", date(2021, 6, 5))]
    ledger.record_dag_runs(work.dag_runs, {0: "success", 1: "failed"})
    assert ledger.entries["d1"]["status"] == FAILED
    assert ledger.entries["d1"]["detail"] == "DAG run failed for 2021-06-05"
    work = ledger.plan_round(plan, 2)
    assert work.spark_step_ids == [] and work.dag_runs == []
    assert set(work.blocked) == {"c", "e", "d3"}
    assert ledger.counts() == {PENDING: 0, SUCCEEDED: 1, FAILED: 2, BLOCKED: 5}
    assert not ledger.succeeded


def test_no_report_means_every_submitted_step_failed() -> None:
    plan = make_plan(INTERLEAVED)
    ledger = Ledger.for_plan(plan)
    ledger.record_spark(["a", "x"], report_steps=None, task_state="failed")
    assert ledger.entries["a"]["status"] == FAILED
    assert "ended failed and wrote no run report" in ledger.entries["a"]["detail"]
    ledger.record_spark(["b"], report_steps={}, task_state="success")
    assert ledger.entries["b"]["detail"] == "missing from the Spark job's run report"


def test_the_job_report_maps_to_step_outcomes() -> None:
    report = {
        "steps": [
            {"id": "a", "status": "succeeded", "seconds": 1.5, "rows_in": 10, "rows_out": 8, "partitions_written_count": 2},
            {"id": "b", "status": "failed", "error": "division by zero"},
            {"id": "c", "status": "skipped", "blocked_by": ["b"]},
        ]
    }
    steps = report_steps(json.dumps(report))
    assert steps["a"] == {"status": SUCCEEDED, "detail": None, "figures": {"seconds": 1.5, "rows_in": 10, "rows_out": 8, "partitions_written_count": 2}}
    assert steps["b"]["status"] == FAILED and steps["b"]["detail"] == "division by zero"
    assert steps["c"] == {"status": BLOCKED, "detail": "not run: upstream b did not succeed", "figures": {}}


@pytest.mark.parametrize(
    ("conf", "problems"),
    [
        (None, ["conf is empty"]),
        ({}, ["conf is empty"]),
        ({"backfill_id": "x-0123abcd"}, ["config_uri: required", "plan_uri: required"]),
        (
            {"backfill_id": "Bad Id", "config_uri": "s3://b/c.yaml", "plan_uri": "http://x/p.json", "extra": 1},
            ["unknown keys ['extra']", "backfill_id: expected <name>-<8 hex digits>", "plan_uri: expected an s3://"],
        ),
        ({"backfill_id": "x-0123abcd", "config_uri": 3, "plan_uri": " "}, ["config_uri: expected a non-empty string", "plan_uri: expected a non-empty string"]),
    ],
)
def test_bad_conf_names_every_problem(conf, problems) -> None:
    with pytest.raises(InvalidRunConfError) as caught:
        parse_run_conf(conf)
    for problem in problems:
        assert any(p.startswith(problem) for p in caught.value.problems), (problem, caught.value.problems)


def test_good_conf() -> None:
    conf = parse_run_conf({"backfill_id": "orders-0123abcd", "config_uri": "s3://b/c.yaml", "plan_uri": "s3://b/p.json"})
    assert conf.plan_uri == "s3://b/p.json"


def test_local_uris_round_trip(tmp_path: Path) -> None:
    uri = f"file://{tmp_path}/backfills/x/plan.json"
    write_text(sibling(uri, "rounds/0/plan.json"), "{}")
    assert read_text(str(tmp_path / "backfills/x/rounds/0/plan.json")) == "{}"
    remove(sibling(uri, "rounds/0/plan.json"))
    remove(sibling(uri, "rounds/0/plan.json"))  # absent: fine
    with pytest.raises(DocumentNotFoundError):
        read_text(sibling(uri, "rounds/0/plan.json"))


def test_s3_uris_round_trip() -> None:
    import boto3
    from moto import mock_aws

    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="unit-bucket")
        write_text("s3://unit-bucket/backfills/x/run_report.json", '{"ok": 1}', s3_client=s3)
        assert json.loads(read_text("s3://unit-bucket/backfills/x/run_report.json", s3_client=s3)) == {"ok": 1}
        remove("s3://unit-bucket/backfills/x/run_report.json", s3_client=s3)
        with pytest.raises(DocumentNotFoundError):
            read_text("s3://unit-bucket/backfills/x/run_report.json", s3_client=s3)
