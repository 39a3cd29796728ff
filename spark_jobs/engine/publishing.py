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
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from pyspark import StorageLevel

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
    from pyspark.sql.types import StructType

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


def _live_side(
    *, spark: SparkSession, warehouse: str, catalogs: Catalogs, table_scope: Scope, table: Table
) -> tuple[dict[str, str], DataFrame]:
    """The live partitions within the scope as readers find them (partition -> location), and
    the frame of their rows."""
    if catalogs.kind(table) is not TableKind.PATH:
        locations = catalog_locations(catalogs, table, table_scope)
    else:
        locations = {
            partition_path(p): f"{table.uri(warehouse)}/{partition_path(p)}"
            for p in list_partitions(spark=spark, warehouse=warehouse, table=table, scope=table_scope)
        }
    return locations, read_table(
        spark=spark, warehouse=warehouse, table=table, scope=table_scope, catalogs=catalogs
    )


def _sample_schema(spark: SparkSession, fmt: str, location: str, partition: str) -> StructType | None:
    """The schema Spark infers from one partition directory (its files and its path)."""
    base = location.rstrip("/")[: -len(partition) - 1]
    try:
        return spark.read.format(fmt).option("basePath", base).load(location).schema
    except Exception:  # noqa: BLE001 - no readable file there: nothing to compare with
        return None


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
    frame = frame.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        with clock.phase("transform"):
            after = profiles(frame, table.schema, columns, table.key_columns)
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
            live, old = _live_side(
                spark=spark,
                warehouse=warehouse,
                catalogs=settings.catalogs,
                table_scope=table_scope,
                table=table,
            )
            before = profiles(old, table.schema, columns, table.key_columns) if live else {}
            first_staged = next(iter(after), None)
            first_live = next(iter(live.items()), None)
            schema = schema_check(
                staged=_sample_schema(spark, table.format, f"{staging_uri}/{first_staged}", first_staged)
                if first_staged
                else None,
                live=_sample_schema(spark, table.format, first_live[1], first_live[0])
                if first_live
                else None,
                staged_partitions=list(columns),
                live_partitions=_catalog_partition_columns(spark, settings.catalogs, table) or list(columns),
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
                    old=old,
                    before=before,
                    after=after,
                    partition_columns=columns,
                    key_columns=table.key_columns,
                )
                if table.key_columns
                else None
            )
            diff = data_diff(before=before, after=after, keys=keys, key_columns=table.key_columns)
            outcome, reasons = verdict(
                policy=settings.policy, schema=schema, rules=rules, diff=diff, before=before, after=after
            )
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
        live=live,
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
        deleted=sorted(set(live) - set(after)),
        bytes_staged=filesystem.size(staging_uri) if after else 0,
    )


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
