"""Catalogs whose partition locations a publish swaps: one protocol, the AWS Glue Data Catalog
here (boto3, no Spark), the Hive metastore in the Spark job (spark_jobs.engine.hive, which
needs a SparkSession with Hive support).

A swap is one catalog call per partition (`UpdatePartition` on Glue, `ALTER TABLE ... PARTITION
... SET LOCATION` in Hive): readers that look the partition up see the old location or the new
one, never a mix. Data is never moved or deleted by a swap."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from backfill_orchestrator.contracts.publish import TableKind
from backfill_orchestrator.publish.errors import PublishCatalogError, issue
from backfill_orchestrator.publish.layout import partition_values

GLUE_PAGE = 100


class PartitionCatalog(Protocol):
    kind: TableKind

    def location(self, table: str, partition: str) -> str | None: ...  # None: no such partition
    def locations(
        self, table: str, days: Sequence[str] | None
    ) -> dict[str, str]: ...  # partition -> location
    def set_location(self, table: str, partition: str, location: str) -> None: ...
    def add(self, table: str, partition: str, location: str) -> None: ...
    def drop(self, table: str, partition: str) -> None: ...  # the entry only: external data stays


def split_name(table: str) -> tuple[str, str]:
    database, _, name = table.partition(".")
    if not database or not name:
        raise PublishCatalogError([issue(table, "expected database.table")])
    return database, name


class GlueCatalog:
    """Partitions of Glue tables (`database.table`), values in the table's partition key order."""

    kind = TableKind.GLUE

    def __init__(self, *, glue_client: Any = None, catalog_id: str | None = None) -> None:
        self._client = glue_client
        self._catalog = {"CatalogId": catalog_id} if catalog_id else {}
        self._descriptors: dict[str, dict[str, Any]] = {}

    def _glue(self) -> Any:
        if self._client is None:
            import boto3

            self._client = boto3.client("glue")
        return self._client

    def _call(self, table: str, operation: str, **kwargs: Any) -> Any:
        database, name = split_name(table)
        try:
            return getattr(self._glue(), operation)(
                **self._catalog, DatabaseName=database, TableName=name, **kwargs
            )
        except Exception as error:  # botocore raises many types; the caller needs one
            code = getattr(error, "response", {}).get("Error", {}).get("Code", "")
            if code == "EntityNotFoundException" and operation == "get_partition":
                return None
            raise PublishCatalogError([issue(table, f"glue {operation}: {code or error}")]) from None

    def table_exists(self, table: str) -> bool:
        database, name = split_name(table)
        try:
            self._glue().get_table(**self._catalog, DatabaseName=database, Name=name)
        except Exception as error:
            if getattr(error, "response", {}).get("Error", {}).get("Code", "") == "EntityNotFoundException":
                return False
            raise PublishCatalogError([issue(table, f"glue get_table: {error}")]) from None
        return True

    def _storage(self, table: str) -> dict[str, Any]:
        """The table's storage descriptor, which a partition's copies (format, SerDe, columns)."""
        if table not in self._descriptors:
            database, name = split_name(table)
            try:
                found = self._glue().get_table(**self._catalog, DatabaseName=database, Name=name)
            except Exception as error:
                raise PublishCatalogError([issue(table, f"glue get_table: {error}")]) from None
            self._descriptors[table] = dict(found["Table"].get("StorageDescriptor") or {})
        return self._descriptors[table]

    def location(self, table: str, partition: str) -> str | None:
        found = self._call(
            table, "get_partition", PartitionValues=[v for _, v in partition_values(partition)]
        )
        return None if found is None else found["Partition"]["StorageDescriptor"]["Location"]

    def locations(self, table: str, days: Sequence[str] | None) -> dict[str, str]:
        found: dict[str, str] = {}
        keys = self._partition_keys(table)
        expression = {} if days is None else {"Expression": f"day IN ({', '.join(repr(d) for d in days)})"}
        if days is not None and not days:
            return found
        database, name = split_name(table)
        try:
            pages = (
                self._glue()
                .get_paginator("get_partitions")
                .paginate(**self._catalog, DatabaseName=database, TableName=name, **expression)
            )
            for page in pages:
                for entry in page.get("Partitions", []):
                    path = "/".join(f"{k}={v}" for k, v in zip(keys, entry["Values"], strict=True))
                    found[path] = entry["StorageDescriptor"]["Location"]
        except Exception as error:
            raise PublishCatalogError([issue(table, f"glue get_partitions: {error}")]) from None
        return found

    def _partition_keys(self, table: str) -> list[str]:
        database, name = split_name(table)
        try:
            found = self._glue().get_table(**self._catalog, DatabaseName=database, Name=name)
        except Exception as error:
            raise PublishCatalogError([issue(table, f"glue get_table: {error}")]) from None
        return [key["Name"] for key in found["Table"].get("PartitionKeys", [])]

    def _input(self, table: str, partition: str, location: str) -> dict[str, Any]:
        storage = {**self._storage(table), "Location": location}
        return {"Values": [value for _, value in partition_values(partition)], "StorageDescriptor": storage}

    def set_location(self, table: str, partition: str, location: str) -> None:
        self._call(
            table,
            "update_partition",
            PartitionValueList=[v for _, v in partition_values(partition)],
            PartitionInput=self._input(table, partition, location),
        )

    def add(self, table: str, partition: str, location: str) -> None:
        self._call(table, "create_partition", PartitionInput=self._input(table, partition, location))

    def drop(self, table: str, partition: str) -> None:
        self._call(table, "delete_partition", PartitionValues=[v for _, v in partition_values(partition)])
