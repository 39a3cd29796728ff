"""Safe publish inside the Spark job: a step's output is staged (never written over the live
partitions), checked, and published in the same application when the policy allows, else held.

    stage  -> the manifest `staging`, the staged write, the manifest `staged` with every
              partition's live, staged and backup location; the checks document
    check  -> schema, rules, data diff (spark_jobs.engine.checks), the policy's verdict
    publish-> backfill_orchestrator.publish.Publisher.publish (the same operation a person's
              publish runs), swaps partition by partition; a SIGTERM stops it between two
              partitions, every one old or new, and the next attempt finishes it

Where things live: backfill_orchestrator.publish.layout."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeVar

from pyspark import InheritableThread, StorageLevel
from pyspark.sql.types import ArrayType, DataType, MapType, StructField, StructType

from backfill_orchestrator import documents
from backfill_orchestrator.contracts.publish import (
    ManifestState,
    PublishManifest,
    PublishPolicy,
    StepChecks,
    TableKind,
)
from backfill_orchestrator.documents import has_scheme
from backfill_orchestrator.publish import DataStore, FileDataStore, Publisher, PublishLayout
from backfill_orchestrator.publish.layout import manifest_partitions
from backfill_orchestrator.reconciliation import ReconciliationRules
from spark_jobs.engine.catalogs import Catalogs, catalog_locations
from spark_jobs.engine.checks import (
    Profile,
    data_diff,
    key_changes,
    profiles,
    rules_check,
    schema_check,
    verdict,
)
from spark_jobs.engine.phases import PhaseClock
from spark_jobs.engine.registry import Transform
from spark_jobs.engine.scope import Scope
from spark_jobs.engine.storage import HadoopFs
from spark_jobs.engine.table_io import UnpartitionedTableError, list_partitions, partition_path, read_table
from spark_jobs.engine.tables import Table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

T = TypeVar("T")

AUTO_PUBLISHER = "auto"  # `published_by` of a publish the policy made in the job


@dataclass(frozen=True)
class PublishSettings:
    """How one run stages and publishes its steps."""

    backfill_id: str
    attempt: int
    policy: PublishPolicy
    publisher: Publisher
    catalogs: Catalogs
    rules: ReconciliationRules | None = None
    stop: threading.Event | None = None

    @classmethod
    def build(
        cls,
        *,
        spark: SparkSession,
        backfill_id: str,
        attempt: int,
        root: str,
        policy: PublishPolicy,
        catalogs: Catalogs,
        warehouse: str | None = None,
        rules: ReconciliationRules | None = None,
        stop: threading.Event | None = None,
        s3_client: object = None,
    ) -> PublishSettings:
        publisher = Publisher(
            layout=PublishLayout(root),
            store=data_store(spark, root, warehouse),
            catalogs=catalogs.by_kind(),
            s3_client=s3_client,
        )
        return cls(backfill_id, attempt, policy, publisher, catalogs, rules, stop)


@dataclass(frozen=True)
class StagedStep:
    manifest: PublishManifest
    checks: StepChecks
    rows_by_partition: dict[str, int]
    deleted: list[str]  # live partitions in scope the publish removes
    bytes_staged: int | None


def data_store(spark: SparkSession, root: str, warehouse: str | None) -> DataStore:
    """Local disks through Python's os calls (a publish renames thousands of directories: one
    call each instead of several through the JVM); anything else through the cluster's Hadoop
    FileSystem, which has the credentials."""
    local = not has_scheme(root) and (warehouse is None or not has_scheme(warehouse))
    return FileDataStore() if local else HadoopFs(spark)


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class _LiveSide:
    """The step's live partitions within the scope as readers find them: partition -> location,
    the frame of their rows, its profile, the schema of one partition's files, and the
    catalog's partition columns (None for a path-only table)."""

    locations: dict[str, str]
    frame: DataFrame
    before: dict[str, Profile]
    schema: StructType | None
    partition_columns: list[str] | None


