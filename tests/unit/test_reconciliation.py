"""Reconciliation without Spark: the rules file and its located errors, which mismatches are
roots and which are explained upstream, the configs, backfills in flight (moto) and the
Slack summary."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import boto3
import pytest

from backfill_orchestrator.config import JobRef, parse_config
from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.reconciliation import (
    InFlightPlansError,
    InvalidRulesError,
    MeasureDiff,
    Mismatch,
    ReconciliationReport,
    RulesUnavailableError,
    TableNode,
    backfill_configs,
    explain,
    in_flight_ids,
    in_flight_plans,
    load_rules,
    parse_rules,
    plan_uri,
    split_covered,
)
from backfill_orchestrator.reconciliation.report import TableSummary, WrittenConfig, reported
from backfill_orchestrator.reconciliation.summary import reconciliation_message
from backfill_orchestrator.status import BackfillState, StatusStore
from tests.support.aws import create_table

REPO = Path(__file__).resolve().parents[2]
FOOD = "food_delivery"
D = date(2021, 5, 1)


def day(n: int) -> date:
    return date(2021, 5, n)


NODES = {
    "orders": TableNode(
        table="orders",
        job=JobRef(namespace=FOOD, name="etl_orders"),
        step_id="etl_orders",
        upstream={"raw_orders": 0},
    ),
    "orders_7_days": TableNode(
        table="orders_7_days",
        job=JobRef(namespace=FOOD, name="etl_orders_7_days"),
        step_id="etl_orders_7_days",
        upstream={"orders": 6, "menu_items": 0},
    ),
    "delivery_7_days": TableNode(
        table="delivery_7_days",
        job=JobRef(namespace=FOOD, name="etl_delivery_7_days"),
        step_id="etl_delivery_7_days",
        upstream={"orders_7_days": 0},
    ),
    "top_delivery_times": TableNode(
        table="top_delivery_times",
        job=JobRef(namespace=FOOD, name="delivery_times_7_days"),
        step_id="delivery_times_7_days",
        upstream={"delivery_7_days": 0},
    ),
}
DIFF = (MeasureDiff(check="row_count", expected=10, actual=7),)


def m(table: str, n: int, hour: int | None, feed: str | None) -> Mismatch:
    return Mismatch(table=table, day=day(n), hour=hour, feed=feed, diffs=DIFF)


# -- rules -------------------------------------------------------------------------------------
def test_the_example_rules_cover_every_table_of_the_sample_pipeline():
    rules = load_rules(str(REPO / "examples" / "reconciliation.yaml"))
    assert [t.table for t in rules.tables] == [
        "orders",
        "orders_7_days",
        "delivery_7_days",
        "top_delivery_times",
    ]
    assert rules.for_table("orders").grain_columns == ["day", "hour", "feed"]
    assert {check.measure for t in rules.tables for check in t.checks} == {
        "row_count",
        "distinct_keys",
        "sum",
        "checksum",
    }
    delivery = rules.for_table("delivery_7_days").checks[1]
    assert delivery.tolerance.allows(expected=100_000, actual=100_090)
    assert not delivery.tolerance.allows(expected=100_000, actual=100_200)


def test_bad_rules_are_located():
    document = {
        "version": 1,
        "tables": [
            {
                "table": "orders",
                "upstream": ["raw_orders"],
                "grain": ["hour", "feed"],
                "checks": [{"measure": "row_count"}],
            },
            {
                "table": "orders",
                "upstream": [],
                "grain": ["day"],
                "checks": [{"measure": "sum", "columns": ["a"]}],
            },
            {
                "table": "x",
                "upstream": ["y"],
                "grain": ["day", "minute"],
                "checks": [
                    {"measure": "row_count", "tolerance": {"relative": 2}},
                    {"measure": "checksum", "columns": ["a"], "extra": 1},
                ],
            },
        ],
    }
    with pytest.raises(InvalidRulesError) as caught:
        parse_rules(document, source="rules.yaml")
    text = str(caught.value)
    assert "rules.yaml: tables[0]: grain must include day" in text
    assert "tables[1].upstream: list should have at least 1 item" in text
    assert "tables[1].checks[0]: sum takes `column` (and no `columns`)" in text
    assert "tables[2].grain[1]: input should be 'day', 'hour' or 'feed', got 'minute'" in text
    assert "tables[2].checks[0].tolerance.relative: input should be less than or equal to 1, got 2" in text
    assert "tables[2].checks[1].extra: unknown key" in text


def test_duplicate_tables_and_checks_and_yaml_problems_are_located(tmp_path):
    twice = {
        "table": "orders",
        "upstream": ["raw_orders"],
        "grain": ["day"],
        "checks": [{"measure": "row_count"}],
    }
    with pytest.raises(InvalidRulesError, match=r"tables\[1\].table: duplicate of tables\[0\] \(orders\)"):
        parse_rules({"version": 1, "tables": [twice, twice]})
    with pytest.raises(InvalidRulesError, match=r"tables\[0\]: checks repeat row_count"):
        parse_rules({"version": 1, "tables": [{**twice, "checks": [{"measure": "row_count"}] * 2}]})
    with pytest.raises(InvalidRulesError, match="duplicate key 'version'"):
        parse_rules("version: 1\nversion: 1\n")
    with pytest.raises(InvalidRulesError, match="anchors are not allowed"):
        parse_rules("version: 1\ntables: &a [1]\nother: *a\n")
    with pytest.raises(RulesUnavailableError, match="no such file"):
        load_rules(str(tmp_path / "missing.yaml"))


# -- roots and explanations --------------------------------------------------------------------
def test_downstream_mismatches_within_the_window_are_explained_by_the_most_upstream_one():
    found = [
        m("orders", 6, 7, "web"),
        m("orders_7_days", 6, None, "web"),
        m("orders_7_days", 9, None, "web"),  # within 6 days after
        m("orders_7_days", 13, None, "web"),  # 7 days after: its own break
        m("orders_7_days", 8, None, "app"),  # another feed: its own break
        m("delivery_7_days", 8, None, "app"),  # explained by orders_7_days
        m("top_delivery_times", 12, None, "web"),  # orders -> top: 6 days of reach
        m("top_delivery_times", 5, None, "web"),  # before the orders day
    ]
    roles = explain(found, nodes=NODES)
    assert roles == {
        found[0]: None,
        found[1]: "orders",
        found[2]: "orders",
        found[3]: None,
        found[4]: None,
        found[5]: "orders_7_days",
        found[6]: "orders",
        found[7]: None,
    }


def test_explanations_chain_to_the_root():
    found = [
        m("orders", 2, 1, "web"),
        m("orders_7_days", 4, None, "web"),
        m("delivery_7_days", 4, None, "web"),
    ]
    assert explain(found, nodes=NODES)[found[2]] == "orders"


# -- configs -----------------------------------------------------------------------------------
def test_one_config_per_root_job_with_exact_days_hours_and_feeds():
    roots = [m("orders", 3, h, "partner") for h in range(24)] + [
        m("orders", 6, 7, "web"),
        m("orders", 8, 7, "web"),
    ]
    roots += [m("orders_7_days", 2, None, "app"), m("top_delivery_times", 2, None, "app")]
    configs = backfill_configs(
        roots,
        nodes=NODES,
        owner="@data-platform",
        checked_on=date(2026, 1, 2),
        report_uri="s3://bucket/reconciliation/2026-01-01/report.json",
    )
    by_jobs = {tuple(j.name for j in c.jobs): (c, doc) for c, doc in configs}
    # Same days, hours and feeds: the two daily roots share one config.
    assert set(by_jobs) == {("etl_orders",), ("delivery_times_7_days", "etl_orders_7_days")}
    orders, document = by_jobs[("etl_orders",)]
    assert (
        orders.days == [day(3), day(6), day(8)]
        and orders.hours is None
        and orders.feeds == ["partner", "web"]
    )
    assert document["dates"] == ["2021-05-03", "2021-05-06", "2021-05-08"]
    assert orders.name.startswith("recon-260102-") and len(orders.name) <= 24
    assert "report: s3://bucket/reconciliation/2026-01-01/report.json" in orders.description
    daily, _ = by_jobs[("delivery_times_7_days", "etl_orders_7_days")]
    assert daily.hours is None and daily.feeds == ["app"] and daily.days == [day(2)]
    only_hours = backfill_configs(
        [m("orders", 6, 7, "web"), m("orders", 6, 9, "web")],
        nodes=NODES,
        owner="@a",
        checked_on=date(2026, 1, 2),
        report_uri="r.json",
    )
    assert only_hours[0][0].hours == [7, 9]
    again = backfill_configs(
        roots,
        nodes=NODES,
        owner="@data-platform",
        checked_on=date(2026, 1, 2),
        report_uri="s3://bucket/reconciliation/2026-01-01/report.json",
    )
    assert [c.name for c, _ in again] == [c.name for c, _ in configs]  # same findings, same names


def test_a_long_report_link_keeps_the_description_valid():
    uri = "s3://bucket/" + "x" * 300 + "/report.json"
    tables = [m("orders", n, 1, "web") for n in range(1, 30, 2)]
    [(config, _)] = backfill_configs(tables, nodes=NODES, owner="@a", checked_on=D, report_uri=uri)
    assert uri in config.description and len(config.description) <= 500


# -- backfills in flight (moto) ----------------------------------------------------------------
def _plan(backfill_id: str, step: str, dates: list[str], hours=None, feeds=None) -> Plan:
    return Plan.model_validate(
        {
            "backfill_id": backfill_id,
            "name": backfill_id[:10],
            "owner": "@a",
            "created_at": "2026-01-01T00:00:00Z",
            "roots": [{"namespace": FOOD, "name": step}],
            "dates": dates,
            "waves": [
                {
                    "index": 0,
                    "steps": [
                        {
                            "id": step,
                            "job": {"namespace": FOOD, "name": step},
                            "dag_id": step,
                            "kind": "spark",
                            "transform": step,
                            "dates": dates,
                            "hours": hours,
                            "feeds": feeds,
                            "reason": "root",
                        }
                    ],
                }
            ],
        }
    )


def test_mismatches_a_backfill_in_flight_repairs_are_dropped():
    plans = [
        _plan("active-00000001", "etl_orders", ["2021-05-06"], hours=[7], feeds=["web"]),
        _plan("queued-00000002", "etl_orders_7_days", ["2021-05-02", "2021-05-03"]),
    ]
    found = [
        m("orders", 6, 7, "web"),
        m("orders", 6, 8, "web"),
        m("orders", 6, 7, "app"),
        m("orders_7_days", 3, None, "app"),
        m("orders_7_days", 4, None, "app"),
    ]
    uncovered, covered = split_covered(found, nodes=NODES, plans=plans)
    assert covered == {found[0]: "active-00000001", found[3]: "queued-00000002"}
    assert uncovered == sorted([found[1], found[2], found[4]])


@pytest.fixture
def aws(mocked_aws):
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="configs")
    ddb = boto3.client("dynamodb", region_name="us-east-1")
    create_table(ddb, "StatusTable", table_name="status")
    return s3, ddb


def test_in_flight_plans_are_read_from_the_config_bucket(aws):
    s3, ddb = aws
    store = StatusStore(table_name="status", dynamodb_client=ddb)
    for backfill, state in (
        ("running-00000001", BackfillState.RUNNING),
        ("done-00000002", BackfillState.SUCCEEDED),
        ("planned-00000003", BackfillState.PLANNED),
        ("received-00000004", BackfillState.RECEIVED),
        ("rejected-00000005", BackfillState.REJECTED),
    ):
        store.create(backfill, attributes={"name": backfill[:7], "owner": "@a"})
        if state in (BackfillState.PLANNED, BackfillState.SUCCEEDED):
            store.transition(backfill, BackfillState.PLANNED, detail="planned")
        if state is BackfillState.SUCCEEDED:
            store.transition(backfill, state, detail="done")
        if state is BackfillState.REJECTED:
            store.transition(backfill, state, detail="refused")
        if state is BackfillState.RUNNING:
            store.transition(backfill, BackfillState.PLANNED, detail="planned")
            store.transition(backfill, BackfillState.TRIGGERED, detail="triggered")
            store.transition(backfill, state, detail="running")
    ids = in_flight_ids(dynamodb_client=ddb, table_name="status")
    # RECEIVED counts: a trigger attempt that died after the DAG run was created leaves one
    assert ids == ["planned-00000003", "received-00000004", "running-00000001"]
    uri = plan_uri(bucket="configs", backfills_prefix="backfills/", backfill_id="running-00000001")
    assert uri == "s3://configs/backfills/running-00000001/plan.json"
    s3.put_object(
        Bucket="configs",
        Key="backfills/running-00000001/plan.json",
        Body=_plan("running-00000001", "etl_orders", ["2021-05-06"]).to_json().encode(),
    )
    gone = plan_uri(bucket="configs", backfills_prefix="backfills", backfill_id="planned-00000003")
    plans = in_flight_plans([uri, gone], s3_client=s3)  # a plan that is gone is skipped
    assert [p.backfill_id for p in plans] == ["running-00000001"]
    s3.put_object(Bucket="configs", Key="backfills/bad/plan.json", Body=b'{"not": "a plan"}')
    with pytest.raises(InFlightPlansError, match="not a plan document"):
        in_flight_plans(["s3://configs/backfills/bad/plan.json"], s3_client=s3)
    with pytest.raises(InFlightPlansError, match="cannot read a plan in flight.*AccessDenied"):
        in_flight_plans([uri], s3_client=_Denied())


class _Denied:
    """An S3 client whose reads are refused, as for a role without s3:GetObject."""

    def get_object(self, **_):
        from botocore.exceptions import ClientError

        raise ClientError({"Error": {"Code": "AccessDenied", "Message": "denied"}}, "GetObject")


# -- report and summary ------------------------------------------------------------------------
def test_the_report_round_trips_and_the_summary_lists_findings_and_submissions():
    root, explained = m("orders", 6, 7, "web"), m("orders_7_days", 6, None, "web")
    report = ReconciliationReport(
        checked_at="2026-01-02T01:00:00+00:00",
        warehouse="s3a://lake",
        days=[day(5), day(6), day(7)],
        tables=[
            TableSummary(table="orders", job="etl_orders", partitions_compared=216, mismatches=1),
            TableSummary(table="orders_7_days", job="etl_orders_7_days", partitions_compared=9, mismatches=1),
        ],
        mismatches_found=2,
        mismatches_in_flight=0,
        mismatches_listed=[
            reported(root, job="etl_orders", explained_by=None, in_flight=None),
            reported(explained, job="etl_orders_7_days", explained_by="orders", in_flight=None),
        ],
        configs=[
            WrittenConfig(
                name="recon-260102-abcdef",
                uri="s3://b/reconciliation/2026-01-01/configs/x.yaml",
                jobs=["etl_orders"],
                days=1,
                hours=[7],
                feeds=["web"],
                mismatches=1,
            )
        ],
    )
    parsed = ReconciliationReport.from_json(report.to_json())
    assert parsed == report and json.loads(report.to_json())["mismatches_listed"][1]["role"] == "explained"
    message = reconciliation_message(
        report=report,
        report_uri="s3://b/r.json",
        submitted=["s3://b/incoming/reconciliation/recon-260102-abcdef.yaml"],
    )
    blocks = json.dumps([block.to_dict() for block in message.blocks])
    assert "2 mismatched partitions" in message.text and "1 configs submitted" in message.text
    assert (
        "`orders` on 2021-05-06" in blocks and "recon-260102-abcdef" in blocks and "s3://b/r.json" in blocks
    )
    quiet = reconciliation_message(
        report=ReconciliationReport(
            **{
                **report.model_dump(),
                "mismatches_found": 0,
                "mismatches_listed": [],
                "configs": [],
                "tables": [],
            }
        ),
        report_uri="s3://b/r.json",
        submitted=[],
    )
    assert "every table matches" in quiet.text


def test_configs_from_the_job_are_valid_configs():
    [(config, document)] = backfill_configs(
        [m("orders", 6, 7, "web")], nodes=NODES, owner="jane@example.com", checked_on=D, report_uri="r.json"
    )
    assert parse_config(document) == config


def test_the_published_schema_is_current_and_accepts_the_example():
    import jsonschema
    import yaml

    from backfill_orchestrator.reconciliation.rules import rules_json_schema

    published = json.loads((REPO / "docs" / "schemas" / "reconciliation.schema.json").read_text())
    assert published == rules_json_schema()  # regenerate with rules_json_schema() when the model changes
    example = yaml.safe_load((REPO / "examples" / "reconciliation.yaml").read_text())
    jsonschema.Draft202012Validator(published).validate(example)
    example["tables"][0]["grain"] = ["hour"]
    assert not jsonschema.Draft202012Validator(published).is_valid(example)


# -- the job's input checks, before any Spark ----------------------------------------------------
@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"--rules": "missing.yaml"}, "missing.yaml: no such file"),
        ({"--catalog": "missing-catalog.yaml"}, "missing-catalog.yaml: no such file"),
        ({"--warehouse": "no-such-dir"}, "warehouse no-such-dir: no such directory"),
        ({"--registry": "nowhere:REGISTRY"}, "--registry nowhere:REGISTRY: cannot import nowhere"),
        ({"--in-flight-plan": "bad-plan.json"}, "bad-plan.json: not a plan document"),
    ],
)
def test_bad_inputs_exit_2_and_write_nothing(tmp_path, monkeypatch, capsys, change, expected):
    from spark_jobs.engine import reconcile_job

    monkeypatch.chdir(tmp_path)
    (tmp_path / "warehouse").mkdir()
    (tmp_path / "bad-plan.json").write_text('{"plan_version": 1}')
    arguments = {
        "--warehouse": "warehouse",
        "--rules": str(REPO / "examples" / "reconciliation.yaml"),
        "--catalog": str(REPO / "examples" / "catalog.yaml"),
        "--report": "out/report.json",
        "--configs-out": "out/configs",
        "--window-days": "2",
        **change,
    }
    argv = [item for pair in arguments.items() for item in pair]
    assert reconcile_job.main(argv, today=date(2026, 1, 2)) == 2
    assert expected in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
