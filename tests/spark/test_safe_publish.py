"""Safe publish on real local Spark, path tables (the sample's warehouse as it is): a step is
staged, checked and published or held; publish gives the clean run, undo gives back the state
before, a crash between two partition swaps is finished by the next attempt, and undo refuses
when a later backfill republished a partition."""

from __future__ import annotations

import shutil
from dataclasses import replace
from datetime import date
from functools import partial
from pathlib import Path

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from backfill_orchestrator.config import parse_config
from backfill_orchestrator.contracts import StepChecks, StepStatus
from backfill_orchestrator.contracts.publish import ChecksVerdict, ManifestState, PublishPolicy
from backfill_orchestrator.publish import PartitionRepublishedError, Side
from spark_jobs.engine import backfill_job
from spark_jobs.engine.catalogs import Catalogs
from spark_jobs.engine.checks import key_changes, profiles
from spark_jobs.engine.publishing import PublishSettings
from spark_jobs.engine.registry import Registry
from spark_jobs.engine.runner import run_plan
from spark_jobs.engine.scope import Scope
from spark_jobs.engine.storage import HadoopFs
from spark_jobs.sample.data import break_partitions
from spark_jobs.sample.tables import ORDERS, PROCESSED_TABLES
from spark_jobs.sample.transforms import FOOD_DELIVERY
from tests.support.publish import CrashAfter, InjectedCrash
from tests.support.spark import (
    HOURS_PER_DAY,
    assert_tables_equal,
    file_snapshot,
    hand_plan,
    hand_step,
    plan_with_planner,
)

pytestmark = pytest.mark.slow

DROPPED_DAY, CORRUPTED_DAY = date(2021, 5, 3), date(2021, 5, 6)
REPAIR = {
    "version": 1,
    "name": "orders-repair",
    "owner": "@data-platform",
    "mode": "batch",
    "jobs": [{"namespace": "food_delivery", "name": "etl_orders"}],
    "dates": [DROPPED_DAY.isoformat(), CORRUPTED_DAY.isoformat()],
    "feeds": ["app", "web"],
}
STRICT = PublishPolicy(max_rows_removed_percent=5, allow_emptied_partitions=False)


def settings(spark, warehouse: Path, backfill_id: str, *, attempt: int = 1, policy=STRICT, publisher=None):
    built = PublishSettings.build(
        spark=spark,
        backfill_id=backfill_id,
        attempt=attempt,
        root=str(warehouse / "_backfill"),
        policy=policy,
        catalogs=Catalogs(spark, "none"),
    )
    return built if publisher is None else replace(built, publisher=publisher)


def broken(spark, warehouse: Path) -> None:
    break_partitions(
        spark=spark,
        warehouse=str(warehouse),
        table=ORDERS,
        scope=Scope(days=(DROPPED_DAY,), feeds=("web",)),
        mode="drop",
    )
    break_partitions(
        spark=spark,
        warehouse=str(warehouse),
        table=ORDERS,
        scope=Scope(days=(CORRUPTED_DAY,), hours=(1, 2), feeds=("app",)),
        mode="corrupt",
    )


def _drops_even_hours(**frames: DataFrame) -> DataFrame:
    return FOOD_DELIVERY["etl_orders"].apply(frames).where(F.col("hour") % 2 == 1)


BUGGY = Registry({t.name: t for t in FOOD_DELIVERY if t.name != "etl_orders"})
BUGGY.add(replace(FOOD_DELIVERY["etl_orders"], function=_drops_even_hours))