def _live_side(
    *, spark: SparkSession, warehouse: str, catalogs: Catalogs, table_scope: Scope, table: Table
) -> _LiveSide:
    if catalogs.kind(table) is not TableKind.PATH:
        locations = catalog_locations(catalogs, table, table_scope)
    else:
        locations = {
            partition_path(p): f"{table.uri(warehouse)}/{partition_path(p)}"
            for p in list_partitions(spark=spark, warehouse=warehouse, table=table, scope=table_scope)
        }
    frame = read_table(spark=spark, warehouse=warehouse, table=table, scope=table_scope, catalogs=catalogs)
    first = next(iter(locations.items()), None)
    return _LiveSide(
        locations=locations,
        frame=frame,
        before=profiles(frame, table.schema, table.partition_columns, table.key_columns) if locations else {},
        schema=_sample_schema(spark, table.format, first[1], first[0]) if first else None,
        partition_columns=_catalog_partition_columns(spark, catalogs, table),
    )


def _sample_schema(spark: SparkSession, fmt: str, location: str, partition: str) -> StructType | None:
    """The schema Spark infers from one partition directory (its files and its path)."""
    base = location.rstrip("/")[: -len(partition) - 1]
    try:
        return spark.read.format(fmt).option("basePath", base).load(location).schema
    except Exception:  # noqa: BLE001 - no readable file there: nothing to compare with
        return None


def _started(work: Callable[[], T]) -> Future[T]:
    """`work` on its own thread, which keeps this thread's Spark job group (a step's jobs are
    found and cancelled by it); its result or error in the future returned."""
    future: Future[T] = Future()

    def run() -> None:
        try:
            future.set_result(work())
        except BaseException as error:  # noqa: BLE001 - handed to the thread that waits
            future.set_exception(error)

    InheritableThread(target=run, daemon=True).start()
    return future


def stage_step(
    *,
    spark: SparkSession,
    settings: PublishSettings,
    step_id: str,
    transform: Transform,
    output: DataFrame,
    warehouse: str,
    scope: Scope,
    clock: PhaseClock | None = None,
) -> StagedStep:
    """Write the step's output into its staging location and check it; live is untouched.
    `clock` is told where the time went (transform, write, check)."""
    clock = clock or PhaseClock()
    table = transform.output
    if not table.partition_columns:
        raise UnpartitionedTableError(f"{table.name} is not partitioned")
    columns = table.partition_columns
    table_scope = scope.restricted_to(columns)
    predicate = table_scope.predicate()
    frame = output if predicate is None else output.where(predicate)
    kind = settings.catalogs.kind(table)
    layout = settings.publisher.layout
    staging_uri = (
        layout.staging_uri(settings.backfill_id, settings.attempt, step_id)
        if kind is TableKind.PATH
        else layout.catalog_staging_uri(table.uri(warehouse), settings.backfill_id, settings.attempt)
    )
    created = _now()
    manifest = settings.publisher.write_manifest(
        PublishManifest(
            backfill_id=settings.backfill_id,
            attempt=settings.attempt,
            step_id=step_id,
            table=table.name,
            table_kind=kind,
            catalog_table=table.catalog_name if kind is not TableKind.PATH else None,
            table_uri=table.uri(warehouse),
            partition_columns=list(columns),
            staging_uri=staging_uri,
            state=ManifestState.STAGING,
            created_at=created,
            updated_at=created,
            partitions=[],
        )
    )
    live_side: Future[_LiveSide] | None = None
    frame = frame.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        with clock.phase("transform"):
            after = profiles(frame, table.schema, columns, table.key_columns)
        # The live side does not depend on the output: it is read and profiled on a thread while
        # the output is written (the write leaves cores idle between its stages). Started once
        # the output is computed and cached, it does not slow that computation down.
        live_side = _started(
            lambda: _live_side(
                spark=spark,
                warehouse=warehouse,
                catalogs=settings.catalogs,
                table_scope=table_scope,
                table=table,
            )
        )
        if after:
            with clock.phase("write"):
                (
                    frame.repartition(*columns)  # one file per partition directory, as a direct write
                    .write.mode("overwrite")
                    .option("partitionOverwriteMode", "static")
                    .partitionBy(*columns)
                    .format(table.format)
                    .save(staging_uri)
                )
        with clock.phase("check"):
            live = live_side.result()
            first_staged = next(iter(after), None)
            schema = schema_check(
                staged=_staged_schema(
                    spark, table, frame, f"{staging_uri}/{first_staged}", first_staged, live
                )
                if first_staged
                else None,
                live=live.schema,
                staged_partitions=list(columns),
                live_partitions=live.partition_columns or list(columns),
            )
            table_rules = settings.rules.for_table(table.name) if settings.rules else None
            rules = rules_check(
                rules=table_rules,
                transform=transform,
                computed=frame,
                # Read back only when there are rules: building the frame lists the staged files.
                staged=_read_staged(spark, table, staging_uri)
                if table_rules is not None and after
                else frame,
            )
            keys = (
                key_changes(
                    new=frame,
                    old=live.frame,
                    before=live.before,
                    after=after,
                    partition_columns=columns,
                    key_columns=table.key_columns,
                )
                if table.key_columns
                else None
            )
            diff = data_diff(before=live.before, after=after, keys=keys, key_columns=table.key_columns)
            outcome, reasons = verdict(
                policy=settings.policy, schema=schema, rules=rules, diff=diff, before=live.before, after=after
            )
    except BaseException:
        if live_side is not None:
            live_side.exception()  # waited for: its jobs are the step's, none outlives the step
        raise
    finally:
        frame.unpersist()
    checks = StepChecks(
        backfill_id=settings.backfill_id,
        attempt=settings.attempt,
        step_id=step_id,
        table=table.name,
        checked_at=_now(),
        schema_check=schema,
        rules=rules,
        diff=diff,
        policy=settings.policy,
        verdict=outcome,
        reasons=reasons,
    )
    checks_uri = layout.checks_uri(settings.backfill_id, settings.attempt, step_id)
    documents.write_bytes(checks_uri, checks.to_json().encode(), s3_client=settings.publisher.s3_client)
    entries = manifest_partitions(
        manifest,
        layout=layout,
        staged={partition: profile.rows for partition, profile in after.items()},
        live=live.locations,
    )
    manifest = settings.publisher.write_manifest(
        manifest.model_copy(
            update={
                "state": ManifestState.STAGED,
                "checks_uri": checks_uri,
                "updated_at": _now(),
                "partitions": entries,
            }
        )
    )
    filesystem = HadoopFs(spark)
    return StagedStep(
        manifest=manifest,
        checks=checks,
        rows_by_partition={partition: profile.rows for partition, profile in sorted(after.items())},
        deleted=sorted(set(live.locations) - set(after)),
        bytes_staged=filesystem.size(staging_uri) if after else 0,
    )


