"""The demo's data check (`backfill_local.demo_spark.DemoSpark.differences`): the processed
tables compared with the clean run row by row, side by side, with the clean run read at the
time of the check or kept in memory beforehand (`keep_reference`); both must find the same."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from backfill_local.demo_spark import DemoSpark

pytestmark = pytest.mark.slow


def _damage(warehouse: Path) -> None:
    """One partition of orders gone, one file of top_delivery_times there twice."""
    orders = sorted((warehouse / "processed" / "orders").glob("day=*/hour=*/feed=*"))
    shutil.rmtree(orders[0])
    part = sorted((warehouse / "processed" / "top_delivery_times").rglob("part-*.parquet"))[0]
    shutil.copy2(part, part.with_name(f"part-99999-{part.name.removeprefix('part-')}"))


@pytest.mark.parametrize("kept", [False, True], ids=["read-at-check", "kept-reference"])
def test_equal_tables_pass_and_lost_or_extra_rows_are_named(
    spark: SparkSession, pristine: Path, warehouse: Path, kept: bool
) -> None:
    demo = DemoSpark(spark)
    if kept:
        demo.keep_reference(pristine)
    lines: list[str] = []
    assert demo.differences(repaired=warehouse, reference=pristine, report=lines.append) == []
    assert [line.split(":")[0].strip() for line in lines] == [
        "orders",
        "orders_7_days",
        "delivery_7_days",
        "top_delivery_times",
    ]

    _damage(warehouse)
    found = demo.differences(repaired=warehouse, reference=pristine, report=lambda line: None)
    assert [entry.split(":")[0] for entry in found] == ["orders", "top_delivery_times"], found
    assert "unexpected 0" in found[0] and "missing 0" not in found[0], found
    assert "missing 0" in found[1] and "unexpected 0" not in found[1], found
