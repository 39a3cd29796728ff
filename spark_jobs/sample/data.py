"""The sample pipeline's data: a deterministic generator of raw food delivery orders, and
ways to break a warehouse so that a backfill has something real to repair.

Everything is computed by Spark from (seed, position) hashes, so the same arguments give the
same rows on any machine and any number of cores."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Literal

from pyspark.sql import Window
from pyspark.sql import functions as F

from backfill_orchestrator.errors import UserError
from spark_jobs.engine.scope import Scope
from spark_jobs.engine.storage import HadoopFs
from spark_jobs.engine.table_io import list_partitions, partition_path, read_table, replace_partitions
from spark_jobs.engine.tables import Table
from spark_jobs.sample.tables import MENU_ITEMS, RAW_ORDERS

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

FEEDS = ("web", "app", "partner")
MENU_ITEM_COUNT = 120
LATE_ORDERS_PER_PARTITION = 3
_ISO = "yyyy-MM-dd'T'HH:mm:ss'Z'"
_COMMENTS = ["leave at the door", "  no onions please ", "ring twice", "", "extra napkins"]

BreakMode = Literal["drop", "corrupt", "late"]


class NothingToBreakError(UserError, ValueError):
    """No partition of the table matches the days, hours and feeds given."""


class UnsupportedBreakError(UserError, ValueError):
    """That way of breaking does not apply to that table."""


@dataclass(frozen=True)
class GeneratorSettings:
    start: date
    days: int
    orders_per_hour: int = 20  # per feed, on average; each hour varies between half and 1.5 times
    seed: int = 7
    feeds: tuple[str, ...] = FEEDS
    # Orders in the first `hours_per_day` hours of each day (00:00 on). The demo's warehouse
    # takes 12 and the tests' 8: fewer partitions to write and read, every code path the same.
    hours_per_day: int = 24

    def __post_init__(self) -> None:
        if not 1 <= self.hours_per_day <= 24:
            raise ValueError(f"hours_per_day is 1 to 24, not {self.hours_per_day}")


def _random(seed: int, salt: str, modulo: int, *columns: Column) -> Column:
    """A deterministic pseudo-random integer in [0, modulo)."""
    return F.pmod(F.xxhash64(F.lit(seed), F.lit(salt), *columns), F.lit(modulo))


def _iso(seconds: Column) -> Column:
    return F.date_format(F.timestamp_seconds(seconds), _ISO)


def _order_id(*within_the_hour: Column) -> Column:
    """`<feed>-<yyyyMMdd>-<HH>-<within the hour>`: an order's id, unique in the raw layer."""
    return F.concat_ws(
        "-",
        "feed",
        F.date_format("day", "yyyyMMdd"),
        F.lpad(F.col("hour").cast("string"), 2, "0"),
        *within_the_hour,
    ).alias("order_id")


def raw_orders(spark: SparkSession, settings: GeneratorSettings) -> DataFrame:
    """Raw orders for `days` days from `start`, each of their first `hours_per_day` hours,
    every feed. Needs a UTC session."""
    feeds, seed, hours = settings.feeds, settings.seed, settings.hours_per_day
    most = settings.orders_per_hour // 2 + settings.orders_per_hour  # the busiest hour's orders
    slots = settings.days * hours * len(feeds)
    slot, k = F.floor(F.col("id") / most), F.pmod(F.col("id"), F.lit(most))
    in_this_slot = F.lit(settings.orders_per_hour // 2) + _random(
        seed, "volume", settings.orders_per_hour + 1, slot
    )
    day_index = F.floor(slot / (hours * len(feeds))).cast("int")
    hour = F.pmod(F.floor(slot / len(feeds)), F.lit(hours)).cast("int")
    feed = F.element_at(
        F.array(*[F.lit(f) for f in feeds]), (F.pmod(slot, F.lit(len(feeds))) + 1).cast("int")
    )
    base = (
        spark.range(slots * most)
        .where(k < in_this_slot)
        .select(
            F.col("id"),
            k.alias("k"),
            F.date_add(F.lit(settings.start), day_index).alias("day"),
            hour.alias("hour"),
            feed.alias("feed"),
        )
    )
    placed = (
        F.unix_timestamp(F.col("day").cast("timestamp"))
        + F.col("hour") * 3600
        + _random(seed, "second", 3600, "id")
    )
    dispatched = placed + 300 + _random(seed, "dispatch", 1200, "id")
    delivered = dispatched + 600 + _random(seed, "deliver", 3000, "id")
    cancelled = _random(seed, "cancel", 100, "id") < 3
    has_discount = _random(seed, "discounted", 10, "id") < 2
    comment_index = _random(seed, "comment", len(_COMMENTS) * 4, "id")
    return base.select(
        _order_id(F.lpad(F.col("k").cast("string"), 5, "0")),
        _iso(placed).alias("placed_on"),
        (_random(seed, "customer", 5000, "id") + 1).alias("customer_id"),
        (_random(seed, "item", MENU_ITEM_COUNT, "id") + 1).alias("menu_item_id"),
        (_random(seed, "quantity", 4, "id") + 1).cast("int").alias("quantity"),
        F.when(has_discount, _random(seed, "discount", 20, "id") + 1).alias("discount_id"),
        # Most orders carry no comment; some carry padding or an empty string, as feeds do.
        F.when(
            comment_index < len(_COMMENTS),
            F.element_at(F.array(*[F.lit(c) for c in _COMMENTS]), (comment_index + 1).cast("int")),
        ).alias("comment"),
        (_random(seed, "driver", 300, "id") + 1).alias("driver_id"),
        _iso(dispatched).alias("dispatched_on"),
        F.when(~cancelled, _iso(delivered)).alias("delivered_on"),
        "day",
        "hour",
        "feed",
    )


