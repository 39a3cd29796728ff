"""The generic backfill job on the sample pipeline: repair, isolation, idempotence, pruning,
failures."""

from __future__ import annotations

import json
import re
from datetime import date, timedelta

import pytest

from backfill_orchestrator.config import parse_config
from backfill_orchestrator.contracts.plan import Plan
from spark_jobs.engine import backfill_job
from spark_jobs.engine.runner import input_frames, run_plan
from spark_jobs.engine.scope import Scope
from spark_jobs.sample.data import break_partitions
from spark_jobs.sample.tables import ORDERS, PROCESSED_TABLES, RAW_ORDERS
from spark_jobs.sample.transforms import FOOD_DELIVERY
from tests.support.spark import (
    HOURS_PER_DAY,
    assert_tables_equal,
    file_snapshot,
    hand_plan,
    hand_step,
    partition_of,
    plan_with_planner,
)

pytestmark = pytest.mark.slow

DROPPED_DAY, CORRUPTED_DAY = date(2021, 5, 3), date(2021, 5, 6)
CONFIG = {
    "version": 1,
    "name": "orders-repair",
    "owner": "@data-platform",
    "mode": "batch",
    "jobs": [{"namespace": "food_delivery", "name": "etl_orders"}],
    "dates": [DROPPED_DAY.isoformat(), CORRUPTED_DAY.isoformat()],
    "feeds": ["app", "web"],
}


def _named(plan: Plan, relative_file: str) -> bool:
    """Whether a file lies in a partition that some step of the plan names."""
    for step in plan.steps:
        if step.kind != "spark":
            continue
        table = FOOD_DELIVERY[step.transform].output
        partition = partition_of(relative_file, table.location)
        if partition is not None and Scope.of_step(step).restricted_to(table.partition_columns).contains(
            partition
        ):
            return True
    return False


@pytest.fixture(scope="module")
def repaired(spark, pristine, tmp_path_factory):
    """A warehouse broken two ways, then backfilled once from the planner's plan."""
    import shutil

    root = tmp_path_factory.mktemp("repaired") / "warehouse"
    shutil.copytree(pristine, root)
    break_partitions(
        spark=spark,
        warehouse=str(root),
        table=ORDERS,
        scope=Scope(days=(DROPPED_DAY,), feeds=("web",)),
        mode="drop",
    )
    break_partitions(
        spark=spark,
        warehouse=str(root),
        table=ORDERS,
        scope=Scope(days=(CORRUPTED_DAY,), hours=(1, 2), feeds=("app",)),
        mode="corrupt",
    )
    plan = plan_with_planner(parse_config(CONFIG))
    before = file_snapshot(root)
    report = run_plan(spark=spark, plan=plan, warehouse=str(root), registry=FOOD_DELIVERY)
    return root, plan, before, report


def test_broken_pipeline_backfilled_from_a_plan_equals_a_clean_run(spark, pristine, repaired):
    root, plan, _, report = repaired
    assert report.status == "succeeded", [step.error for step in report.steps]
    assert [step.id for step in report.steps] == [
        "etl_orders",
        "etl_orders_7_days",
        "etl_delivery_7_days",
        "delivery_times_7_days",
    ]
    orders = report.step("etl_orders")
    assert orders.partitions_written == [
        f"day={day}/hour={hour}/feed={feed}"
        for day in (DROPPED_DAY, CORRUPTED_DAY)
        for hour in range(HOURS_PER_DAY)
        for feed in ("app", "web")
    ]
    assert orders.rows_in == orders.rows_out > 0
    # What the lineage events need: the tables it read and wrote, and the bytes written.
    assert (orders.output_table, orders.input_tables) == ("orders", {"raw_orders": "raw_orders"})
    assert orders.bytes_written == sum(
        file.stat().st_size
        for partition in orders.partitions_written
        for file in (root / "processed" / "orders" / partition).rglob("*")
        if file.is_file() and not file.name.endswith(".crc")  # the local file system's checksums
    )
    assert orders.bytes_written > 0
    # Where each step's time went, every phase a direct write has.
    for step in report.steps:
        assert set(step.phase_seconds) == {"read", "transform", "write", "commit"}, step.phase_seconds
        assert 0 < sum(step.phase_seconds.values()) <= step.seconds
    assert report.external_steps == ["email_discounts", "orders_popular_day_of_week"]
    assert_tables_equal(spark, root, pristine)


