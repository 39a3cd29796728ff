"""The training job of the local Spark JVMs' class archive (backfill_local.local_spark): a small
run of what the demo's and the tests' jobs do (partitioned Parquet written and read back with
pruning, joins, windows, aggregations, hashes, dates), so the classes they load are in the
archive. Its output is thrown away.

    spark-submit spark_class_training.py TABLES_DIRECTORY
"""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F


def main(tables: str) -> None:
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("class-archive-training")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.sources.partitionOverwriteMode", "dynamic")
        .getOrCreate()
    )
    orders = spark.range(400).select(
        F.col("id").alias("order_id"),
        F.date_format(
            F.date_add(F.lit("2026-01-01").cast("date"), (F.col("id") % 4).cast("int")), "yyyy-MM-dd"
        ).alias("day"),
        F.lpad((F.col("id") % 24).cast("string"), 2, "0").alias("hour"),
        F.pmod(F.hash("id"), F.lit(7)).alias("courier"),
        F.timestamp_seconds(F.lit(1_767_225_600) + F.col("id") * 60).alias("placed_at"),
    )
    orders.repartition("day").write.mode("overwrite").partitionBy("day", "hour").parquet(f"{tables}/orders")
    read = (
        spark.read.format("parquet")
        .load(f"{tables}/orders")
        .where(F.col("day").isin("2026-01-02", "2026-01-03"))
    )
    couriers = spark.range(7).select(
        F.col("id").alias("courier"), F.concat_ws("-", F.lit("c"), F.col("id")).alias("name")
    )
    latest = Window.partitionBy("courier").orderBy(F.col("placed_at").desc())
    joined = (
        read.join(F.broadcast(couriers), "courier")
        .withColumn("rank", F.row_number().over(latest))
        .withColumn("late", F.when(F.unix_timestamp("placed_at") % 2 == 0, F.lit(1)).otherwise(F.lit(0)))
    )
    summary = joined.groupBy("day", "name").agg(
        F.count(F.lit(1)).alias("orders"),
        F.sum("late").alias("late"),
        F.max("rank").alias("deepest"),
        F.sum(F.xxhash64("order_id").cast("decimal(20,0)")).alias("key_digest"),
        F.count_distinct("hour").alias("hours"),
    )
    summary.persist()
    summary.unionByName(summary).coalesce(1).write.mode("overwrite").partitionBy("day").parquet(
        f"{tables}/summary"
    )
    summary.join(read.select("day").distinct(), "day", "left_semi").collect()
    summary.unpersist()
    spark.read.parquet(f"{tables}/summary").select(F.explode(F.sequence(F.lit(1), F.lit(3)))).count()
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
