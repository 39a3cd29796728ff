"""The demo's own Spark work in one session: the sample data (generate, clean run, break) and
the final comparison of the repaired warehouse with the clean run.

One JVM for all of it (started once, while Airflow boots) instead of one per command: each
start costs several seconds of CPU on a small machine. The backfill's Spark job is not run
here: Airflow runs it, as in a deployment. The JVM's output goes to a log file."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# Small data, two cores: a few shuffle partitions instead of 200, no web UI, partition
# directories listed by the driver (a listing job of one task per path costs more here).
DEMO_SPARK_SETTINGS = {
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
}


def submit_args() -> str:
    """The same settings for the backfill's Spark job (its Airflow task starts the JVM)."""
    return " ".join(f"--conf {key}={value}" for key, value in DEMO_SPARK_SETTINGS.items()) + " pyspark-shell"


@contextlib.contextmanager
def demo_spark(*, log: Path) -> Iterator[DemoSpark]:
    from spark_jobs.engine.session import spark_session

    with contextlib.ExitStack() as stack:
        with _stderr_to(log):
            spark = stack.enter_context(spark_session("backfill-demo", extra=DEMO_SPARK_SETTINGS))
        spark.sparkContext.setLogLevel("ERROR")
        yield DemoSpark(spark)


@contextlib.contextmanager
def _stderr_to(log: Path) -> Iterator[None]:
    """The JVM (and its Python workers) inherit file descriptor 2 when the session starts:
    point it at the log only for that moment."""
    log.parent.mkdir(parents=True, exist_ok=True)
    saved = os.dup(2)
    try:
        with log.open("ab") as out:
            os.dup2(out.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


class DemoSpark:
    def __init__(self, spark: Any):
        self.spark = spark

    def generate(self, *, warehouse: Path, start: str, days: int) -> int:
        from datetime import date

        from spark_jobs.sample.data import GeneratorSettings, generate

        warehouse.mkdir(parents=True, exist_ok=True)
        settings = GeneratorSettings(start=date.fromisoformat(start), days=days)
        return generate(spark=self.spark, warehouse=str(warehouse), settings=settings)

    def run_clean(self, *, warehouse: Path) -> dict[str, int]:
        from spark_jobs.engine.runner import run_everything
        from spark_jobs.sample.transforms import FOOD_DELIVERY

        return run_everything(spark=self.spark, warehouse=str(warehouse), registry=FOOD_DELIVERY)

    def break_orders(self, *, warehouse: Path, days: str) -> list[str]:
        from spark_jobs.engine import cli_args
        from spark_jobs.engine.scope import Scope
        from spark_jobs.sample.data import break_partitions
        from spark_jobs.sample.tables import ORDERS

        scope = Scope(days=cli_args.day_list(days))
        return break_partitions(
            spark=self.spark, warehouse=str(warehouse), table=ORDERS, scope=scope, mode="drop"
        )

    def differences(self, *, repaired: Path, reference: Path, report: Any = print) -> list[str]:
        """Differences between the processed layers (empty: equal), row by row as multisets:
        one aggregation per table counts each distinct row on both sides (what `exceptAll`
        both ways tells, in one pass instead of three)."""
        from pyspark.sql import functions as F

        from spark_jobs.engine.table_io import read_table
        from spark_jobs.sample.tables import PROCESSED_TABLES

        found = []
        for table in PROCESSED_TABLES:
            got = read_table(spark=self.spark, warehouse=str(repaired), table=table)
            want = read_table(spark=self.spark, warehouse=str(reference), table=table)
            columns = want.columns
            both = got.select(*columns, F.lit(1).alias("_got")).unionByName(
                want.select(*columns, F.lit(-1).alias("_got"))
            )
            per_row = both.groupBy(*columns).agg(
                F.sum("_got").alias("surplus"),
                F.sum(F.when(F.col("_got") < 0, 1).otherwise(0)).alias("clean"),
            )
            totals = per_row.agg(
                F.sum(F.greatest(-F.col("surplus"), F.lit(0))).alias("missing"),
                F.sum(F.greatest(F.col("surplus"), F.lit(0))).alias("extra"),
                F.sum("clean").alias("rows"),
            ).first()
            missing, extra, rows = (int(totals[name] or 0) for name in ("missing", "extra", "rows"))
            report(f"   {table.name}: {rows} rows in the clean run; missing {missing}, unexpected {extra}")
            if missing or extra or rows == 0:
                found.append(f"{table.name}: missing {missing}, unexpected {extra}, clean rows {rows}")
        return found
