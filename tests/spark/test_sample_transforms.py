"""Each transform of the food delivery sample, DataFrame in and DataFrame out: small inputs
built by hand, the expected output written out, compared with chispa. No warehouse IO."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession

from spark_jobs.engine.tables import Table
from spark_jobs.sample.tables import (
    DELIVERY_7_DAYS,
    MENU_ITEMS,
    ORDERS,
    ORDERS_7_DAYS,
    RAW_ORDERS,
    TOP_DELIVERY_TIMES,
)
from spark_jobs.sample.transforms import (
    FOOD_DELIVERY,
    delivery_times_7_days,
    etl_delivery_7_days,
    etl_orders,
    etl_orders_7_days,
)

pytestmark = pytest.mark.slow

TESTED = {"etl_orders", "etl_orders_7_days", "etl_delivery_7_days", "delivery_times_7_days"}
MAY_1 = date(2021, 5, 1)


def at(day: date, hour: int, minute: int = 0, second: int = 0) -> datetime:
    # Aware: pyspark would read a naive datetime in the machine's local time zone.
    return datetime(day.year, day.month, day.day, hour, minute, second, tzinfo=UTC)


def frame(spark: SparkSession, table: Table, rows: list[Mapping[str, Any]]) -> DataFrame:
    """Rows given by column name (every column of the table, no others), in the table's schema."""
    names = table.schema.names
    for row in rows:
        assert sorted(row) == sorted(names), f"{table.name}: {sorted(set(row) ^ set(names))}"
    return spark.createDataFrame([tuple(row[name] for name in names) for row in rows], table.schema)


def assert_equal(actual: DataFrame, expected: DataFrame) -> None:
    # Same columns in the same order with the same types and the same rows in any order;
    # nullability is the table's concern (the runner conforms it), not the transform's.
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)


def test_every_transform_of_the_sample_is_tested_here():
    assert set(FOOD_DELIVERY.names) == TESTED


def test_etl_orders_types_and_tidies_each_landed_order(spark):
    raw = frame(
        spark,
        RAW_ORDERS,
        [
            {
                "order_id": " web-0001 ",
                "placed_on": "2021-05-01T10:15:00Z",
                "customer_id": 11,
                "menu_item_id": 3,
                "quantity": 2,
                "discount_id": None,
                "comment": "  no onions please ",
                "driver_id": 7,
                "dispatched_on": "2021-05-01T10:25:00Z",
                "delivered_on": "2021-05-01T10:55:30Z",
                "day": MAY_1,
                "hour": 10,
                "feed": "web",
            },
            {
                "order_id": "app-0002",
                "placed_on": "2021-05-01T23:59:59Z",
                "customer_id": 12,
                "menu_item_id": 4,
                "quantity": 1,
                "discount_id": 5,
                "comment": "",
                "driver_id": 8,
                "dispatched_on": "2021-05-02T00:10:00Z",
                "delivered_on": None,  # never delivered
                "day": MAY_1,
                "hour": 23,
                "feed": "app",
            },
            {
                "order_id": "app-0003",
                "placed_on": "2021-05-01T23:30:00Z",
                "customer_id": 12,
                "menu_item_id": 4,
                "quantity": 3,
                "discount_id": None,
                "comment": None,
                "driver_id": 9,
                "dispatched_on": "2021-05-01T23:40:00Z",
                "delivered_on": "2021-05-02T00:20:00Z",
                "day": MAY_1,
                "hour": 23,
                "feed": "app",
            },
        ],
    )
    expected = frame(
        spark,
        ORDERS,
        [
            {
                "order_id": "web-0001",
                "placed_on": at(MAY_1, 10, 15),
                "customer_id": 11,
                "menu_item_id": 3,
                "quantity": 2,
                "discount_id": None,
                "comment": "no onions please",
                "driver_id": 7,
                "dispatched_on": at(MAY_1, 10, 25),
                "delivered_on": at(MAY_1, 10, 55, 30),
                "day": MAY_1,
                "hour": 10,
                "feed": "web",
            },
            {
                "order_id": "app-0002",
                "placed_on": at(MAY_1, 23, 59, 59),
                "customer_id": 12,
                "menu_item_id": 4,
                "quantity": 1,
                "discount_id": 5,
                "comment": None,
                "driver_id": 8,
                "dispatched_on": at(date(2021, 5, 2), 0, 10),
                "delivered_on": None,
                "day": MAY_1,
                "hour": 23,
                "feed": "app",
            },
            {
                "order_id": "app-0003",
                "placed_on": at(MAY_1, 23, 30),
                "customer_id": 12,
                "menu_item_id": 4,
                "quantity": 3,
                "discount_id": None,
                "comment": None,
                "driver_id": 9,
                "dispatched_on": at(MAY_1, 23, 40),
                "delivered_on": at(date(2021, 5, 2), 0, 20),
                "day": MAY_1,
                "hour": 23,
                "feed": "app",
            },
        ],
    )
    assert_equal(etl_orders(raw_orders=raw), expected)


