"""Safe publish of catalogued tables on real local Spark: the local Hive metastore (Derby,
embedded) and moto's Glue (the EMR case). A publish swaps each partition's location in the
catalog: a reader querying in a loop sees every partition old or new, never missing or mixed;
undo swaps them back; the replaced data stays where it was."""

from __future__ import annotations

import shutil
import threading
import time
from collections import defaultdict
from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path

import boto3
import pytest

from backfill_orchestrator.contracts.publish import ManifestState, PublishPolicy, TableKind
from backfill_orchestrator.publish import FileDataStore, GlueCatalog, Publisher, PublishLayout
from spark_jobs.engine.catalogs import Catalogs
from spark_jobs.engine.hive import register_table
from spark_jobs.engine.publishing import PublishSettings
from spark_jobs.engine.runner import run_plan
from spark_jobs.engine.scope import Scope
from spark_jobs.engine.table_io import read_table
from spark_jobs.sample.data import break_partitions
from spark_jobs.sample.tables import ORDERS, ORDERS_7_DAYS
from spark_jobs.sample.transforms import FOOD_DELIVERY
from tests.support.publish import register_glue_tables
from tests.support.spark import file_snapshot, hand_plan, hand_step

pytestmark = pytest.mark.slow

DAY = date(2021, 5, 5)
DEFAULT = PublishPolicy()
TOUCHED = (ORDERS, ORDERS_7_DAYS)  # the tables PLAN rewrites; the others are not read through the catalog
PLAN = hand_plan(  # one feed: each partition swap is a few metastore transactions on Derby
    [hand_step("etl_orders", [DAY], feeds=["web"])],
    [hand_step("etl_orders_7_days", [DAY], upstream=["etl_orders"], feeds=["web"])],
)
BROKEN = Scope(days=(DAY,), feeds=("web",))


@pytest.fixture
def hive_warehouse(spark, warehouse: Path):
    """The tables PLAN rewrites in the session's metastore, over a warehouse whose web orders of
    DAY lost every other row."""
    spark.sql("DROP DATABASE IF EXISTS food_delivery CASCADE")  # external tables: the data stays
    break_partitions(spark=spark, warehouse=str(warehouse), table=ORDERS, scope=BROKEN, mode="corrupt")
    for table in TOUCHED:
        register_table(spark, table=table, warehouse=str(warehouse))
    yield warehouse
    spark.sql("DROP DATABASE IF EXISTS food_delivery CASCADE")


def keys_by_partition(spark) -> dict[tuple[int, str], frozenset[str]]:
    found: dict[tuple[int, str], set[str]] = defaultdict(set)
    for row in (
        spark.table("food_delivery.orders")
        .where(f"day = DATE'{DAY}'")
        .select("hour", "feed", "order_id")
        .collect()
    ):
        found[(row["hour"], row["feed"])].add(row["order_id"])
    return {key: frozenset(value) for key, value in found.items()}


class SlowSwaps:
    """The metastore, each partition swap followed by a pause: a reader gets many looks in."""

    def __init__(self, inner, pause: float) -> None:
        self._inner, self._pause, self.kind = inner, pause, inner.kind

    def __getattr__(self, name: str):
        return getattr(self._inner, name)

    def set_location(self, table: str, partition: str, location: str) -> None:
        self._inner.set_location(table, partition, location)
        time.sleep(self._pause)


def hive_settings_for(
    spark, warehouse: Path, backfill_id: str, policy: PublishPolicy = DEFAULT
) -> PublishSettings:
    return PublishSettings.build(
        spark=spark,
        backfill_id=backfill_id,
        attempt=1,
        root=str(warehouse / "_backfill"),
        policy=policy,
        catalogs=Catalogs(spark, "hive"),
    )


def test_a_reader_looping_over_a_partition_during_publish_never_sees_it_missing_or_mixed(
    spark, pristine, hive_warehouse
):
    old = keys_by_partition(spark)
    held = hive_settings_for(
        spark, hive_warehouse, PLAN.backfill_id, policy=PublishPolicy(auto_publish=False)
    )
    report = run_plan(
        spark=spark,
        plan=hand_plan([hand_step("etl_orders", [DAY], feeds=["web"])]),
        warehouse=str(hive_warehouse),
        registry=FOOD_DELIVERY,
        publishing=held,
    )
    assert report.status == "awaiting_publish"
    assert keys_by_partition(spark) == old  # staged only
    slow = SlowSwaps(held.catalogs.catalog(TableKind.HIVE), pause=0.2)
    publisher = replace(held.publisher, catalogs={TableKind.HIVE: slow})
    looks: list[dict[tuple[int, str], frozenset[str]]] = []
    done = threading.Event()

    def reader() -> None:
        while not done.is_set():
            looks.append(keys_by_partition(spark))

    thread = threading.Thread(target=reader, name="reader")
    thread.start()
    try:
        published = publisher.publish(publisher.load_manifest(PLAN.backfill_id, 1, "etl_orders"), by="@jane")
    finally:
        done.set()
        thread.join()
    assert published.state is ManifestState.PUBLISHED
    new = keys_by_partition(spark)
    changed = {p for p in set(old) | set(new) if old.get(p) != new.get(p)}
    assert changed and all(feed == "web" for _, feed in changed)  # the step's feed only
    both = 0
    for look in looks:
        versions = set()
        for partition in set(old) | set(new):
            seen = look.get(partition)
            if seen is None:  # absent: only right for a partition that is absent in one version
                assert partition not in old or partition not in new, f"{partition} was missing"
                versions.add("old" if partition not in old else "new")
            else:
                assert seen in (old.get(partition), new.get(partition)), (
                    f"{partition} held rows of both versions"
                )
                if old.get(partition) != new.get(partition):
                    versions.add("old" if seen == old.get(partition) else "new")
        both += versions == {"old", "new"}
    assert both, f"no look fell inside the publish ({len(looks)} looks)"


