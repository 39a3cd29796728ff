"""Helpers for the Spark tests (tests/spark/, and the Airflow tests that compare warehouses):
the sample's dates, file snapshots, warehouse equality, hand-written plans."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path

from pyspark.sql import SparkSession

from backfill_orchestrator.config import BackfillConfig, backfill_id
from backfill_orchestrator.contracts.plan import Plan
from tests.support.configs import REPO_ROOT

START = date(2021, 5, 1)
DAYS = 9
ORDERS_PER_HOUR = 2
HOURS_PER_DAY = 8  # hours 0-7 of each day: every hour a test names, a third of 24's partitions


def file_snapshot(root: Path) -> dict[str, tuple[int, int, str]]:
    """Every data file under `root`, as readers see them (no file or directory whose name starts
    with `.` or `_`: Spark's markers, staging, safe publish's `_backfill`): relative path ->
    (size, mtime in ns, sha256)."""
    snapshot = {}
    for path in sorted(root.rglob("*")):
        hidden = any(part.startswith((".", "_")) for part in path.relative_to(root).parts)
        if path.is_file() and not hidden:
            stat = path.stat()
            snapshot[str(path.relative_to(root))] = (
                stat.st_size,
                stat.st_mtime_ns,
                hashlib.sha256(path.read_bytes()).hexdigest(),
            )
    return snapshot


def plan_with_planner(config: BackfillConfig) -> Plan:
    """The real planner over Marquez's food delivery lineage and the example job catalog."""
    from backfill_local.marquez_double import InProcessMarquez, LineageStore, food_delivery_events
    from backfill_orchestrator.planner.build import build_plan
    from backfill_orchestrator.planner.catalog import JobCatalog

    store = LineageStore()
    store.ingest_all(food_delivery_events())
    return build_plan(
        config,
        backfill_id=backfill_id(config),
        lineage=InProcessMarquez(store),
        catalog=JobCatalog.load(str(REPO_ROOT / "examples" / "catalog.yaml")),
        today=date(2026, 1, 1),
    )


def assert_tables_equal(spark: SparkSession, actual: Path, expected: Path, tables=None) -> None:
    """Same rows (in any order) in every processed table of two warehouses."""
    from pyspark.testing import assertDataFrameEqual

    from spark_jobs.engine.table_io import read_table
    from spark_jobs.sample.tables import PROCESSED_TABLES

    for table in tables or PROCESSED_TABLES:
        assertDataFrameEqual(
            read_table(spark=spark, warehouse=str(actual), table=table),
            read_table(spark=spark, warehouse=str(expected), table=table),
            checkRowOrder=False,
        )


def partition_of(relative_file: str, table_location: str) -> dict[str, object] | None:
    """`processed/orders/day=.../hour=3/feed=web/part-...` -> {"day": date, "hour": 3, "feed": "web"}."""
    if not relative_file.startswith(table_location + "/"):
        return None
    values: dict[str, object] = {}
    for segment in relative_file[len(table_location) + 1 :].split("/")[:-1]:
        column, _, text = segment.partition("=")
        values[column] = (
            date.fromisoformat(text) if column == "day" else int(text) if column == "hour" else text
        )
    return values


def hand_step(transform, dates, *, upstream=(), hours=None, feeds=None, kind="spark") -> dict:
    return {
        "id": transform,
        "job": {"namespace": "food_delivery", "name": transform},
        "dag_id": transform,
        "kind": kind,
        "transform": transform if kind == "spark" else None,
        "dates": [d.isoformat() for d in dates],
        "hours": hours,
        "feeds": feeds,
        "reason": "downstream" if upstream else "root",
        "upstream": list(upstream),
    }


def hand_plan(*waves: list[dict]) -> Plan:
    """A plan built by hand, for shapes the planner does not produce (independent roots)."""
    return Plan.model_validate(
        {
            "backfill_id": "hand-made-00000000",
            "name": "hand-made",
            "owner": "@data-platform",
            "created_at": "2026-01-01T00:00:00Z",
            "roots": [{"namespace": "food_delivery", "name": "etl_orders"}],
            "dates": ["2021-05-05"],
            "waves": [{"index": i, "steps": steps} for i, steps in enumerate(waves)],
        }
    )


@contextmanager
def small_session(app_name: str) -> Iterator[SparkSession]:
    """A local SparkSession sized for 2 cores (no UI, 2 shuffle partitions) with the job's
    settings; the active one when there is one (getOrCreate), stopped only if made here."""
    from spark_jobs.engine.session import configure

    existing = SparkSession.getActiveSession()
    session = (
        SparkSession.builder.master("local[2]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    configure(session)
    try:
        yield session
    finally:
        if existing is None:
            session.stop()
