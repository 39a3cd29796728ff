"""The sample pipeline: a deterministic generator, breakage that a backfill can repair, and
its command line."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from spark_jobs.engine.scope import Scope
from spark_jobs.engine.table_io import read_table
from spark_jobs.sample import pipeline as sample_pipeline
from spark_jobs.sample.data import GeneratorSettings, break_partitions, raw_orders
from spark_jobs.sample.tables import ORDERS, ORDERS_7_DAYS, RAW_ORDERS
from tests.support.spark import file_snapshot

pytestmark = pytest.mark.slow

SETTINGS = GeneratorSettings(start=date(2021, 5, 1), days=2, orders_per_hour=6, seed=11)


def test_generator_is_deterministic_and_sized_by_its_parameter(spark):
    first, second = raw_orders(spark, SETTINGS), raw_orders(spark, SETTINGS)
    assertDataFrameEqual(first, second, checkRowOrder=False)
    other_seed = raw_orders(
        spark, GeneratorSettings(start=SETTINGS.start, days=2, orders_per_hour=6, seed=12)
    )
    assert first.exceptAll(other_seed).count() > 0

    per_hour = (
        first.groupBy("day", "hour", "feed").count().agg(F.min("count"), F.max("count"), F.count("*")).first()
    )
    assert per_hour[2] == 2 * 24 * 3  # every day, hour and feed has orders
    assert 3 <= per_hour[0] and per_hour[1] <= 9  # half to one and a half times orders_per_hour
    assert first.select("order_id").distinct().count() == first.count()
    bigger = raw_orders(spark, GeneratorSettings(start=SETTINGS.start, days=2, orders_per_hour=60, seed=11))
    assert bigger.count() > 5 * first.count()
    mornings = raw_orders(spark, replace(SETTINGS, hours_per_day=5))
    assert sorted(row.hour for row in mornings.select("hour").distinct().collect()) == [0, 1, 2, 3, 4]
    assert mornings.groupBy("day", "hour", "feed").count().count() == 2 * 5 * 3
    for hours_per_day in (0, 25):
        with pytest.raises(ValueError, match=f"hours_per_day is 1 to 24, not {hours_per_day}"):
            replace(SETTINGS, hours_per_day=hours_per_day)


def test_corrupt_loses_rows_and_late_is_repeatable(spark, warehouse):
    scope = Scope(days=(date(2021, 5, 2),), hours=(5,), feeds=("web",))
    before = read_table(spark=spark, warehouse=str(warehouse), table=ORDERS, scope=scope).count()
    break_partitions(spark=spark, warehouse=str(warehouse), table=ORDERS, scope=scope, mode="corrupt")
    assert read_table(spark=spark, warehouse=str(warehouse), table=ORDERS, scope=scope).count() == before // 2

    raw_before = read_table(spark=spark, warehouse=str(warehouse), table=RAW_ORDERS, scope=scope).count()
    break_partitions(spark=spark, warehouse=str(warehouse), table=RAW_ORDERS, scope=scope, mode="late")
    once = read_table(spark=spark, warehouse=str(warehouse), table=RAW_ORDERS, scope=scope)
    assert once.count() == raw_before + 3
    once = sorted(map(str, once.collect()))  # read now: the next break rewrites these files
    break_partitions(spark=spark, warehouse=str(warehouse), table=RAW_ORDERS, scope=scope, mode="late")
    twice = read_table(spark=spark, warehouse=str(warehouse), table=RAW_ORDERS, scope=scope).collect()
    assert once == sorted(map(str, twice))


def test_break_cli(spark, warehouse, capsys):
    code = sample_pipeline.main(
        [
            "break",
            "--warehouse",
            str(warehouse),
            "--days",
            "2021-05-03..2021-05-04",
            "--table",
            "orders_7_days",
            "--feeds",
            "app",
        ]
    )
    assert code == 0
    assert "drop: 2 partitions of orders_7_days" in capsys.readouterr().out
    remaining = read_table(spark=spark, warehouse=str(warehouse), table=ORDERS_7_DAYS)
    assert remaining.where("feed = 'app' and day in ('2021-05-03', '2021-05-04')").count() == 0

    before = file_snapshot(warehouse)
    assert (
        sample_pipeline.main(
            [
                "break",
                "--warehouse",
                str(warehouse),
                "--days",
                "2021-05-03",
                "--layer",
                "raw",
                "--mode",
                "corrupt",
            ]
        )
        == 2
    )
    assert "does not apply to the raw layer" in capsys.readouterr().err
    assert sample_pipeline.main(["break", "--warehouse", str(warehouse), "--days", "2020-01-01"]) == 2
    assert "no partition of orders matches" in capsys.readouterr().err
    assert sample_pipeline.main(["break", "--warehouse", str(warehouse), "--days", "2021-05-40"]) == 2
    assert "expected a date as YYYY-MM-DD" in capsys.readouterr().err
    generate_25 = ["generate", "--warehouse", str(warehouse), "--start", "2021-05-01", "--days", "1"]
    assert sample_pipeline.main([*generate_25, "--hours-per-day", "25"]) == 2
    assert "hours per day are 1 to 24, got '25'" in capsys.readouterr().err
    assert file_snapshot(warehouse) == before


def test_generate_and_run_clean_cli(spark, tmp_path, capsys):
    root = tmp_path / "small"
    assert (
        sample_pipeline.main(
            [
                "generate",
                "--warehouse",
                str(root),
                "--start",
                "2021-05-01",
                "--days",
                "1",
                "--orders-per-hour",
                "2",
                "--hours-per-day",
                "4",
                "--feeds",
                "web",
            ]
        )
        == 0
    )
    assert sample_pipeline.main(["run-clean", "--warehouse", str(root)]) == 0
    out = capsys.readouterr().out
    raw = read_table(spark=spark, warehouse=str(root), table=RAW_ORDERS).count()
    assert f"generated {raw} raw orders" in out and f"orders: {raw} rows" in out
    hours = read_table(spark=spark, warehouse=str(root), table=RAW_ORDERS).select("hour").distinct()
    assert sorted(row.hour for row in hours.collect()) == [0, 1, 2, 3]
    assert (
        read_table(spark=spark, warehouse=str(root), table=ORDERS_7_DAYS).select("day").distinct().count()
        == 7
    )
