"""Which catalog a table is published through, and reading it the way its readers do.

`--catalog none` (the default): every table is a path table (its partitions are the
directories under its location). `hive`: a table whose `catalog_name` the session's metastore
has is read with `spark.table` and published by swapping partition locations in the metastore
(EMR with the Glue Data Catalog as its metastore is this case too); others are path tables.
`glue`: likewise through the Glue API (boto3), for a Spark whose metastore is not Glue: its
partitions are read at the locations Glue gives."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from backfill_orchestrator.contracts.publish import TableKind
from backfill_orchestrator.publish.catalogs import GlueCatalog, PartitionCatalog
from backfill_orchestrator.publish.layout import partition_values
from spark_jobs.engine.hive import HiveCatalog
from spark_jobs.engine.scope import Scope
from spark_jobs.engine.tables import Table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

CatalogMode = Literal["none", "hive", "glue"]
CATALOG_MODES: tuple[CatalogMode, ...] = ("none", "hive", "glue")


class Catalogs:
    """The catalogs of one run, and the kind of each table (looked up once)."""

    def __init__(self, spark: SparkSession, mode: CatalogMode = "none", *, glue: GlueCatalog | None = None):
        self.mode = mode
        self._kinds: dict[str, TableKind] = {}
        self._lock = threading.Lock()
        self._hive = HiveCatalog(spark) if mode == "hive" else None
        self._glue = (glue or GlueCatalog()) if mode == "glue" else None

    def kind(self, table: Table) -> TableKind:
        if table.catalog_name is None or self.mode == "none" or not table.partition_columns:
            return TableKind.PATH
        with self._lock:
            if table.name not in self._kinds:
                catalog = self._hive or self._glue
                known = catalog is not None and catalog.table_exists(table.catalog_name)
                self._kinds[table.name] = (
                    (TableKind.HIVE if self._hive is not None else TableKind.GLUE)
                    if known
                    else TableKind.PATH
                )
            return self._kinds[table.name]

    def catalog(self, kind: TableKind) -> PartitionCatalog:
        found = self.by_kind().get(kind)
        if found is None:
            raise KeyError(kind)
        return found

    def by_kind(self) -> Mapping[TableKind, PartitionCatalog]:
        out: dict[TableKind, PartitionCatalog] = {}
        if self._hive is not None:
            out[TableKind.HIVE] = self._hive
        if self._glue is not None:
            out[TableKind.GLUE] = self._glue
        return out


def parse_partition(partition: str) -> dict[str, object]:
    from spark_jobs.engine.table_io import parse_value

    return {column: parse_value(column, value) for column, value in partition_values(partition)}


def catalog_locations(catalogs: Catalogs, table: Table, scope: Scope) -> dict[str, str]:
    """The catalogued table's partitions within `scope`: partition -> location."""
    kind = catalogs.kind(table)
    scope = scope.restricted_to(table.partition_columns)
    days = None if scope.days is None else [day.isoformat() for day in scope.days]
    found = catalogs.catalog(kind).locations(table.catalog_name or "", days)
    return {
        path: location for path, location in sorted(found.items()) if scope.contains(parse_partition(path))
    }


def read_catalogued(*, spark: SparkSession, catalogs: Catalogs, table: Table, scope: Scope) -> DataFrame:
    """As its readers see it: through the metastore (hive), or at Glue's locations (glue)."""
    scope = scope.restricted_to(table.partition_columns)
    predicate = scope.predicate()
    if catalogs.kind(table) is TableKind.HIVE:
        frame = spark.table(table.catalog_name or "")
        frame = frame if predicate is None else frame.where(predicate)
        return frame.select(*table.schema.names)
    locations = catalog_locations(catalogs, table, scope)
    empty = spark.createDataFrame([], table.schema)
    by_base: dict[str, list[str]] = {}
    for path, location in locations.items():
        base = location[: -len(path) - 1] if location.rstrip("/").endswith("/" + path) else None
        if base is None:  # not laid out as <base>/<partition>: Spark cannot tell its values
            raise ValueError(f"{table.name}: partition {path} is at {location}, not under a <base>/{path}")
        by_base.setdefault(base, []).append(location)
    frame = None
    reader = spark.read.format(table.format).schema(table.schema).options(**table.read_options)
    for base, paths in sorted(by_base.items()):
        part = reader.option("basePath", base).load(paths)
        frame = part if frame is None else frame.unionByName(part)
    if frame is None:
        return empty
    frame = frame.select(*table.schema.names)
    return frame if predicate is None else frame.where(predicate)
