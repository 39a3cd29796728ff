"""The food delivery warehouse: every table's place, format, schema and partitioning.

Layout under the warehouse root (a local directory or any URI Spark can write):
`raw/orders` (JSON lines as landed by the feeds), `raw/menu_items` (reference data),
and the processed layer `processed/<table>` in Parquet. The processed tables may be registered
in a metastore as `food_delivery.<table>` (external, partitions at these locations)."""

from __future__ import annotations

from pyspark.sql.types import (
    DataType,
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

# The column types the tables use, by their Spark SQL names. `DataType.fromDDL` would parse
# the same text but needs a running JVM, and these tables are read without one.
_TYPES: dict[str, DataType] = {
    "string": StringType(),
    "timestamp": TimestampType(),
    "bigint": LongType(),
    "int": IntegerType(),
    "date": DateType(),
}


def _columns(ddl: str) -> list[StructField]:
    """Nullable fields from `name type, name type, ...` (Spark SQL type names)."""
    return [StructField(name, _TYPES[kind], True) for name, kind in (c.split() for c in ddl.split(","))]


_DAY_HOUR_FEED = _columns(f"{DAY} date, {HOUR} int, {FEED} string")
_DAY_FEED = _columns(f"{DAY} date, {FEED} string")

RAW_ORDERS = Table(
    name="raw_orders",
    location="raw/orders",
    format="json",
    schema=StructType(
        _columns(
            # placed_on: ISO-8601 UTC, as the feeds send it
            "order_id string, placed_on string, customer_id bigint, menu_item_id bigint, "
            "quantity int, discount_id bigint, comment string, driver_id bigint, "
            "dispatched_on string, delivered_on string"
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
        _columns(
            "id bigint, name string, price_cents bigint, category_id bigint, menu_id bigint, "
            "restaurant_id bigint"
        )
    ),
)


def _processed(name: str, columns: str, *, by_hour: bool = False) -> Table:
    """A processed table: Parquet under `processed/<name>`, catalogued as `food_delivery.<name>`,
    keyed by `order_id`, partitioned by day and feed (and hour)."""
    partitions = (DAY, HOUR, FEED) if by_hour else (DAY, FEED)
    return Table(
        name=name,
        location=f"processed/{name}",
        catalog_name=f"food_delivery.{name}",
        format="parquet",
        schema=StructType(_columns(columns) + (_DAY_HOUR_FEED if by_hour else _DAY_FEED)),
        partition_columns=partitions,
        key_columns=("order_id",),
    )


ORDERS = _processed(
    "orders",
    "order_id string, placed_on timestamp, customer_id bigint, menu_item_id bigint, "
    "quantity int, discount_id bigint, comment string, driver_id bigint, "
    "dispatched_on timestamp, delivered_on timestamp",
    by_hour=True,
)
ORDERS_7_DAYS = _processed(
    "orders_7_days",
    "order_id string, placed_on timestamp, discount_id bigint, restaurant_id bigint, "
    "menu_id bigint, menu_item_id bigint, category_id bigint, customer_id bigint, "
    "driver_id bigint, quantity int, price_cents bigint, dispatched_on timestamp, "
    "delivered_on timestamp",
)
DELIVERY_7_DAYS = _processed(
    "delivery_7_days",
    "order_id string, order_placed_on timestamp, order_dispatched_on timestamp, "
    "order_delivered_on timestamp, delivery_seconds bigint, customer_id bigint, "
    "restaurant_id bigint, menu_id bigint, menu_item_id bigint, category_id bigint, "
    "discount_id bigint, driver_id bigint",
)
TOP_DELIVERY_TIMES = _processed(
    "top_delivery_times",
    "rank int, order_id string, order_placed_on timestamp, "
    "order_delivered_on timestamp, order_delivery_seconds bigint, customer_id bigint, "
    "restaurant_id bigint, driver_id bigint",
)

RAW_TABLES = (RAW_ORDERS, MENU_ITEMS)
PROCESSED_TABLES = (ORDERS, ORDERS_7_DAYS, DELIVERY_7_DAYS, TOP_DELIVERY_TIMES)
TABLES_BY_NAME = {table.name: table for table in RAW_TABLES + PROCESSED_TABLES}