def _order(
    order_id: str, day: date, hour: int, feed: str, menu_item_id: int, delivered: datetime | None
) -> dict:
    return {
        "order_id": order_id,
        "placed_on": at(day, hour),
        "customer_id": 100,
        "menu_item_id": menu_item_id,
        "quantity": 2,
        "discount_id": None,
        "comment": None,
        "driver_id": 30,
        "dispatched_on": at(day, hour, 10),
        "delivered_on": delivered,
        "day": day,
        "hour": hour,
        "feed": feed,
    }


def test_etl_orders_7_days_puts_each_order_in_the_seven_windows_it_belongs_to(spark):
    may_3 = date(2021, 5, 3)
    orders = frame(
        spark,
        ORDERS,
        [
            _order("web-1", MAY_1, 10, "web", menu_item_id=3, delivered=at(MAY_1, 10, 40)),
            _order("app-2", may_3, 22, "app", menu_item_id=99, delivered=None),  # not on the menu
        ],
    )
    menu_items = frame(
        spark,
        MENU_ITEMS,
        [
            {
                "id": 3,
                "name": "item-3",
                "price_cents": 1250,
                "category_id": 6,
                "menu_id": 5,
                "restaurant_id": 4,
            },
            {
                "id": 4,
                "name": "item-4",
                "price_cents": 900,
                "category_id": 1,
                "menu_id": 2,
                "restaurant_id": 3,
            },
        ],
    )
    common = {"discount_id": None, "customer_id": 100, "driver_id": 30, "quantity": 2}
    web = {
        "order_id": "web-1",
        "placed_on": at(MAY_1, 10),
        "restaurant_id": 4,
        "menu_id": 5,
        "menu_item_id": 3,
        "category_id": 6,
        "price_cents": 1250,
        "dispatched_on": at(MAY_1, 10, 10),
        "delivered_on": at(MAY_1, 10, 40),
        "feed": "web",
        **common,
    }
    app = {
        "order_id": "app-2",
        "placed_on": at(may_3, 22),
        "restaurant_id": None,
        "menu_id": None,
        "menu_item_id": 99,
        "category_id": None,
        "price_cents": None,
        "dispatched_on": at(may_3, 22, 10),
        "delivered_on": None,
        "feed": "app",
        **common,
    }
    # 2021-05-01 counts towards the windows ending 05-01 to 05-07; 2021-05-03 towards 05-03 to 05-09.
    expected = frame(
        spark,
        ORDERS_7_DAYS,
        [
            *({**web, "day": MAY_1 + timedelta(days=n)} for n in range(7)),
            *({**app, "day": may_3 + timedelta(days=n)} for n in range(7)),
        ],
    )
    assert_equal(etl_orders_7_days(orders=orders, menu_items=menu_items), expected)


def _in_window(order_id: str, placed: datetime, delivered: datetime | None, day: date, feed: str) -> dict:
    return {
        "order_id": order_id,
        "placed_on": placed,
        "discount_id": 2,
        "restaurant_id": 4,
        "menu_id": 5,
        "menu_item_id": 3,
        "category_id": 6,
        "customer_id": 100,
        "driver_id": 30,
        "quantity": 1,
        "price_cents": 1250,
        "dispatched_on": placed + timedelta(minutes=10),
        "delivered_on": delivered,
        "day": day,
        "feed": feed,
    }