def test_a_hive_table_is_published_by_location_swaps_and_undone(spark, pristine, hive_warehouse):
    before_files = file_snapshot(hive_warehouse)
    publishing = hive_settings_for(spark, hive_warehouse, PLAN.backfill_id)
    report = run_plan(
        spark=spark, plan=PLAN, warehouse=str(hive_warehouse), registry=FOOD_DELIVERY, publishing=publishing
    )
    assert report.status == "succeeded", [s.error for s in report.steps]
    catalogs = publishing.catalogs
    for table in TOUCHED:  # through the metastore: the clean run
        published = read_table(spark=spark, warehouse=str(hive_warehouse), table=table, catalogs=catalogs)
        clean = read_table(spark=spark, warehouse=str(pristine), table=table)
        assert sorted(published.collect()) == sorted(clean.collect()), table.name
    assert file_snapshot(hive_warehouse) == before_files  # nothing moved: the old partitions are the backups
    manifest = publishing.publisher.load_manifest(PLAN.backfill_id, 1, "etl_orders")
    assert manifest.table_kind is TableKind.HIVE and manifest.catalog_table == "food_delivery.orders"
    location = catalogs.catalog(TableKind.HIVE).location("food_delivery.orders", f"day={DAY}/hour=3/feed=web")
    assert f"/processed/orders/_backfill/{PLAN.backfill_id}/a1/day={DAY}/hour=3/feed=web" in location
    hive = catalogs.catalog(TableKind.HIVE)
    of_the_day = hive.locations("food_delivery.orders", [str(DAY)])  # the metastore picks the day's
    assert of_the_day and all(partition.startswith(f"day={DAY}/") for partition in of_the_day)
    next_day = hive.locations("food_delivery.orders", [str(DAY + timedelta(days=1))])
    assert next_day and not of_the_day.keys() & next_day.keys()

    publishing.publisher.undo(PLAN.backfill_id, by="@jane")
    for table in TOUCHED:
        restored = read_table(spark=spark, warehouse=str(hive_warehouse), table=table, catalogs=catalogs)
        by_path = read_table(spark=spark, warehouse=str(hive_warehouse), table=table)
        assert sorted(restored.collect()) == sorted(by_path.collect()), table.name
    assert not (hive_warehouse / "processed" / "orders" / "_backfill" / PLAN.backfill_id / "a1").exists()


def test_glue_tables_are_published_in_the_job_and_undone_from_plain_python(
    spark, pristine, warehouse, mocked_aws
):
    glue = boto3.client("glue", region_name="us-east-1")
    break_partitions(spark=spark, warehouse=str(warehouse), table=ORDERS, scope=BROKEN, mode="corrupt")
    before = warehouse.parent / "before"
    shutil.copytree(warehouse, before)
    register_glue_tables(glue, warehouse=str(warehouse), tables=TOUCHED)
    catalogs = Catalogs(spark, "glue", glue=GlueCatalog(glue_client=glue))
    publishing = PublishSettings.build(
        spark=spark,
        backfill_id=PLAN.backfill_id,
        attempt=1,
        root=str(warehouse / "_backfill"),
        policy=PublishPolicy(),
        catalogs=catalogs,
    )
    report = run_plan(
        spark=spark, plan=PLAN, warehouse=str(warehouse), registry=FOOD_DELIVERY, publishing=publishing
    )
    assert report.status == "succeeded", [s.error for s in report.steps]
    for table in TOUCHED:  # at the locations Glue gives: the clean run
        published = read_table(spark=spark, warehouse=str(warehouse), table=table, catalogs=catalogs)
        clean = read_table(spark=spark, warehouse=str(pristine), table=table)
        assert sorted(published.collect()) == sorted(clean.collect()), table.name

    # The lifecycle's undo runs in a plain Python process: boto3's Glue and the local disk.
    plain = Publisher(
        layout=PublishLayout(str(warehouse / "_backfill")),
        store=FileDataStore(),
        catalogs={TableKind.GLUE: GlueCatalog(glue_client=glue)},
    )
    assert {m.state for m in plain.undo(PLAN.backfill_id, by="@jane")} == {ManifestState.UNDONE}
    for table in TOUCHED:
        restored = read_table(spark=spark, warehouse=str(warehouse), table=table, catalogs=catalogs)
        original = read_table(spark=spark, warehouse=str(before), table=table)
        assert sorted(restored.collect()) == sorted(original.collect()), table.name