def test_a_transform_bug_that_drops_rows_is_caught_by_the_diff_and_nothing_is_published(spark, warehouse):
    days = [date(2021, 5, 5), date(2021, 5, 6)]  # more emptied partitions than the diff's top 20
    plan = hand_plan(
        [hand_step("etl_orders", days)],
        [hand_step("etl_orders_7_days", days, upstream=["etl_orders"])],
    )
    before = file_snapshot(warehouse)
    publishing = settings(spark, warehouse, plan.backfill_id)
    report = run_plan(spark=spark, plan=plan, warehouse=str(warehouse), registry=BUGGY, publishing=publishing)

    assert report.status == "awaiting_publish"
    held, blocked = report.steps
    assert held.status is StepStatus.AWAITING_PUBLISH
    assert blocked.status is StepStatus.BLOCKED and blocked.blocked_by == ["etl_orders"]
    assert file_snapshot(warehouse) == before  # live untouched: nothing published
    checks = StepChecks.from_json(Path(held.checks_uri).read_bytes())
    assert checks.verdict is ChecksVerdict.HOLD
    assert checks.diff.rows_after < checks.diff.rows_before
    assert (
        checks.diff.keys_removed == checks.diff.rows_before - checks.diff.rows_after
        and checks.diff.keys_added == 0
    )
    assert checks.diff.partitions_emptied == len(days) * HOURS_PER_DAY // 2 * 3  # even hours, every feed
    assert checks.reasons[0].startswith("day=2021-05-05/hour=0/feed=app: would be emptied")
    assert held.hold_reasons == checks.reasons[:20]
    assert len(checks.diff.top) == 20 and checks.diff.top[0].examples_removed  # bounded, with examples

    manifest = publishing.publisher.load_manifest(plan.backfill_id, 1, "etl_orders")
    assert manifest.state is ManifestState.STAGED
    discarded = publishing.publisher.discard(manifest)
    assert discarded.state is ManifestState.DISCARDED
    assert not HadoopFs(spark).exists(manifest.staging_uri)
    assert file_snapshot(warehouse) == before


@pytest.fixture(scope="module")
def published(spark, pristine, tmp_path_factory):
    """A broken warehouse, a copy of it, and the planner's repair staged and published."""
    root = tmp_path_factory.mktemp("published")
    warehouse, before = root / "warehouse", root / "before"
    shutil.copytree(pristine, warehouse)
    broken(spark, warehouse)
    shutil.copytree(warehouse, before)
    plan = plan_with_planner(parse_config(REPAIR))
    publishing = settings(spark, warehouse, plan.backfill_id)
    report = run_plan(
        spark=spark, plan=plan, warehouse=str(warehouse), registry=FOOD_DELIVERY, publishing=publishing
    )
    return warehouse, before, plan, publishing, report


def test_publish_makes_the_warehouse_equal_to_a_clean_run_table_by_table(spark, pristine, published):
    warehouse, _, plan, publishing, report = published
    assert report.status == "succeeded", [s.error or s.hold_reasons for s in report.steps]
    for table in PROCESSED_TABLES:
        assert_tables_equal(spark, warehouse, pristine, [table])
    for step in report.steps:
        manifest = publishing.publisher.load_manifest(plan.backfill_id, 1, step.id)
        assert manifest.state is ManifestState.PUBLISHED and manifest.published_by == "auto"
        assert step.manifest_uri and step.checks_uri
    orders = publishing.publisher.load_manifest(plan.backfill_id, 1, "etl_orders")
    assert {e.action.value for e in orders.partitions} == {"create", "replace"}  # dropped ones come back
    record = publishing.publisher.published_by("orders", f"day={DROPPED_DAY}/hour=0/feed=web")
    assert record is not None and record.backfill_id == plan.backfill_id


def test_undo_gives_back_the_warehouse_as_it_was_before_the_backfill_row_for_row(spark, published):
    warehouse, before, plan, publishing, _ = published
    undone = publishing.publisher.undo(plan.backfill_id, by="@jane")
    assert {m.state for m in undone} == {ManifestState.UNDONE}
    assert file_snapshot(warehouse) == file_snapshot(before) | {}  # same files: the backups moved back
    for table in PROCESSED_TABLES:
        assert_tables_equal(spark, warehouse, before, [table])
    assert not list((warehouse / "_backfill" / "staging").rglob("*.parquet"))
    assert not list((warehouse / "_backfill" / "backups").rglob("*.parquet"))