def test_partitions_not_named_keep_their_files(repaired):
    root, plan, before, _ = repaired
    after = file_snapshot(root)
    untouched = {path: facts for path, facts in before.items() if not _named(plan, path)}
    rewritten = [path for path in before if _named(plan, path)]
    assert untouched and rewritten
    assert {path: after.get(path) for path in untouched} == untouched
    # The named partitions were rewritten: their old files are gone.
    assert not set(rewritten) & set(after)


def test_second_run_of_the_same_plan_changes_nothing(spark, pristine, repaired):
    root, plan, before, _ = repaired
    after_first = file_snapshot(root)
    report = run_plan(spark=spark, plan=plan, warehouse=str(root), registry=FOOD_DELIVERY)
    after_second = file_snapshot(root)
    assert report.status == "succeeded"
    assert_tables_equal(spark, root, pristine)
    untouched = {path: facts for path, facts in before.items() if not _named(plan, path)}
    assert {path: after_second.get(path) for path in untouched} == untouched

    # Same partitions, same number of files, same bytes per partition (file names are new).
    def per_partition(snapshot):
        grouped: dict[str, list[int]] = {}
        for path, (size, _, _) in snapshot.items():
            grouped.setdefault(path.rsplit("/", 1)[0], []).append(size)
        return {partition: sorted(sizes) for partition, sizes in grouped.items()}

    assert per_partition(after_second) == per_partition(after_first)


def test_reads_prune_to_the_partitions_a_step_needs(spark, pristine):
    day = date(2021, 5, 8)
    scope = Scope(days=(day,), hours=(3,), feeds=("web",))
    raw = input_frames(
        spark=spark, warehouse=str(pristine), transform=FOOD_DELIVERY["etl_orders"], scope=scope
    )
    plan_text = raw["raw_orders"]._jdf.queryExecution().executedPlan().toString()
    filters = re.search(r"PartitionFilters: \[([^\]]*)\]", plan_text).group(1)
    assert re.search(r"day#\d+ = 2021-05-08", filters) and re.search(r"hour#\d+ = 3", filters)
    assert re.search(r"feed#\d+ = web", filters)

    weekly = input_frames(
        spark=spark, warehouse=str(pristine), transform=FOOD_DELIVERY["etl_orders_7_days"], scope=scope
    )
    plan_text = weekly["orders"]._jdf.queryExecution().executedPlan().toString()
    filters = re.search(r"PartitionFilters: \[([^\]]*)\]", plan_text).group(1)
    window = sorted(re.findall(r"2021-05-\d\d", filters))
    assert window == [(day - timedelta(days=n)).isoformat() for n in range(6, -1, -1)]
    assert "hour" not in filters  # a daily output needs every hour of its input days
    assert re.search(r"feed#\d+ = web|feed#\d+ IN \(web\)", filters)


def test_files_outside_the_scope_are_never_opened(spark, warehouse):
    """Garbage in a partition the step does not name cannot fail it: pruning, not filtering."""
    for outside in (
        "day=2021-05-09/hour=4/feed=web",
        "day=2021-05-08/hour=5/feed=web",
        "day=2021-05-08/hour=4/feed=app",
    ):
        (warehouse / "raw/orders" / outside / "part-garbage.json").write_text("{this is not json\n")
    plan = hand_plan([hand_step("etl_orders", [date(2021, 5, 8)], hours=[4], feeds=["web"])])
    report = run_plan(spark=spark, plan=plan, warehouse=str(warehouse), registry=FOOD_DELIVERY)
    assert report.status == "succeeded", report.steps[0].error
    assert report.steps[0].partitions_written == ["day=2021-05-08/hour=4/feed=web"]


