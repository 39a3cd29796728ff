"""A write killed with its JVM (Airflow SIGKILLs a cancelled task's process group) leaves a
hidden `.spark-staging-<uuid>` directory in the table; the next write of the table removes it
(spark_jobs/engine/staging.py) and keeps a concurrent writer's, and the table is the clean one."""

from __future__ import annotations

import shutil
import uuid
from datetime import date

import pytest
from chispa import assert_df_equality

from spark_jobs.engine.runner import run_plan
from spark_jobs.engine.table_io import read_table
from spark_jobs.sample.tables import ORDERS
from spark_jobs.sample.transforms import FOOD_DELIVERY
from tests.support.spark import hand_plan, hand_step

pytestmark = pytest.mark.slow
DAYS = [date(2021, 5, 3), date(2021, 5, 4)]


def test_the_next_write_removes_a_killed_writes_staging_and_the_table_equals_a_clean_run(
    spark, warehouse, pristine, capsys
):
    orders = warehouse / ORDERS.location
    shutil.rmtree(orders / "day=2021-05-03")  # the damage the backfill repairs
    # What killed writes leave: one emptied by Spark's abort before the JVM died, one killed
    # while its tasks wrote (real output files of the backfill's days in the task attempt's
    # directory), and a concurrent backfill's, writing another day of the same table.
    emptied = orders / f".spark-staging-{uuid.uuid4()}"
    emptied.mkdir()
    mid_task = (
        orders
        / f".spark-staging-{uuid.uuid4()}"
        / "_temporary"
        / "0"
        / "_temporary"
        / "attempt_202605010000_0003_m_000000_0"
    )
    concurrent = (
        orders
        / f".spark-staging-{uuid.uuid4()}"
        / "_temporary"
        / "0"
        / "_temporary"
        / "attempt_202605010000_0007_m_000000_0"
    )
    for staging, day in ((mid_task, "2021-05-04"), (concurrent, "2021-05-08")):
        shutil.copytree(
            pristine / ORDERS.location / f"day={day}" / "hour=1", staging / f"day={day}" / "hour=1"
        )
    # and one killed before its first file: the day directories of its task, nothing in them
    before_a_file = (
        orders
        / f".spark-staging-{uuid.uuid4()}"
        / "_temporary"
        / "0"
        / "_temporary"
        / "attempt_202605010000_0004_m_000000_0"
    )
    (before_a_file / "day=2021-05-03" / "hour=0").mkdir(parents=True)

    report = run_plan(
        spark=spark,
        plan=hand_plan([hand_step("etl_orders", DAYS)]),
        warehouse=str(warehouse),
        registry=FOOD_DELIVERY,
    )

    assert report.succeeded, report
    assert sorted(p.name for p in orders.glob(".spark-staging-*")) == [concurrent.parents[3].name]
    assert not emptied.exists() and not mid_task.parents[3].exists() and not before_a_file.parents[3].exists()
    assert "a killed write's staging (empty)" in capsys.readouterr().err
    assert_df_equality(
        read_table(spark=spark, warehouse=str(warehouse), table=ORDERS),
        read_table(spark=spark, warehouse=str(pristine), table=ORDERS),
        ignore_row_order=True,
        ignore_column_order=False,
    )