def test_a_crash_between_two_partition_swaps_is_finished_by_the_retry(spark, pristine, warehouse):
    broken(spark, warehouse)
    plan = plan_with_planner(parse_config(REPAIR))
    first = settings(spark, warehouse, plan.backfill_id)
    store = CrashAfter(first.publisher.store, at=7)  # the 7th move: in the middle of etl_orders' publish
    crashing = replace(first.publisher, store=store)
    with pytest.raises(InjectedCrash):
        run_plan(
            spark=spark,
            plan=plan,
            warehouse=str(warehouse),
            registry=FOOD_DELIVERY,
            publishing=replace(first, publisher=crashing),
        )
    left = first.publisher.load_manifest(plan.backfill_id, 1, "etl_orders")
    assert left.state is ManifestState.PUBLISHING
    sides = [first.publisher.side(left, entry) for entry in left.partitions]
    assert Side.NEW in sides and Side.OLD in sides  # stopped between two partitions

    retry = settings(spark, warehouse, plan.backfill_id, attempt=2)
    report = run_plan(
        spark=spark, plan=plan, warehouse=str(warehouse), registry=FOOD_DELIVERY, publishing=retry
    )
    assert report.status == "succeeded", [s.error for s in report.steps]
    assert first.publisher.load_manifest(plan.backfill_id, 1, "etl_orders").state is ManifestState.PUBLISHED
    for table in PROCESSED_TABLES:
        assert_tables_equal(spark, warehouse, pristine, [table])


def test_undo_refuses_when_a_later_backfill_republished_a_partition(spark, warehouse):
    day = date(2021, 5, 5)
    first = hand_plan([hand_step("etl_orders", [day], feeds=["web"])])
    second = first.model_copy(update={"backfill_id": "hand-made-0000000b"})
    policy = PublishPolicy()
    for plan in (first, second):
        report = run_plan(
            spark=spark,
            plan=plan,
            warehouse=str(warehouse),
            registry=FOOD_DELIVERY,
            publishing=settings(spark, warehouse, plan.backfill_id, policy=policy),
        )
        assert report.status == "succeeded"
    publisher = settings(spark, warehouse, first.backfill_id).publisher
    snapshot = file_snapshot(warehouse)
    with pytest.raises(PartitionRepublishedError) as refused:
        publisher.undo(first.backfill_id, by="@jane")
    assert refused.value.later_backfills == ["hand-made-0000000b"]
    assert refused.value.issues[0].location == f"orders/day={day}/hour=0/feed=web"
    assert (
        "republished by backfill hand-made-0000000b (step etl_orders, attempt 1)"
        in refused.value.issues[0].message
    )
    assert file_snapshot(warehouse) == snapshot  # refused before any change
    publisher.undo("hand-made-0000000b", by="@jane")
    publisher.undo(first.backfill_id, by="@jane")


def test_the_job_stages_and_publishes_by_the_policy_it_is_given(spark, warehouse, tmp_path):
    plan = hand_plan([hand_step("etl_orders", [date(2021, 5, 5)], feeds=["web"])])
    plan_path, report_path, policy_path = (
        tmp_path / "plan.json",
        tmp_path / "report.json",
        tmp_path / "policy.json",
    )
    plan_path.write_text(plan.to_json())
    policy_path.write_text(PublishPolicy(auto_publish=False).to_json())
    before = file_snapshot(warehouse)
    args = [
        "--plan",
        str(plan_path),
        "--warehouse",
        str(warehouse),
        "--report",
        str(report_path),
        "--attempt",
        "3",
    ]
    assert backfill_job.main([*args, "--publish-policy", str(policy_path)]) == 0  # held: a person decides
    assert '"status": "awaiting_publish"' in report_path.read_text()
    assert file_snapshot(warehouse) == before
    assert backfill_job.main(args) == 0  # the next run discards the held staging and publishes
    assert not (warehouse / "_backfill" / "staging" / plan.backfill_id / "a3" / "etl_orders").exists()
    assert backfill_job.main([*args, "--publish-policy", str(tmp_path / "missing.json")]) == 2


