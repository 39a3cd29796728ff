"""The sample's transforms with `etl_orders` slowed down row by row, so a test can cancel the
Spark job while it is writing (`--registry tests.spark.slow_registry:SLOW`)."""

from __future__ import annotations

import time
from dataclasses import replace

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from spark_jobs.engine.registry import Registry
from spark_jobs.sample.transforms import FOOD_DELIVERY


def _slow(value: str | None) -> str | None:
    time.sleep(0.05)
    return value


def _slow_etl_orders(**frames: DataFrame) -> DataFrame:
    tidy = FOOD_DELIVERY["etl_orders"].apply(frames)
    return tidy.withColumn("order_id", F.udf(_slow, StringType())("order_id"))


SLOW = Registry({t.name: t for t in FOOD_DELIVERY if t.name != "etl_orders"})
SLOW.add(replace(FOOD_DELIVERY["etl_orders"], function=_slow_etl_orders))
