"""Reconciliation closes the loop: break several tables on different days, hours and feeds;
reconciliation finds exactly those partitions, writes the configs that repair them (one per
root job, downstream left to the planner); planned and run, they bring the warehouse back to
a clean run; a second reconciliation finds nothing and writes nothing."""

from __future__ import annotations

import json
import shutil
from datetime import date, timedelta
from pathlib import Path

import pytest

from backfill_orchestrator.config import parse_config
from backfill_orchestrator.reconciliation import ReconciliationReport
from spark_jobs.engine import reconcile_job
from spark_jobs.engine.runner import run_everything, run_plan
from spark_jobs.engine.scope import Scope
from spark_jobs.sample.data import break_partitions
from spark_jobs.sample.tables import ORDERS, ORDERS_7_DAYS, RAW_ORDERS, TOP_DELIVERY_TIMES
from spark_jobs.sample.transforms import FOOD_DELIVERY
from tests.support.configs import REPO_ROOT
from tests.support.spark import DAYS, HOURS_PER_DAY, START, assert_tables_equal, plan_with_planner

pytestmark = pytest.mark.slow

TODAY = date(2026, 1, 2)
LATE_RAW_DAY, DROPPED_HOUR_DAY, CORRUPT_7_DAY, DROPPED_TOP_DAY, SOURCE_LOST_DAY = (
    date(2021, 5, 3),
    date(2021, 5, 6),
    date(2021, 5, 2),
    date(2021, 5, 1),
    date(2021, 5, 8),
)
LAST_DAY = START + timedelta(days=DAYS - 1)
FOOD = "food_delivery"


def _reconcile(
    warehouse: Path, out: Path, *extra: str
) -> tuple[int, ReconciliationReport | None, list[Path]]:
    report = out / "report.json"
    code = reconcile_job.main(
        [
            "--warehouse",
            str(warehouse),
            "--rules",
            str(REPO_ROOT / "examples" / "reconciliation.yaml"),
            "--catalog",
            str(REPO_ROOT / "examples" / "catalog.yaml"),
            "--report",
            str(report),
            "--configs-out",
            str(out / "configs"),
            "--days",
            f"{START}..{LAST_DAY}",
            "--owner",
            "@data-platform",
            *extra,
        ],
        today=TODAY,
    )
    parsed = ReconciliationReport.from_json(report.read_bytes()) if report.exists() else None
    configs = sorted((out / "configs").glob("*.yaml")) if (out / "configs").exists() else []
    return code, parsed, configs


def _break(spark, warehouse: Path) -> None:
    # Late raw orders on one day of one feed (every hour); one hour of one feed of processed
    # orders lost; a 7-day table half lost on another day and feed; a top-10 partition gone;
    # one hour of raw orders deleted at the source (its processed partition is now orphaned).
    break_partitions(
        spark=spark,
        warehouse=str(warehouse),
        table=RAW_ORDERS,
        scope=Scope(days=(LATE_RAW_DAY,), feeds=("partner",)),
        mode="late",
    )
    break_partitions(
        spark=spark,
        warehouse=str(warehouse),
        table=ORDERS,
        scope=Scope(days=(DROPPED_HOUR_DAY,), hours=(7,), feeds=("web",)),
        mode="drop",
    )
    break_partitions(
        spark=spark,
        warehouse=str(warehouse),
        table=ORDERS_7_DAYS,
        scope=Scope(days=(CORRUPT_7_DAY,), feeds=("app",)),
        mode="corrupt",
    )
    break_partitions(
        spark=spark,
        warehouse=str(warehouse),
        table=TOP_DELIVERY_TIMES,
        scope=Scope(days=(DROPPED_TOP_DAY,), feeds=("partner",)),
        mode="drop",
    )
    break_partitions(
        spark=spark,
        warehouse=str(warehouse),
        table=RAW_ORDERS,
        scope=Scope(days=(SOURCE_LOST_DAY,), hours=(4,), feeds=("app",)),
        mode="drop",
    )