def test_a_failing_step_stops_its_dependants_only(spark, warehouse, tmp_path, capsys):
    """Built by hand: the planner never plans independent siblings for one root."""
    broken_day, other_day = date(2021, 5, 5), date(2021, 5, 9)
    (warehouse / "raw/orders/day=2021-05-05/hour=0/feed=web/part-garbage.json").write_text(
        "{this is not json\n"
    )
    plan = hand_plan(
        [hand_step("etl_orders", [broken_day]), hand_step("etl_delivery_7_days", [other_day])],
        [
            hand_step("etl_orders_7_days", [broken_day], upstream=["etl_orders"]),
            hand_step("delivery_times_7_days", [other_day], upstream=["etl_delivery_7_days"]),
        ],
        [hand_step("email_discounts", [broken_day], upstream=["etl_orders_7_days"], kind="airflow_dag")],
    )
    plan_file = tmp_path / "plans" / "plan.json"
    plan_file.parent.mkdir()
    plan_file.write_text(plan.to_json())
    orders_before = {
        p: f for p, f in file_snapshot(warehouse).items() if p.startswith("processed/orders/day=2021-05-05")
    }

    code = backfill_job.main(["--plan", str(plan_file), "--warehouse", str(warehouse)])

    assert code == 1
    report = json.loads((tmp_path / "plans" / "run_report.json").read_text())
    status = {step["id"]: step["status"] for step in report["steps"]}
    assert status == {
        "etl_orders": "failed",
        "etl_delivery_7_days": "succeeded",
        "etl_orders_7_days": "blocked",
        "delivery_times_7_days": "succeeded",
    }
    assert report["status"] == "failed"
    failed = next(step for step in report["steps"] if step["id"] == "etl_orders")
    assert "part-garbage.json" in failed["error"] or "Malformed" in failed["error"], failed["error"]
    blocked = next(step for step in report["steps"] if step["id"] == "etl_orders_7_days")
    assert blocked["blocked_by"] == ["etl_orders"]
    assert report["external_steps"] == ["email_discounts"]
    # The failed step left its output as it was.
    after = file_snapshot(warehouse)
    assert {p: after.get(p) for p in orders_before} == orders_before
    assert "etl_orders: failed" in capsys.readouterr().out


def test_report_counts_rows_and_partitions(spark, warehouse):
    day = date(2021, 5, 4)
    plan = hand_plan(
        [hand_step("etl_orders", [day], hours=[0, 1], feeds=["partner"])],
        [hand_step("etl_orders_7_days", [day], upstream=["etl_orders"], feeds=["partner"])],
    )
    report = run_plan(spark=spark, plan=plan, warehouse=str(warehouse), registry=FOOD_DELIVERY)
    orders, weekly = report.steps
    raw_rows = sum(
        len(
            (warehouse / f"raw/orders/day=2021-05-04/hour={h}/feed=partner")
            .glob("*.json")
            .__next__()
            .read_text()
            .splitlines()
        )
        for h in (0, 1)
    )
    assert orders.rows_in == orders.rows_out == raw_rows
    assert orders.partitions_written == [
        "day=2021-05-04/hour=0/feed=partner",
        "day=2021-05-04/hour=1/feed=partner",
    ]
    assert weekly.partitions_written == ["day=2021-05-04/feed=partner"]
    assert weekly.rows_in_by_input["menu_items"] == 120
    assert weekly.seconds > 0 and weekly.partitions_written_count == 1


def test_named_partitions_left_without_rows_are_removed(spark, warehouse):
    """Raw data deleted at the source: the processed partition must go too, not stay stale."""
    break_partitions(
        spark=spark,
        warehouse=str(warehouse),
        table=RAW_ORDERS,
        scope=Scope(days=(date(2021, 5, 2),), hours=(7,), feeds=("app",)),
        mode="drop",
    )
    plan = hand_plan([hand_step("etl_orders", [date(2021, 5, 2)], hours=[7], feeds=["app", "web"])])
    report = run_plan(spark=spark, plan=plan, warehouse=str(warehouse), registry=FOOD_DELIVERY)
    assert report.steps[0].partitions_deleted == ["day=2021-05-02/hour=7/feed=app"]
    assert report.steps[0].partitions_written == ["day=2021-05-02/hour=7/feed=web"]
    assert not (warehouse / "processed/orders/day=2021-05-02/hour=7/feed=app").exists()


def test_every_transform_fits_its_output_table(spark, tmp_path):
    from spark_jobs.engine.runner import conform

    for transform in FOOD_DELIVERY:
        frames = input_frames(spark=spark, warehouse=str(tmp_path), transform=transform, scope=Scope())
        result = conform(transform.apply(frames), transform.output)
        assert [(f.name, f.dataType) for f in result.schema] == [
            (f.name, f.dataType) for f in transform.output.schema
        ]
    assert {t.output.name for t in FOOD_DELIVERY} == {t.name for t in PROCESSED_TABLES}