def _staged_schema(
    spark: SparkSession, table: Table, frame: DataFrame, location: str, partition: str, live: _LiveSide
) -> StructType | None:
    """The schema a reader of the staged files will find. Parquet files hold the written frame's
    columns, every one nullable (Spark writes Parquet so); the partition columns' types are
    inferred from the directory names, which staged and live partitions share, so they are
    taken from the live sample. Other formats are sampled like the live side."""
    if table.format != "parquet" or live.schema is None:
        return _sample_schema(spark, table.format, location, partition)
    partitions = set(table.partition_columns)
    return StructType(
        [
            StructField(f.name, _nullable(f.dataType), True)
            for f in frame.schema.fields
            if f.name not in partitions
        ]
        + [f for f in live.schema.fields if f.name in partitions]
    )


def _nullable(data_type: DataType) -> DataType:
    """The type with every nested field, element and value nullable (Spark's `asNullable`, which
    its Parquet writer applies)."""
    if isinstance(data_type, StructType):
        return StructType([StructField(f.name, _nullable(f.dataType), True) for f in data_type.fields])
    if isinstance(data_type, ArrayType):
        return ArrayType(_nullable(data_type.elementType), True)
    if isinstance(data_type, MapType):
        return MapType(_nullable(data_type.keyType), _nullable(data_type.valueType), True)
    return data_type


def _read_staged(spark: SparkSession, table: Table, staging_uri: str) -> DataFrame:
    return (
        spark.read.format(table.format).schema(table.schema).option("basePath", staging_uri).load(staging_uri)
    )


def _catalog_partition_columns(spark: SparkSession, catalogs: Catalogs, table: Table) -> list[str] | None:
    if catalogs.kind(table) is not TableKind.HIVE:
        return None
    return [
        column.name for column in spark.catalog.listColumns(table.catalog_name or "") if column.isPartition
    ]