def menu_items(spark: SparkSession, seed: int) -> DataFrame:
    item = F.col("id")
    return spark.range(1, MENU_ITEM_COUNT + 1).select(
        item.alias("id"),
        F.concat(F.lit("item-"), item.cast("string")).alias("name"),
        (F.lit(500) + _random(seed, "price", 2500, item)).alias("price_cents"),
        (F.pmod(item, F.lit(10)) + 1).alias("category_id"),
        (F.pmod(item, F.lit(30)) + 1).alias("menu_id"),
        (F.pmod(item, F.lit(15)) + 1).alias("restaurant_id"),
    )


def generate(*, spark: SparkSession, warehouse: str, settings: GeneratorSettings) -> int:
    """Replace the raw layer with generated data; returns the number of orders."""
    orders = raw_orders(spark, settings)
    (
        orders.repartition("day", "hour", "feed")
        .write.mode("overwrite")
        .option("partitionOverwriteMode", "static")  # the whole raw layer, not just these partitions
        .partitionBy("day", "hour", "feed")
        .json(RAW_ORDERS.uri(warehouse))
    )
    menu_items(spark, settings.seed).coalesce(1).write.mode("overwrite").json(MENU_ITEMS.uri(warehouse))
    return read_table(spark=spark, warehouse=warehouse, table=RAW_ORDERS).count()


def _late_orders(existing: DataFrame, seed: int) -> DataFrame:
    """A few more orders for each existing partition, as if a feed delivered them late."""
    slots = existing.select("day", "hour", "feed").distinct()
    late = slots.crossJoin(
        F.broadcast(existing.sparkSession.range(LATE_ORDERS_PER_PARTITION).withColumnRenamed("id", "k"))
    )
    key = F.concat_ws(
        "/", F.col("day").cast("string"), F.col("hour").cast("string"), "feed", F.col("k").cast("string")
    )
    placed = (
        F.unix_timestamp(F.col("day").cast("timestamp"))
        + F.col("hour") * 3600
        + _random(seed, "late", 3600, key)
    )
    return late.select(
        _order_id(F.lit("late"), F.col("k").cast("string")),
        _iso(placed).alias("placed_on"),
        (_random(seed, "late-customer", 5000, key) + 1).alias("customer_id"),
        (_random(seed, "late-item", MENU_ITEM_COUNT, key) + 1).alias("menu_item_id"),
        F.lit(1).alias("quantity"),
        F.lit(None).cast("long").alias("discount_id"),
        F.lit("arrived late").alias("comment"),
        (_random(seed, "late-driver", 300, key) + 1).alias("driver_id"),
        _iso(placed + 600).alias("dispatched_on"),
        _iso(placed + 2400).alias("delivered_on"),
        "day",
        "hour",
        "feed",
    )


def break_partitions(
    *, spark: SparkSession, warehouse: str, table: Table, scope: Scope, mode: BreakMode, seed: int = 7
) -> list[str]:
    """Damage the table's partitions within `scope`; returns their paths.

    drop: delete them. corrupt (processed tables): lose every other row. late (raw orders):
    add late-arriving orders, so the processed layer is behind the raw one. Running `late`
    twice gives the same rows (it replaces its own earlier late orders)."""
    partitions = list_partitions(spark=spark, warehouse=warehouse, table=table, scope=scope)
    if not partitions:
        raise NothingToBreakError(f"no partition of {table.name} matches the days, hours and feeds given")
    if mode == "late" and table != RAW_ORDERS:
        raise UnsupportedBreakError(f"late orders only make sense in {RAW_ORDERS.name}, not {table.name}")
    if mode == "corrupt" and table.format != "parquet":
        raise UnsupportedBreakError(f"corrupt applies to processed tables; use drop or late for {table.name}")
    paths = [partition_path(partition) for partition in partitions]
    if mode == "drop":
        filesystem = HadoopFs(spark)
        for path in paths:
            filesystem.delete(f"{table.uri(warehouse)}/{path}")
        return paths
    current = read_table(spark=spark, warehouse=warehouse, table=table, scope=scope)
    if mode == "late":
        on_time = current.where(~F.col("order_id").contains("-late-"))
        damaged = on_time.unionByName(_late_orders(on_time, seed))
    else:
        order = Window.partitionBy(*table.partition_columns).orderBy("order_id")
        damaged = current.withColumn("_n", F.row_number().over(order)).where(F.col("_n") % 2 == 0).drop("_n")
    replace_partitions(spark=spark, frame=damaged, warehouse=warehouse, table=table, scope=scope)
    return paths