def test_a_live_partition_of_another_type_is_a_located_schema_failure_and_nothing_is_published(
    spark, warehouse, tmp_path
):
    """The live files of a day hold `customer_id` as int (written by an older job); the staged
    output has the table's bigint: the step fails its checks, the difference named, live
    untouched."""
    day = date(2021, 5, 5)
    table = warehouse / ORDERS.location
    drifted = tmp_path / "drifted"
    (
        spark.read.option("basePath", str(table))
        .parquet(str(table / f"day={day}"))
        .withColumn("customer_id", F.col("customer_id").cast("int"))
        .write.partitionBy(*ORDERS.partition_columns)
        .parquet(str(drifted))
    )
    shutil.rmtree(table / f"day={day}")
    shutil.move(drifted / f"day={day}", table / f"day={day}")
    plan = hand_plan([hand_step("etl_orders", [day], feeds=["web"])])
    before = file_snapshot(warehouse)
    publishing = settings(spark, warehouse, plan.backfill_id)
    report = run_plan(
        spark=spark, plan=plan, warehouse=str(warehouse), registry=FOOD_DELIVERY, publishing=publishing
    )

    (failed,) = report.steps
    assert failed.status is StepStatus.FAILED
    assert (
        failed.error
        == "checks failed, nothing published: schema: column customer_id: staged bigint, live int"
    )
    checks = StepChecks.from_json(Path(failed.checks_uri).read_bytes())
    assert checks.verdict is ChecksVerdict.FAILED and not checks.schema_check.passed
    assert checks.schema_check.problems == ["column customer_id: staged bigint, live int"]
    assert checks.diff.rows_after == checks.diff.rows_before  # the rows themselves are the same
    assert file_snapshot(warehouse) == before


def test_the_key_diff_reads_only_the_partitions_whose_keys_may_differ(spark):
    """Same rows and key digest: no keys changed, and the partition is not looked at again
    (its frame would raise if it were); a swapped key with the same row count, a new and an
    emptied partition are all found."""
    schema = "order_id string, amount bigint, day string"
    old = spark.createDataFrame(
        [("a", 1, "1"), ("b", 2, "1"), ("c", 3, "2"), ("d", 4, "2"), ("e", 5, "3")], schema
    )
    new = spark.createDataFrame(
        [("a", 10, "1"), ("b", 20, "1"), ("c", None, "2"), ("x", 4, "2"), ("f", 6, "4")], schema
    )
    parts, keys = ("day",), ("order_id",)
    before = profiles(old, old.schema, parts, keys)
    after = profiles(new, new.schema, parts, keys)
    assert (after["day=2"].rows, after["day=2"].nulls, after["day=2"].sums) == (
        2,
        {"order_id": 0, "amount": 1},
        {"amount": 4.0},
    )
    assert before["day=1"].key_digest == after["day=1"].key_digest
    assert before["day=2"].key_digest != after["day=2"].key_digest  # same rows, one key swapped

    diff = partial(key_changes, partition_columns=parts, key_columns=keys)
    changes = diff(new=new, old=old, before=before, after=after)
    assert {p: n for p, n in changes.added.items() if n} == {"day=2": 1, "day=4": 1}
    assert {p: n for p, n in changes.removed.items() if n} == {"day=2": 1, "day=3": 1}
    assert changes.examples_added == {"day=2": ["x"], "day=4": ["f"]}
    assert changes.examples_removed == {"day=2": ["d"], "day=3": ["e"]}

    unchanged = {"day=1": after["day=1"]}
    exploding = new.withColumn("order_id", F.raise_error(F.lit("the key diff read an unchanged partition")))
    nothing = diff(new=exploding, old=exploding, before=unchanged, after=unchanged)
    assert (nothing.added, nothing.removed) == ({}, {})
