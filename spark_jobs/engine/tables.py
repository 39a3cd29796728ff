"""A warehouse table as the engine sees it: where it lives, its format, schema and partitioning.

The tables themselves belong to a pipeline (the sample's are in `spark_jobs.sample.tables`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pyspark.sql.types import StructType


@dataclass(frozen=True)
class Table:
    name: str
    location: str  # relative to the warehouse root
    format: Literal["json", "parquet"]
    schema: StructType  # data columns followed by partition columns
    partition_columns: tuple[str, ...] = ()
    # `database.table` where a catalog (Hive metastore, Glue) may register it; whether it is
    # registered is found at run time, and a table that is not is read and published by path.
    catalog_name: str | None = None
    # Columns that identify a row within a partition: the publish diff counts keys added and
    # removed by them (none: rows only).
    key_columns: tuple[str, ...] = ()

    def uri(self, warehouse: str) -> str:
        return f"{warehouse.rstrip('/')}/{self.location}"

    @property
    def read_options(self) -> dict[str, str]:
        # Raw JSON that does not parse fails the step instead of becoming rows of nulls.
        return {"mode": "FAILFAST"} if self.format == "json" else {}