def test_reconciliation_finds_the_damage_and_its_configs_repair_it(spark, warehouse, tmp_path, capsys):
    _break(spark, warehouse)
    reference = tmp_path / "reference"
    shutil.copytree(warehouse, reference)
    run_everything(
        spark=spark, warehouse=str(reference), registry=FOOD_DELIVERY
    )  # clean run over the same raw data

    code, report, config_files = _reconcile(warehouse, tmp_path / "first")
    assert code == 0, capsys.readouterr().err
    assert report is not None
    found = {(m.table, m.day, m.hour, m.feed, m.role, m.explained_by) for m in report.mismatches_listed}
    stale_7_days = {
        ("orders_7_days", DROPPED_HOUR_DAY + timedelta(days=n), None, "web", "explained", "orders")
        for n in range((LAST_DAY - DROPPED_HOUR_DAY).days + 1)
    }
    assert found == {
        *{("orders", LATE_RAW_DAY, hour, "partner", "root", None) for hour in range(HOURS_PER_DAY)},
        ("orders", DROPPED_HOUR_DAY, 7, "web", "root", None),
        ("orders", SOURCE_LOST_DAY, 4, "app", "root", None),
        *stale_7_days,  # recomputed from the damaged orders: explained by them, repaired downstream
        ("orders_7_days", CORRUPT_7_DAY, None, "app", "root", None),
        ("delivery_7_days", CORRUPT_7_DAY, None, "app", "explained", "orders_7_days"),
        ("top_delivery_times", DROPPED_TOP_DAY, None, "partner", "root", None),
    }
    assert report.mismatches_found == len(found) and report.mismatches_in_flight == 0
    late = next(m for m in report.mismatches_listed if m.table == "orders" and m.day == LATE_RAW_DAY)
    assert {d.check: (d.expected - d.actual) for d in late.diffs}["row_count"] == 3
    orphan = next(m for m in report.mismatches_listed if m.day == SOURCE_LOST_DAY)
    assert {d.check: d.expected for d in orphan.diffs}["row_count"] == 0

    configs = {
        tuple(j.name for j in c.jobs): c
        for c in (parse_config(p.read_bytes(), source=str(p)) for p in config_files)
    }
    assert set(configs) == {("etl_orders",), ("etl_orders_7_days",), ("delivery_times_7_days",)}
    orders = configs[("etl_orders",)]
    # every hour the warehouse has (tests/unit/test_reconciliation.py: all 24 make whole days)
    assert orders.days == [LATE_RAW_DAY, DROPPED_HOUR_DAY, SOURCE_LOST_DAY]
    assert orders.hours == list(range(HOURS_PER_DAY))
    assert orders.feeds == ["app", "partner", "web"]
    assert configs[("etl_orders_7_days",)].days == [CORRUPT_7_DAY] and configs[
        ("etl_orders_7_days",)
    ].feeds == ["app"]
    assert configs[("delivery_times_7_days",)].days == [DROPPED_TOP_DAY]
    for config in configs.values():
        assert config.jobs[0].namespace == FOOD and len(config.name) <= 24
        assert str(tmp_path / "first" / "report.json") in (config.description or "")
    assert sorted(c.name for c in report.configs) == sorted(c.name for c in configs.values())

    # A backfill already in flight for etl_orders: its mismatches get no second config.
    in_flight = tmp_path / "in-flight-plan.json"
    in_flight.write_text(plan_with_planner(orders).to_json())
    code, covered_report, covered_files = _reconcile(
        warehouse, tmp_path / "covered", "--in-flight-plan", str(in_flight)
    )
    assert code == 0 and covered_report is not None
    # the late day's every hour, the dropped hour, the hour lost at the source, the stale 7-day days
    assert covered_report.mismatches_in_flight == HOURS_PER_DAY + 2 + len(stale_7_days)
    assert sorted(parse_config(p.read_bytes()).jobs[0].name for p in covered_files) == [
        "delivery_times_7_days",
        "etl_orders_7_days",
    ]

    for config in configs.values():  # the whole flow: the real planner, then the generic Spark job
        run = run_plan(
            spark=spark, plan=plan_with_planner(config), warehouse=str(warehouse), registry=FOOD_DELIVERY
        )
        assert run.status == "succeeded", [step.error for step in run.steps]
        if config is orders:
            assert "day=2021-05-08/hour=4/feed=app" in run.step("etl_orders").partitions_deleted
    assert_tables_equal(spark, warehouse, reference)

    code, again, again_files = _reconcile(warehouse, tmp_path / "second")
    assert code == 0 and again is not None
    assert again.mismatches_found == 0 and again.configs == [] and again_files == []
    assert all(table.partitions_compared > 0 for table in again.tables)
    assert "0 mismatched partitions" in capsys.readouterr().out


def test_rules_that_do_not_fit_the_pipeline_are_located_and_nothing_is_written(
    spark, warehouse, tmp_path, capsys
):
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        json.dumps(
            {
                "version": 1,
                "tables": [
                    {
                        "table": "orders",
                        "upstream": ["menu_items"],
                        "grain": ["day", "hour"],
                        "checks": [
                            {"measure": "sum", "column": "comment"},
                            {"measure": "checksum", "columns": ["order_id", "nope"]},
                        ],
                    },
                    {
                        "table": "orders_7_days",
                        "upstream": ["orders", "menu_items"],
                        "grain": ["day", "hour"],
                        "checks": [{"measure": "row_count"}],
                    },
                ],
            }
        )
    )
    code = reconcile_job.main(
        [
            "--warehouse",
            str(warehouse),
            "--rules",
            str(rules),
            "--catalog",
            str(REPO_ROOT / "examples" / "catalog.yaml"),
            "--report",
            str(tmp_path / "report.json"),
            "--configs-out",
            str(tmp_path / "configs"),
            "--window-days",
            "2",
        ],
        today=TODAY,
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "tables[0].upstream: transform etl_orders reads raw_orders, not menu_items" in err
    assert "tables[0].checks[0].column: comment is string, not a number" in err
    assert "tables[0].checks[1].columns[1]: no column 'nope' in orders" in err
    assert "tables[1].grain[1]: orders_7_days is not partitioned by hour" in err
    assert not (tmp_path / "report.json").exists() and not (tmp_path / "configs").exists()


def test_the_catalog_must_name_the_job_of_every_table(spark, warehouse, tmp_path, capsys):
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text("version: 1\njobs:\n  - {namespace: food_delivery, name: etl_orders, kind: spark}\n")
    code = reconcile_job.main(
        [
            "--warehouse",
            str(warehouse),
            "--rules",
            str(REPO_ROOT / "examples" / "reconciliation.yaml"),
            "--catalog",
            str(catalog),
            "--report",
            str(tmp_path / "r.json"),
            "--configs-out",
            str(tmp_path / "c"),
            "--days",
            "2021-05-02",
        ],
        today=TODAY,
    )
    assert code == 2
    assert (
        "tables[1].table: no spark job in the catalog runs transform 'etl_orders_7_days'"
        in capsys.readouterr().err
    )


def test_the_default_window_is_the_days_before_today():
    args = reconcile_job.build_parser().parse_args(
        [
            "--warehouse",
            "w",
            "--rules",
            "r",
            "--catalog",
            "c",
            "--report",
            "p",
            "--configs-out",
            "o",
            "--window-days",
            "3",
        ]
    )
    assert reconcile_job.window_days(args, date(2021, 5, 10)) == (
        date(2021, 5, 7),
        date(2021, 5, 8),
        date(2021, 5, 9),
    )
