"""One local SparkSession for every Spark test, with an embedded Hive metastore (Derby, in the
session's temporary directory; started only when a test touches the catalog), and a small
generated warehouse with its clean run, built once and copied for each test that changes it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from backfill_local.hive import hive_settings
from spark_jobs.engine.runner import run_everything
from spark_jobs.engine.session import configure
from spark_jobs.sample.data import GeneratorSettings, generate
from spark_jobs.sample.transforms import FOOD_DELIVERY
from tests.support.spark import DAYS, HOURS_PER_DAY, ORDERS_PER_HOUR, START


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    session = (
        SparkSession.builder.config(map=hive_settings(tmp_path_factory.mktemp("metastore")))
        .master("local[2]")
        .appName("spark-jobs-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.scheduler.mode", "FAIR")
        .config("spark.sql.maxMetadataStringLength", "100000")  # whole PartitionFilters in plan strings
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    configure(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def pristine(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Generated raw data and the clean run over it. Read-only: copy it to change it."""
    root = tmp_path_factory.mktemp("pristine") / "warehouse"
    root.mkdir()
    generate(
        spark=spark,
        warehouse=str(root),
        settings=GeneratorSettings(
            start=START, days=DAYS, orders_per_hour=ORDERS_PER_HOUR, hours_per_day=HOURS_PER_DAY
        ),
    )
    run_everything(spark=spark, warehouse=str(root), registry=FOOD_DELIVERY)
    return root


@pytest.fixture
def warehouse(pristine: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "warehouse"
    shutil.copytree(pristine, copy)
    return copy
