"""Reading and writing warehouse tables: the job's only IO.

Reads filter on partition columns so that Spark prunes partitions (only the named
directories are listed into the scan and opened). Writes replace exactly the partitions of
a scope: dynamic partition overwrite for the partitions that have rows, and deletion of the
scope's partitions that came out empty (dynamic overwrite alone would leave those stale).
Partitions outside the scope are never touched."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING
from urllib.parse import unquote

from pyspark import StorageLevel

from backfill_orchestrator.contracts.publish import TableKind
from backfill_orchestrator.errors import UserError
from spark_jobs.engine.phases import PhaseClock
from spark_jobs.engine.scope import ALL, DAY, HOUR, Scope
from spark_jobs.engine.staging import StagingSweep
from spark_jobs.engine.storage import HadoopFs
from spark_jobs.engine.tables import Table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from spark_jobs.engine.catalogs import Catalogs

Partition = tuple[tuple[str, object], ...]  # (("day", date), ("hour", 3), ("feed", "web"))
TASKS_END_TIMEOUT_SECONDS = 30.0  # a cancelled task stops within seconds (the job's SIGTERM budget is 60)


class UnpartitionedTableError(UserError, ValueError):
    """Partition-wise writes need a partitioned table."""


def partition_path(partition: Partition) -> str:
    """`day=2021-06-04/hour=3/feed=web`, as Spark lays the directories out."""
    return "/".join(f"{column}={_format(value)}" for column, value in partition)


def _format(value: object) -> str:
    return value.isoformat() if isinstance(value, date) else str(value)


def parse_value(column: str, text: str) -> object:
    if column == DAY:
        return date.fromisoformat(text)
    if column == HOUR:
        return int(text)
    return text


def read_table(
    *, spark: SparkSession, warehouse: str, table: Table, scope: Scope = ALL, catalogs: Catalogs | None = None
) -> DataFrame:
    """The table's rows within `scope`. Only the named days' directories are listed (a table of
    years of hourly partitions is not walked for a few days), and the filter on partition
    columns prunes hours and feeds at the scan. A catalogued table (`catalogs`) is read through
    its catalog, where its partitions may live elsewhere than under its location."""
    if catalogs is not None and catalogs.kind(table) is not TableKind.PATH:
        from spark_jobs.engine.catalogs import read_catalogued

        return read_catalogued(spark=spark, catalogs=catalogs, table=table, scope=scope)
    uri = table.uri(warehouse)
    filesystem = HadoopFs(spark)
    empty = spark.createDataFrame([], table.schema)
    if not filesystem.exists(uri):
        return empty
    scope = scope.restricted_to(table.partition_columns)
    reader = spark.read.format(table.format).schema(table.schema).options(**table.read_options)
    if scope.days is None:
        frame = reader.load(uri)
    else:
        day_directories = (
            filesystem.glob_directories(f"{uri}/{_days_pattern(scope.days)}") if scope.days else []
        )
        if not day_directories:
            return empty
        frame = reader.option("basePath", uri).load(day_directories)
    predicate = scope.predicate()
    return frame if predicate is None else frame.where(predicate)


def _days_pattern(days: tuple[date, ...]) -> str:
    return f"{DAY}={{{','.join(day.isoformat() for day in days)}}}"


def list_partitions(
    *, spark: SparkSession, warehouse: str, table: Table, scope: Scope = ALL
) -> list[Partition]:
    """The table's partition directories within `scope`, found by listing (not by reading)."""
    if not table.partition_columns:
        raise UnpartitionedTableError(f"{table.name} is not partitioned")
    scope = scope.restricted_to(table.partition_columns)
    segments = []
    for column in table.partition_columns:
        if column == DAY and scope.days is not None:
            if not scope.days:
                return []
            segments.append(_days_pattern(scope.days))
        else:
            segments.append(f"{column}=*")
    pattern = table.uri(warehouse) + "/" + "/".join(segments)
    found: list[Partition] = []
    for directory in HadoopFs(spark).glob_directories(pattern):
        parts = directory.rstrip("/").split("/")[-len(table.partition_columns) :]
        partition = tuple(
            (column, parse_value(column, unquote(part.split("=", 1)[1])))
            for column, part in zip(table.partition_columns, parts, strict=True)
        )
        if scope.contains(dict(partition)):
            found.append(partition)
    return sorted(found)


@dataclass(frozen=True)
class WriteResult:
    rows_by_partition: dict[str, int]  # partition path -> rows written, in partition order
    deleted: list[str]  # partition paths in scope that got no rows and were removed
    bytes_written: int | None = None  # size of the written partitions' files, when measured

    @property
    def rows(self) -> int:
        return sum(self.rows_by_partition.values())


