"""The food delivery pipeline's transforms (the jobs of Marquez's food_delivery sample),
registered under their lineage job names in `FOOD_DELIVERY`.

Each is a pure DataFrame -> DataFrame function. Windowed transforms emit rows for every
day a row counts towards; the runner keeps only the days it was asked for, so a transform
never needs to know which days a backfill covers."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from spark_jobs.engine.registry import Input, Registry
from spark_jobs.sample.tables import (
    DELIVERY_7_DAYS,
    MENU_ITEMS,
    ORDERS,
    ORDERS_7_DAYS,
    RAW_ORDERS,
    TOP_DELIVERY_TIMES,
)

WINDOW_DAYS = 7
TOP_DELIVERIES = 10  # slowest deliveries kept per day and feed

FOOD_DELIVERY = Registry()


def _timestamp(column: str):
    return F.to_timestamp(F.col(column), "yyyy-MM-dd'T'HH:mm:ssX").alias(column)


@FOOD_DELIVERY.register(name="etl_orders", inputs={"raw_orders": Input(RAW_ORDERS)}, output=ORDERS)
def etl_orders(*, raw_orders: DataFrame) -> DataFrame:
    """Type and tidy the landed orders. One row out per row in, in the same (day, hour, feed)
    partition: reconciliation compares the two layers' counts on exactly that promise."""
    return raw_orders.select(
        F.trim("order_id").alias("order_id"),
        _timestamp("placed_on"),
        "customer_id",
        "menu_item_id",
        "quantity",
        "discount_id",
        F.nullif(F.trim("comment"), F.lit("")).alias("comment"),
        "driver_id",
        _timestamp("dispatched_on"),
        _timestamp("delivered_on"),
        "day",
        "hour",
        "feed",
    )


@FOOD_DELIVERY.register(
    name="etl_orders_7_days",
    inputs={"orders": Input(ORDERS, lookback_days=WINDOW_DAYS - 1), "menu_items": Input(MENU_ITEMS)},
    output=ORDERS_7_DAYS,
)
def etl_orders_7_days(*, orders: DataFrame, menu_items: DataFrame) -> DataFrame:
    """For each day D, the orders placed in the 7 days ending on D, with their menu, restaurant
    and category: each order appears in the partitions of its day and the 6 days after."""
    items = menu_items.select(
        F.col("id").alias("menu_item_id"), "restaurant_id", "menu_id", "category_id", "price_cents"
    )
    as_of_day = F.explode(F.sequence(F.col("day"), F.date_add(F.col("day"), WINDOW_DAYS - 1)))
    return orders.join(F.broadcast(items), "menu_item_id", "left").select(
        "order_id",
        "placed_on",
        "discount_id",
        "restaurant_id",
        "menu_id",
        "menu_item_id",
        "category_id",
        "customer_id",
        "driver_id",
        "quantity",
        "price_cents",
        "dispatched_on",
        "delivered_on",
        as_of_day.alias("day"),
        "feed",
    )


@FOOD_DELIVERY.register(
    name="etl_delivery_7_days", inputs={"orders_7_days": Input(ORDERS_7_DAYS)}, output=DELIVERY_7_DAYS
)
def etl_delivery_7_days(*, orders_7_days: DataFrame) -> DataFrame:
    """The delivered orders of each 7-day window and how long each took, placement to door."""
    return orders_7_days.where(F.col("delivered_on").isNotNull()).select(
        "order_id",
        F.col("placed_on").alias("order_placed_on"),
        F.col("dispatched_on").alias("order_dispatched_on"),
        F.col("delivered_on").alias("order_delivered_on"),
        (F.unix_timestamp("delivered_on") - F.unix_timestamp("placed_on")).alias("delivery_seconds"),
        "customer_id",
        "restaurant_id",
        "menu_id",
        "menu_item_id",
        "category_id",
        "discount_id",
        "driver_id",
        "day",
        "feed",
    )


@FOOD_DELIVERY.register(
    name="delivery_times_7_days",
    inputs={"delivery_7_days": Input(DELIVERY_7_DAYS)},
    output=TOP_DELIVERY_TIMES,
)
def delivery_times_7_days(*, delivery_7_days: DataFrame) -> DataFrame:
    """The slowest deliveries of each 7-day window per feed. Ties break on order_id so that a
    rerun ranks exactly as the first run did."""
    slowest_first = Window.partitionBy("day", "feed").orderBy(
        F.col("delivery_seconds").desc(), F.col("order_id")
    )
    ranked = delivery_7_days.withColumn("rank", F.row_number().over(slowest_first))
    return ranked.where(F.col("rank") <= TOP_DELIVERIES).select(
        "rank",
        "order_id",
        "order_placed_on",
        "order_delivered_on",
        F.col("delivery_seconds").alias("order_delivery_seconds"),
        "customer_id",
        "restaurant_id",
        "driver_id",
        "day",
        "feed",
    )