def test_etl_delivery_7_days_keeps_delivered_orders_with_their_delivery_time(spark):
    may_7 = date(2021, 5, 7)
    orders_7_days = frame(
        spark,
        ORDERS_7_DAYS,
        [
            _in_window("web-1", at(MAY_1, 10, 15), at(MAY_1, 10, 55, 30), may_7, "web"),
            _in_window("web-2", at(MAY_1, 11), None, may_7, "web"),  # never delivered
            _in_window(
                "app-3", at(MAY_1, 23, 50), at(date(2021, 5, 2), 0, 20), may_7, "app"
            ),  # across midnight
        ],
    )
    same = {
        "customer_id": 100,
        "restaurant_id": 4,
        "menu_id": 5,
        "menu_item_id": 3,
        "category_id": 6,
        "discount_id": 2,
        "driver_id": 30,
        "day": may_7,
    }
    expected = frame(
        spark,
        DELIVERY_7_DAYS,
        [
            {
                "order_id": "web-1",
                "order_placed_on": at(MAY_1, 10, 15),
                "order_dispatched_on": at(MAY_1, 10, 25),
                "order_delivered_on": at(MAY_1, 10, 55, 30),
                "delivery_seconds": 40 * 60 + 30,
                "feed": "web",
                **same,
            },
            {
                "order_id": "app-3",
                "order_placed_on": at(MAY_1, 23, 50),
                "order_dispatched_on": at(date(2021, 5, 2), 0, 0),
                "order_delivered_on": at(date(2021, 5, 2), 0, 20),
                "delivery_seconds": 30 * 60,
                "feed": "app",
                **same,
            },
        ],
    )
    assert_equal(etl_delivery_7_days(orders_7_days=orders_7_days), expected)


def _delivery(order_id: str, seconds: int, day: date, feed: str) -> dict:
    placed = at(day, 12)
    return {
        "order_id": order_id,
        "order_placed_on": placed,
        "order_dispatched_on": placed + timedelta(minutes=5),
        "order_delivered_on": placed + timedelta(seconds=seconds),
        "delivery_seconds": seconds,
        "customer_id": 100,
        "restaurant_id": 4,
        "menu_id": 5,
        "menu_item_id": 3,
        "category_id": 6,
        "discount_id": None,
        "driver_id": 30,
        "day": day,
        "feed": feed,
    }


def test_delivery_times_7_days_ranks_the_ten_slowest_per_day_and_feed(spark):
    may_7, may_8 = date(2021, 5, 7), date(2021, 5, 8)
    web_may_7 = [
        ("w05", 4000),
        ("w03", 3000),
        ("w02", 3000),
        ("w11", 2900),
        ("w01", 2500),
        ("w07", 2400),
        ("w09", 2300),
        ("w12", 2200),
        ("w04", 2100),
        ("w10", 2000),
        ("w06", 1900),
        ("w08", 100),
    ]
    delivery_7_days = frame(
        spark,
        DELIVERY_7_DAYS,
        [
            *(_delivery(order_id, seconds, may_7, "web") for order_id, seconds in web_may_7),
            _delivery("a1", 50, may_7, "app"),
            _delivery("a2", 70, may_7, "app"),
            _delivery("w13", 10, may_8, "web"),
        ],
    )
    # Slowest first; w02 and w03 tie and rank by order_id; w06 and w08 are not in the top 10.
    ranked = [
        (1, "w05", 4000, may_7, "web"),
        (2, "w02", 3000, may_7, "web"),
        (3, "w03", 3000, may_7, "web"),
        (4, "w11", 2900, may_7, "web"),
        (5, "w01", 2500, may_7, "web"),
        (6, "w07", 2400, may_7, "web"),
        (7, "w09", 2300, may_7, "web"),
        (8, "w12", 2200, may_7, "web"),
        (9, "w04", 2100, may_7, "web"),
        (10, "w10", 2000, may_7, "web"),
        (1, "a2", 70, may_7, "app"),
        (2, "a1", 50, may_7, "app"),
        (1, "w13", 10, may_8, "web"),
    ]
    expected = frame(
        spark,
        TOP_DELIVERY_TIMES,
        [
            {
                "rank": rank,
                "order_id": order_id,
                "order_placed_on": at(day, 12),
                "order_delivered_on": at(day, 12) + timedelta(seconds=seconds),
                "order_delivery_seconds": seconds,
                "customer_id": 100,
                "restaurant_id": 4,
                "driver_id": 30,
                "day": day,
                "feed": feed,
            }
            for rank, order_id, seconds, day, feed in ranked
        ],
    )
    assert_equal(delivery_times_7_days(delivery_7_days=delivery_7_days), expected)