def replace_partitions(
    *,
    spark: SparkSession,
    frame: DataFrame,
    warehouse: str,
    table: Table,
    scope: Scope = ALL,
    clock: PhaseClock | None = None,
) -> WriteResult:
    """Make the scope's partitions of `table` hold exactly `frame`'s rows; leave the rest alone.

    Rows of `frame` outside the scope are dropped, never written. With the whole scope (`ALL`)
    this rewrites the table. `clock` is told where the time went (transform, write, commit)."""
    clock = clock or PhaseClock()
    if not table.partition_columns:
        raise UnpartitionedTableError(f"{table.name} is not partitioned")
    columns = list(table.partition_columns)
    scope = scope.restricted_to(columns)
    predicate = scope.predicate()
    if predicate is not None:
        frame = frame.where(predicate)
    # Cached once: the per-partition counts and the write read the same computed rows.
    frame = frame.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        with clock.phase("transform"):
            counts = sorted(
                (tuple((column, row[column]) for column in columns), row["count"])
                for row in frame.groupBy(*columns).count().collect()
            )
        rows_by_partition = {partition_path(partition): rows for partition, rows in counts}
        uri = table.uri(warehouse)
        with clock.phase("commit"):
            _remove_dead_staging(spark=spark, table=table, uri=uri, days=scope.days)
        if rows_by_partition:
            try:
                with clock.phase("write"):
                    (
                        frame.repartition(*columns)  # one file per partition directory
                        .write.mode("overwrite")
                        .option("partitionOverwriteMode", "dynamic")
                        .partitionBy(*columns)
                        .format(table.format)
                        .save(uri)
                    )
            except Exception:
                # Spark aborts a failed or cancelled (SIGTERM) write's job at once, but its tasks
                # end when they notice: one still writing makes its staging directories again
                # after the abort removed them. Once they ended, this write's own litter goes.
                wait_for_the_step_tasks(spark, timeout_seconds=TASKS_END_TIMEOUT_SECONDS)
                _remove_dead_staging(spark=spark, table=table, uri=uri, days=scope.days)
                raise
    finally:
        frame.unpersist()
    # Only after a successful write: a failed step must not lose the old partitions.
    with clock.phase("commit"):
        filesystem = HadoopFs(spark)
        deleted = []
        for partition in list_partitions(spark=spark, warehouse=warehouse, table=table, scope=scope):
            path = partition_path(partition)
            if path not in rows_by_partition:
                filesystem.delete(f"{table.uri(warehouse)}/{path}")
                deleted.append(path)
        bytes_written = filesystem.total_size(f"{table.uri(warehouse)}/{path}" for path in rows_by_partition)
    return WriteResult(rows_by_partition=rows_by_partition, deleted=deleted, bytes_written=bytes_written)


def wait_for_the_step_tasks(spark: SparkSession, *, timeout_seconds: float) -> None:
    """Until no task of this thread's job group (the step's, runner.py) runs, or the timeout."""
    tracker = spark.sparkContext.statusTracker()
    group = spark.sparkContext.getLocalProperty("spark.jobGroup.id") or None
    deadline = time.monotonic() + timeout_seconds
    while time.monotonic() < deadline:
        jobs = [tracker.getJobInfo(job) for job in tracker.getJobIdsForGroup(group)]
        stages = [tracker.getStageInfo(stage) for job in jobs if job is not None for stage in job.stageIds]
        if not any(stage is not None and stage.numActiveTasks > 0 for stage in stages):
            return
        time.sleep(0.1)


def _remove_dead_staging(
    *, spark: SparkSession, table: Table, uri: str, days: tuple[date, ...] | None
) -> None:
    """Litter of killed writes goes before this write adds its own staging (staging.py says
    which); best effort: a failure to tidy never fails the step."""
    try:
        sweep = StagingSweep(filesystem=HadoopFs(spark), days=days, now_ms=time.time_ns() // 1_000_000)
        removed = sweep.remove_dead(uri)
    except Exception as error:  # noqa: BLE001 - a directory vanishing mid-listing, a store refusing a delete
        print(
            f"backfill_job: {table.name}: stale Spark staging not removed: {str(error).strip().splitlines()[0]}",
            file=sys.stderr,
            flush=True,
        )
        return
    for directory, reason in removed.items():
        print(
            f"backfill_job: {table.name}: removed {directory}, a killed write's staging ({reason})",
            file=sys.stderr,
            flush=True,
        )
