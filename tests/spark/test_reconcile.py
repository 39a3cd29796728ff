"""Reconciliation: find what the processed layer lost or never got, write a config for it,
and check that planning and running that config repairs the pipeline."""

from __future__ import annotations

import shutil
from datetime import date

import pytest

from backfill_orchestrator.config import JobRef, parse_config
from spark_jobs.engine.runner import run_everything, run_plan
from spark_jobs.engine.scope import Scope
from spark_jobs.sample import reconcile
from spark_jobs.sample.data import break_partitions
from spark_jobs.sample.reconciliation import Mismatch, backfill_config, find_mismatches
from spark_jobs.sample.tables import ORDERS, RAW_ORDERS
from spark_jobs.sample.transforms import FOOD_DELIVERY
from tests.spark.conftest import assert_tables_equal, plan_with_planner

pytestmark = pytest.mark.slow

LATE_DAY, DROPPED_DAY, SOURCE_LOST_DAY = date(2021, 5, 3), date(2021, 5, 6), date(2021, 5, 8)
TODAY = date(2026, 1, 2)


def test_reconciliation_config_planned_and_run_repairs_the_pipeline(spark, warehouse, tmp_path, capsys):
    # Three kinds of damage on noncontiguous days: late raw data, a lost processed
    # partition, and raw data deleted at the source (its processed partition is now orphaned).
    break_partitions(spark=spark, warehouse=str(warehouse), table=RAW_ORDERS,
                     scope=Scope(days=(LATE_DAY,), hours=(5,), feeds=("partner",)), mode="late")
    break_partitions(spark=spark, warehouse=str(warehouse), table=ORDERS,
                     scope=Scope(days=(DROPPED_DAY,), hours=(0, 23), feeds=("web",)), mode="drop")
    break_partitions(spark=spark, warehouse=str(warehouse), table=RAW_ORDERS,
                     scope=Scope(days=(SOURCE_LOST_DAY,), hours=(7,), feeds=("app",)), mode="drop")
    reference = tmp_path / "reference"
    shutil.copytree(warehouse, reference)
    run_everything(spark=spark, warehouse=str(reference), registry=FOOD_DELIVERY)  # a clean run over the same raw data

    mismatches = find_mismatches(spark=spark, warehouse=str(warehouse))
    assert [(m.day, m.hour, m.feed) for m in mismatches] == [
        (LATE_DAY, 5, "partner"), (DROPPED_DAY, 0, "web"), (DROPPED_DAY, 23, "web"), (SOURCE_LOST_DAY, 7, "app")
    ]
    late = mismatches[0]
    assert late.raw_rows == late.processed_rows + 3
    assert mismatches[1].processed_rows == 0 and mismatches[3].raw_rows == 0

    out = tmp_path / "incoming" / "reconcile.yaml"
    code = reconcile.main(
        ["--warehouse", str(warehouse), "--out", str(out), "--owner", "jane.doe@example.com"], today=TODAY
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert printed.count("mismatch ") == 4 and "wrote" in printed
    config = parse_config(out.read_bytes(), source=str(out))
    assert config.name == "reconcile-20260102" and config.mode == "batch"
    assert config.jobs == [JobRef(namespace="food_delivery", name="etl_orders")]
    assert config.days == [LATE_DAY, DROPPED_DAY, SOURCE_LOST_DAY]
    assert config.hours == [0, 5, 7, 23] and config.feeds == ["app", "partner", "web"]

    report = run_plan(
        spark=spark, plan=plan_with_planner(config), warehouse=str(warehouse), registry=FOOD_DELIVERY
    )
    assert report.status == "succeeded", [step.error for step in report.steps]
    assert "day=2021-05-08/hour=7/feed=app" in report.step("etl_orders").partitions_deleted
    assert find_mismatches(spark=spark, warehouse=str(warehouse)) == []
    assert_tables_equal(spark, warehouse, reference)

    again = tmp_path / "again.yaml"
    assert reconcile.main(["--warehouse", str(warehouse), "--out", str(again)], today=TODAY) == 0
    assert not again.exists()
    assert "no config written" in capsys.readouterr().out


def test_a_config_the_rules_refuse_is_not_written(spark, warehouse, tmp_path, capsys):
    break_partitions(spark=spark, warehouse=str(warehouse), table=ORDERS,
                     scope=Scope(days=(DROPPED_DAY,), hours=(3,), feeds=("app",)), mode="corrupt")
    out = tmp_path / "bad.yaml"
    code = reconcile.main(["--warehouse", str(warehouse), "--out", str(out), "--owner", "not an owner"], today=TODAY)
    assert code == 2
    assert not out.exists()
    assert "owner: must be an email address or a Slack handle" in capsys.readouterr().err


def test_restricting_to_days_only_compares_those(spark, warehouse, tmp_path):
    break_partitions(spark=spark, warehouse=str(warehouse), table=ORDERS,
                     scope=Scope(days=(DROPPED_DAY,), hours=(3,), feeds=("app",)), mode="drop")
    assert find_mismatches(spark=spark, warehouse=str(warehouse), scope=Scope(days=(LATE_DAY,))) == []
    out = tmp_path / "out.yaml"
    assert reconcile.main(["--warehouse", str(warehouse), "--out", str(out), "--days", "2021-05-05..2021-05-07"],
                          today=TODAY) == 0
    assert parse_config(out.read_bytes()).days == [DROPPED_DAY]


def test_a_warehouse_without_raw_data_exits_2(spark, tmp_path, capsys):
    assert reconcile.main(["--warehouse", str(tmp_path / "nowhere"), "--out", str(tmp_path / "x.yaml")]) == 2
    assert "no such directory" in capsys.readouterr().err
    assert reconcile.main(["--warehouse", str(tmp_path), "--out", str(tmp_path / "x.yaml")]) == 2
    assert "no raw orders at" in capsys.readouterr().err
    assert not (tmp_path / "x.yaml").exists()


def test_config_uses_ranges_and_leaves_out_a_full_day_of_hours():
    days = [date(2021, 6, 4), date(2021, 6, 10), date(2021, 6, 11), date(2021, 6, 12)]
    mismatches = [Mismatch(day, hour, "web", 1, 0) for day in days for hour in range(24)]
    document = backfill_config(mismatches, name="recon", owner="@me", namespace="food_delivery", checked_on=TODAY)
    assert document["dates"] == ["2021-06-04", {"start": "2021-06-10", "end": "2021-06-12"}]
    assert "hours" not in document and document["feeds"] == ["web"]
    assert parse_config(document).days == days
