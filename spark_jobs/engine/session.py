"""The SparkSession every entry point uses, with the settings the job's correctness rests on."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from pyspark.sql import SparkSession

# Set on the session whether we created it or were handed one (Databricks, EMR notebooks):
# dynamic overwrite replaces only the partitions a write has rows for, and UTC makes
# `day`/`hour` the same on every cluster.
SQL_SETTINGS = {
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    "spark.sql.session.timeZone": "UTC",
    # A step's result is cached before it is written; let adaptive execution still coalesce
    # its shuffles (a few hundred near-empty tasks otherwise on small backfills).
    "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true",
}
# Only effective when this process starts the SparkContext: steps of a wave share the cores
# fairly, and logs are not interleaved with progress bars.
CONTEXT_SETTINGS = {"spark.scheduler.mode": "FAIR", "spark.ui.showConsoleProgress": "false"}


def configure(spark: SparkSession) -> SparkSession:
    for key, value in SQL_SETTINGS.items():
        spark.conf.set(key, value)
    return spark


@contextmanager
def spark_session(app_name: str, *, extra: Mapping[str, str] | None = None) -> Iterator[SparkSession]:
    """The active session if there is one (left running), else a new one (stopped on exit).

    The master comes from spark-submit or the platform; plain `python -m` runs get local[*]."""
    active = SparkSession.getActiveSession()
    if active is not None:
        yield configure(active)
        return
    builder = SparkSession.builder.appName(app_name)
    for key, value in {**CONTEXT_SETTINGS, **SQL_SETTINGS, **(extra or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    try:
        yield configure(spark)
    finally:
        spark.stop()
