"""Tables in the session's Hive metastore (local Spark's embedded one, or EMR's, whose Hive
metastore can be the AWS Glue Data Catalog): registering a pipeline's table, reading it, and
swapping one partition's location, as safe publish does (backfill_orchestrator.publish).

Each swap is one `ALTER TABLE ... PARTITION (...) SET LOCATION`: one metastore transaction, so
a query that plans after it reads the new location and one that planned before reads the old
one, never a mix. These need a SparkSession with Hive support (`enableHiveSupport()`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from backfill_orchestrator.contracts.publish import TableKind
from backfill_orchestrator.publish.catalogs import split_name
from backfill_orchestrator.publish.errors import PublishCatalogError, issue
from backfill_orchestrator.publish.layout import partition_values
from spark_jobs.engine.scope import DAY, HOUR

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from spark_jobs.engine.tables import Table


def has_hive(spark: SparkSession) -> bool:
    return spark.conf.get("spark.sql.catalogImplementation", "in-memory") == "hive"


def _literal(column: str, value: str) -> str:
    if column == HOUR:
        return str(int(value))
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def partition_spec(partition: str) -> str:
    """`day=2021-06-04/hour=3` -> `day='2021-06-04', hour=3` (values escaped for SQL)."""
    return ", ".join(f"`{column}`={_literal(column, value)}" for column, value in partition_values(partition))


def _quoted(table: str) -> str:
    database, name = split_name(table)
    return f"`{database}`.`{name}`"


def _location(uri: str) -> str:
    return "'" + uri.replace("\\", "\\\\").replace("'", "\\'") + "'"


class HiveCatalog:
    """backfill_orchestrator.publish.PartitionCatalog over the session's metastore."""

    kind = TableKind.HIVE

    def __init__(self, spark: SparkSession) -> None:
        if not has_hive(spark):
            raise PublishCatalogError(
                [
                    issue(
                        "spark.sql.catalogImplementation",
                        "the session has no Hive support (enableHiveSupport)",
                    )
                ]
            )
        self._spark = spark

    def table_exists(self, table: str) -> bool:
        return bool(self._spark.catalog.tableExists(table))

    def _sql(self, table: str, statement: str) -> Any:
        try:
            return self._spark.sql(statement)
        except Exception as error:  # AnalysisException and Py4J errors
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise PublishCatalogError([issue(table, f"hive: {first}")]) from None

    def locations(self, table: str, days: Sequence[str] | None) -> dict[str, str]:
        """partition -> location, for the days given (all when None): one metastore call a day.
        The metastore picks the day's partitions (a partial partition spec), so the cost follows
        the days asked for, not the table's whole history; every entry read here is a few Py4J
        round trips."""
        jvm = self._spark.sparkContext._jvm
        convert = jvm.scala.jdk.javaapi.CollectionConverters
        database, name = split_name(table)
        if days is None:
            filters = [getattr(jvm.scala, "None$").__getattr__("MODULE$")]
        else:  # `day=<value>` as Spark's own partition path parser reads it: an immutable Map
            fragment = jvm.org.apache.spark.sql.execution.datasources.PartitioningUtils.parsePathFragment
            filters = [jvm.scala.Some(fragment(f"{DAY}={day}")) for day in sorted(set(days))]
        found = {}
        try:
            catalog = self._spark._jsparkSession.sharedState().externalCatalog()
            keys = list(convert.asJava(catalog.getTable(database, name).partitionColumnNames()))
            for only in filters:
                for entry in convert.asJava(catalog.listPartitions(database, name, only)):
                    spec = entry.spec()
                    partition = "/".join(f"{key}={spec.apply(key)}" for key in keys)
                    found[partition] = entry.location().toString()
        except Exception as error:
            raise PublishCatalogError([issue(table, f"hive listPartitions: {error}")]) from None
        return found

    def location(self, table: str, partition: str) -> str | None:
        day = dict(partition_values(partition)).get(DAY)
        return self.locations(table, None if day is None else [day]).get(partition)

    def set_location(self, table: str, partition: str, location: str) -> None:
        self._sql(
            table,
            f"ALTER TABLE {_quoted(table)} PARTITION ({partition_spec(partition)}) SET LOCATION {_location(location)}",
        )

    def add(self, table: str, partition: str, location: str) -> None:
        self._sql(
            table,
            f"ALTER TABLE {_quoted(table)} ADD IF NOT EXISTS PARTITION ({partition_spec(partition)}) "
            f"LOCATION {_location(location)}",
        )

    def drop(self, table: str, partition: str) -> None:
        # External table: the entry goes, the data stays (it is the backup).
        self._sql(
            table, f"ALTER TABLE {_quoted(table)} DROP IF EXISTS PARTITION ({partition_spec(partition)})"
        )


def register_table(spark: SparkSession, *, table: Table, warehouse: str) -> None:
    """`table` as an external table at its location, with every partition its directory holds
    (idempotent: an existing table is left as it is)."""
    if table.catalog_name is None or not table.partition_columns:
        raise PublishCatalogError([issue(table.name, "has no catalog_name or no partition columns")])
    database, _ = split_name(table.catalog_name)
    spark.sql(f"CREATE DATABASE IF NOT EXISTS `{database}`")
    if spark.catalog.tableExists(table.catalog_name):
        return
    columns = ", ".join(f"`{field.name}` {field.dataType.simpleString()}" for field in table.schema)
    spark.sql(
        f"CREATE TABLE {_quoted(table.catalog_name)} ({columns}) USING {table.format} "
        f"PARTITIONED BY ({', '.join(f'`{c}`' for c in table.partition_columns)}) "
        f"LOCATION {_location(table.uri(warehouse))}"
    )
    spark.sql(f"ALTER TABLE {_quoted(table.catalog_name)} RECOVER PARTITIONS")
