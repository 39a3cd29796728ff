"""Daily reconciliation: compare order counts per day, hour and feed between the raw layer
and the processed layer, and turn the mismatches into a backfill config (version 1).

etl_orders writes one processed row per raw row into the same (day, hour, feed) partition,
so any difference in counts means the processed partition is stale, damaged or missing (or
exists without raw data)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any

import yaml
from pyspark.sql import functions as F

from backfill_orchestrator.config.model import merge_intervals
from spark_jobs.engine.scope import ALL, DAY, FEED, HOUR, Scope
from spark_jobs.engine.storage import HadoopFs
from spark_jobs.engine.table_io import read_table
from spark_jobs.sample.tables import ORDERS, RAW_ORDERS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

KEYS = [DAY, HOUR, FEED]
ALL_HOURS = tuple(range(24))
WRITER_JOB = "etl_orders"  # the lineage job that writes the processed orders compared here
MAX_DESCRIPTION = 500


class MissingRawLayerError(ValueError):
    """The warehouse has no raw orders to compare with."""


@dataclass(frozen=True, order=True)
class Mismatch:
    day: date
    hour: int
    feed: str
    raw_rows: int
    processed_rows: int

    def __str__(self) -> str:
        return f"{self.day.isoformat()} hour {self.hour:2d} feed {self.feed}: raw {self.raw_rows}, processed {self.processed_rows}"


def _counts(frame: DataFrame, column: str) -> DataFrame:
    return frame.groupBy(*KEYS).agg(F.count(F.lit(1)).alias(column))


def find_mismatches(*, spark: SparkSession, warehouse: str, scope: Scope = ALL) -> list[Mismatch]:
    """Partitions whose raw and processed row counts differ, a missing side counting as 0."""
    if not HadoopFs(spark).exists(RAW_ORDERS.uri(warehouse)):
        raise MissingRawLayerError(f"no raw orders at {RAW_ORDERS.uri(warehouse)}")
    raw = _counts(read_table(spark=spark, warehouse=warehouse, table=RAW_ORDERS, scope=scope), "raw_rows")
    processed = _counts(read_table(spark=spark, warehouse=warehouse, table=ORDERS, scope=scope), "processed_rows")
    compared = raw.join(processed, KEYS, "full_outer").fillna(0, subset=["raw_rows", "processed_rows"])
    rows = compared.where(F.col("raw_rows") != F.col("processed_rows")).collect()
    return sorted(
        Mismatch(row[DAY], row[HOUR], row[FEED], int(row["raw_rows"]), int(row["processed_rows"])) for row in rows
    )


def _date_entries(days: list[date]) -> list[Any]:
    """Runs of consecutive days as {start, end} ranges, lone days as plain dates."""
    entries: list[Any] = []
    for start, end in merge_intervals([(day, day) for day in days]):
        entries.append(start.isoformat() if start == end else {"start": start.isoformat(), "end": end.isoformat()})
    return entries


def backfill_config(
    mismatches: list[Mismatch], *, name: str, owner: str, namespace: str, checked_on: date
) -> dict[str, Any]:
    """A batch config rooted at etl_orders for the mismatched days, hours and feeds.

    Config v1 covers days x hours x feeds, so when mismatches are scattered the config also
    names some partitions that matched; rerunning those is harmless (the job is idempotent)."""
    if not mismatches:
        raise ValueError("no mismatches: there is nothing to backfill")
    days = sorted({m.day for m in mismatches})
    hours = sorted({m.hour for m in mismatches})
    feeds = sorted({m.feed for m in mismatches})
    description = (
        f"Reconciliation on {checked_on.isoformat()}: {len(mismatches)} (day, hour, feed) partitions "
        f"where raw and processed order counts differ"
    )
    document: dict[str, Any] = {
        "version": 1,
        "name": name,
        "description": description[:MAX_DESCRIPTION],
        "owner": owner,
        "mode": "batch",
        "jobs": [{"namespace": namespace, "name": WRITER_JOB}],
        "dates": _date_entries(days),
    }
    if tuple(hours) != ALL_HOURS:  # every hour is what leaving `hours` out means
        document["hours"] = hours
    document["feeds"] = feeds
    return document


def covered_partitions(document: dict[str, Any], days: int) -> int:
    return days * len(document.get("hours", ALL_HOURS)) * len(document["feeds"])


def render_yaml(document: dict[str, Any], *, header: str) -> str:
    body = yaml.safe_dump(document, sort_keys=False, default_flow_style=None, width=100)
    return "".join(f"# {line}\n" for line in header.splitlines()) + body
