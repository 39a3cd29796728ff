"""Local Spark with an embedded Hive metastore (Derby), for the catalogued-table path of safe
publish: PySpark's pip package ships Spark's Hive support and Derby, so a local session can
keep a real metastore in a directory. Derby allows one JVM at a time per directory.

    builder = SparkSession.builder.config(map=hive_settings(Path(".demo/metastore")))
    spark = builder.getOrCreate()
    register_sample_tables(spark, warehouse)   # food_delivery.<table>: external, partitions where they are
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def hive_settings(directory: Path) -> dict[str, str]:
    """Session settings for a metastore kept in `directory` (made when missing). They take
    effect only in a session that starts the JVM."""
    directory.mkdir(parents=True, exist_ok=True)
    return {
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(directory / "managed"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={directory / 'metastore_db'};create=true"
        ),
        # Derby's log next to its database, not in the working directory.
        "spark.driver.extraJavaOptions": f"-Dderby.stream.error.file={directory / 'derby.log'}",
    }


def register_sample_tables(spark: SparkSession, warehouse: str) -> list[str]:
    """The food delivery sample's processed tables as external tables at their locations, with
    the partitions their directories hold; their catalog names."""
    from spark_jobs.engine.hive import register_table
    from spark_jobs.sample.tables import PROCESSED_TABLES

    for table in PROCESSED_TABLES:
        register_table(spark, table=table, warehouse=warehouse)
    return [table.catalog_name or "" for table in PROCESSED_TABLES]
