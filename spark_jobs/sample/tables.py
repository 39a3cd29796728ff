"""The food delivery warehouse: every table's place, format, schema and partitioning.

Layout under the warehouse root (a local directory or any URI Spark can write):
`raw/orders` (JSON lines as landed by the feeds), `raw/menu_items` (reference data),
and the processed layer `processed/<table>` in Parquet. The processed tables may be registered
in a metastore as `food_delivery.<table>` (external, partitions at these locations)."""

from __future__ import annotations

from pyspark.sql.types import (
    DateType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from spark_jobs.engine.scope import DAY, FEED, HOUR
from spark_jobs.engine.tables import Table


def _fields(*specs: tuple[str, object]) -> list[StructField]:
    return [StructField(name, kind, True) for name, kind in specs]


_DAY_HOUR_FEED = _fields((DAY, DateType()), (HOUR, IntegerType()), (FEED, StringType()))
_DAY_FEED = _fields((DAY, DateType()), (FEED, StringType()))

RAW_ORDERS = Table(
    name="raw_orders",
    location="raw/orders",
    format="json",
    schema=StructType(
        _fields(
            ("order_id", StringType()),
            ("placed_on", StringType()),  # ISO-8601 UTC, as the feeds send it
            ("customer_id", LongType()),
            ("menu_item_id", LongType()),
            ("quantity", IntegerType()),
            ("discount_id", LongType()),
            ("comment", StringType()),
            ("driver_id", LongType()),
            ("dispatched_on", StringType()),
            ("delivered_on", StringType()),
        )
        + _DAY_HOUR_FEED
    ),
    partition_columns=(DAY, HOUR, FEED),
)

MENU_ITEMS = Table(
    name="menu_items",
    location="raw/menu_items",
    format="json",
    schema=StructType(
        _fields(
            ("id", LongType()),
            ("name", StringType()),
            ("price_cents", LongType()),
            ("category_id", LongType()),
            ("menu_id", LongType()),
            ("restaurant_id", LongType()),
        )
    ),
)

ORDERS = Table(
    name="orders",
    location="processed/orders",
    catalog_name="food_delivery.orders",
    format="parquet",
    schema=StructType(
        _fields(
            ("order_id", StringType()),
            ("placed_on", TimestampType()),
            ("customer_id", LongType()),
            ("menu_item_id", LongType()),
            ("quantity", IntegerType()),
            ("discount_id", LongType()),
            ("comment", StringType()),
            ("driver_id", LongType()),
            ("dispatched_on", TimestampType()),
            ("delivered_on", TimestampType()),
        )
        + _DAY_HOUR_FEED
    ),
    partition_columns=(DAY, HOUR, FEED),
    key_columns=("order_id",),
)

ORDERS_7_DAYS = Table(
    name="orders_7_days",
    location="processed/orders_7_days",
    catalog_name="food_delivery.orders_7_days",
    format="parquet",
    schema=StructType(
        _fields(
            ("order_id", StringType()),
            ("placed_on", TimestampType()),
            ("discount_id", LongType()),
            ("restaurant_id", LongType()),
            ("menu_id", LongType()),
            ("menu_item_id", LongType()),
            ("category_id", LongType()),
            ("customer_id", LongType()),
            ("driver_id", LongType()),
            ("quantity", IntegerType()),
            ("price_cents", LongType()),
            ("dispatched_on", TimestampType()),
            ("delivered_on", TimestampType()),
        )
        + _DAY_FEED
    ),
    partition_columns=(DAY, FEED),
    key_columns=("order_id",),
)

DELIVERY_7_DAYS = Table(
    name="delivery_7_days",
    location="processed/delivery_7_days",
    catalog_name="food_delivery.delivery_7_days",
    format="parquet",
    schema=StructType(
        _fields(
            ("order_id", StringType()),
            ("order_placed_on", TimestampType()),
            ("order_dispatched_on", TimestampType()),
            ("order_delivered_on", TimestampType()),
            ("delivery_seconds", LongType()),
            ("customer_id", LongType()),
            ("restaurant_id", LongType()),
            ("menu_id", LongType()),
            ("menu_item_id", LongType()),
            ("category_id", LongType()),
            ("discount_id", LongType()),
            ("driver_id", LongType()),
        )
        + _DAY_FEED
    ),
    partition_columns=(DAY, FEED),
    key_columns=("order_id",),
)

TOP_DELIVERY_TIMES = Table(
    name="top_delivery_times",
    location="processed/top_delivery_times",
    catalog_name="food_delivery.top_delivery_times",
    format="parquet",
    schema=StructType(
        _fields(
            ("rank", IntegerType()),
            ("order_id", StringType()),
            ("order_placed_on", TimestampType()),
            ("order_delivered_on", TimestampType()),
            ("order_delivery_seconds", LongType()),
            ("customer_id", LongType()),
            ("restaurant_id", LongType()),
            ("driver_id", LongType()),
        )
        + _DAY_FEED
    ),
    partition_columns=(DAY, FEED),
    key_columns=("order_id",),
)

RAW_TABLES = (RAW_ORDERS, MENU_ITEMS)
PROCESSED_TABLES = (ORDERS, ORDERS_7_DAYS, DELIVERY_7_DAYS, TOP_DELIVERY_TIMES)
TABLES_BY_NAME = {table.name: table for table in RAW_TABLES + PROCESSED_TABLES}
