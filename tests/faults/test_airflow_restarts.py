"""Airflow restarts and a killed Spark driver on a real Airflow 3 (`fault_airflow`) with the real
Spark job: a backfill survives its Airflow being SIGKILLed (scheduler, dag-processor and
api-server with every process they started, as a lost host would) while a Spark step runs and
while DAG reruns run, and survives its Spark job's driver SIGKILLed mid-write. Each ends
SUCCEEDED exactly once, no rerun is started twice (Airflow's own `clear_number` of each run
says how often it was cleared), no partition is ever half-written, and the warehouse equals a
clean run's."""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from backfill_local.airflow_local import LocalAirflow
from backfill_orchestrator.status import BackfillState
from tests.support.airflow import (
    AirflowStack,
    dag_run_rows,
    explain,
    gated_starts,
    spark_pid,
    status_store,
    step,
    store_backfill,
    task_states,
    wait_until,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]
DATA_START, DATA_DAYS, ORDERS_PER_HOUR = date(2021, 6, 1), 4, 2
DAYS = ["2021-06-02", "2021-06-03"]  # each test reruns DAGs on days of its own
RUN_TIMEOUT = 600


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """A SparkSession in this process for the warehouse's data and the comparisons."""
    from tests.support.spark import small_session

    with small_session("airflow-fault-tests") as session:
        yield session


@pytest.fixture(scope="module")
def stack(fault_airflow: AirflowStack, spark: Any, tmp_path_factory: pytest.TempPathFactory) -> AirflowStack:
    """The fault Airflow over a sample warehouse equal to its clean run (`reference`)."""
    from spark_jobs.engine.runner import run_everything
    from spark_jobs.sample.data import GeneratorSettings, generate
    from spark_jobs.sample.transforms import FOOD_DELIVERY
    from tests.support.spark import HOURS_PER_DAY

    reference = fault_airflow.root / "reference"
    if not reference.exists():
        generate(
            spark=spark,
            warehouse=str(reference),
            settings=GeneratorSettings(
                start=DATA_START, days=DATA_DAYS, orders_per_hour=ORDERS_PER_HOUR, hours_per_day=HOURS_PER_DAY
            ),
        )
        run_everything(spark=spark, warehouse=str(reference), registry=FOOD_DELIVERY)
    shutil.rmtree(fault_airflow.warehouse, ignore_errors=True)
    shutil.copytree(reference, fault_airflow.warehouse)
    return fault_airflow


def orders_files(stack: AirflowStack) -> dict[str, int]:
    """The orders table's data files (what readers see): relative path -> mtime (ns)."""
    base = stack.warehouse / "processed" / "orders"
    return {
        str(p.relative_to(base)): p.stat().st_mtime_ns
        for p in base.rglob("*")
        if p.is_file() and not any(part.startswith((".", "_")) for part in p.relative_to(base).parts)
    }


def assert_whole_partitions(before: dict[str, int], after: dict[str, int]) -> None:
    """Every partition as before or wholly replaced: the same partitions, each with its old
    files untouched or only new ones."""

    def partitions(files: dict[str, int]) -> set[str]:
        return {path.rsplit("/", 1)[0] for path in files}

    assert partitions(after) == partitions(before)
    for partition in partitions(before):
        old = {p: t for p, t in before.items() if p.startswith(partition + "/")}
        new = {p: t for p, t in after.items() if p.startswith(partition + "/")}
        assert new == old or not set(new) & set(old), (
            f"{partition} half-written: {sorted(old)} -> {sorted(new)}"
        )


def writing_orders(stack: AirflowStack) -> bool:
    """The job is staging etl_orders: safe publish writes into the backfill's staging
    (`<warehouse>/_backfill/staging/<id>/a<attempt>/etl_orders`), never into the live table."""
    return any(p.is_file() for p in (stack.warehouse / "_backfill" / "staging").glob("*/a*/etl_orders/**/*"))


def staged_files(stack: AirflowStack) -> list[Path]:
    """Files left in any backfill's staging. A killed try's staging is discarded by the next
    try's recovery, and a publish moves what it staged into the table: after a backfill ends
    nothing staged is left."""
    staging = stack.warehouse / "_backfill" / "staging"
    return [p for p in staging.rglob("*") if p.is_file()]


def job_processes(pid: int) -> list[Any]:
    """The Spark job's processes (its session: the Python driver, its JVM, Python workers)."""
    import psutil

    found = []
    for process in psutil.process_iter():
        try:
            if os.getsid(process.pid) == pid and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except (OSError, psutil.Error):
            continue
    return found


def spark_backfill(stack: AirflowStack, name: str, days: list[str]) -> Any:
    """etl_orders for `days` on the slowed real job (profile `small`), then its DAG step."""
    waves = [
        [step("etl_orders", "spark", dates=days)],
        [step("gated_report", "airflow_dag", dates=days, upstream=["etl_orders"])],
    ]
    return store_backfill(stack.aws, name=name, waves=waves, days=days, spark_profile="small")


def assert_succeeded_once(stack: AirflowStack, backfill: Any) -> None:
    airflow = stack.airflow
    state = airflow.wait_for_run("backfill", backfill.backfill_id, timeout=RUN_TIMEOUT)
    assert state == "success", explain(airflow, backfill.backfill_id)
    record = status_store(stack.aws).get(backfill.backfill_id)
    assert record.state is BackfillState.SUCCEEDED
    assert [h["state"] for h in record.history].count("SUCCEEDED") == 1
    posts = stack.posts(backfill.backfill_id)
    assert sum("SUCCEEDED" in text for text in posts) == 1, posts
    pages = stack.pages(backfill.backfill_id)
    assert pages == ["resolve"], pages  # nothing paged; `finish` resolves


def assert_reruns_started_once(
    airflow: LocalAirflow, dag_id: str, days: list[str], *, cleared: dict[str, int]
) -> None:
    """One run per day; each cleared as often as `cleared` says (0: a new run, triggered once)."""
    runs = dag_run_rows(airflow, dag_id)
    by_day: dict[str, list[dict[str, Any]]] = {}
    for row in runs.values():
        by_day.setdefault(str(row["logical_date"])[:10], []).append(row)
    for day in days:
        assert len(by_day.get(day, [])) == 1, (day, by_day.get(day))
        (row,) = by_day[day]
        assert row["state"] == "success", row
        assert row["clear_number"] == cleared.get(day, 0), (
            f"{dag_id} {day}: cleared {row['clear_number']} times"
        )


def test_a_restart_of_every_airflow_component_during_a_spark_step_ends_succeeded_once(
    stack: AirflowStack, spark: Any
) -> None:
    from spark_jobs.sample.tables import PROCESSED_TABLES
    from tests.support.spark import assert_tables_equal

    airflow = stack.airflow
    before = orders_files(stack)
    backfill = spark_backfill(stack, "restart-during-spark", DAYS)
    airflow.trigger("backfill", run_id=backfill.backfill_id, conf=backfill.conf)
    wait_until(lambda: writing_orders(stack), timeout=300, what="the Spark job writing etl_orders")
    pid = spark_pid(stack.root / "spark-pids.jsonl", backfill.backfill_id)
    assert pid is not None and job_processes(pid)

    killed = airflow.kill()  # scheduler, dag-processor, api-server, their workers and tasks
    assert killed
    # the job outlives Airflow (as on a cluster) but sees its task gone and stops by itself
    wait_until(
        lambda: not job_processes(pid),
        timeout=120,
        what=lambda: f"the Spark job stopped: {job_processes(pid)}",
    )
    assert_whole_partitions(before, orders_files(stack))
    airflow.relaunch()

    assert_succeeded_once(stack, backfill)
    assert_reruns_started_once(airflow, "gated_report", DAYS, cleared={})
    assert_tables_equal(
        spark, stack.warehouse, stack.root / "reference", [t for t in PROCESSED_TABLES if t.name == "orders"]
    )
    assert not staged_files(stack)  # the killed try's staging was discarded or published


def test_a_spark_driver_killed_mid_write_is_retried_and_never_leaves_a_partition_half_written(
    stack: AirflowStack, spark: Any
) -> None:
    from spark_jobs.sample.tables import PROCESSED_TABLES
    from tests.support.spark import assert_tables_equal

    airflow = stack.airflow
    before = orders_files(stack)
    days = ["2021-06-01", "2021-06-04"]
    backfill = spark_backfill(stack, "driver-killed", days)
    airflow.trigger("backfill", run_id=backfill.backfill_id, conf=backfill.conf)
    wait_until(lambda: writing_orders(stack), timeout=300, what="the Spark job writing etl_orders")
    pid = spark_pid(stack.root / "spark-pids.jsonl", backfill.backfill_id)
    assert pid is not None
    processes = job_processes(pid)
    os.killpg(pid, signal.SIGKILL)  # the driver and its JVM at once: no shutdown, no cleanup
    wait_until(lambda: not job_processes(pid), timeout=30, what="the killed driver gone")
    assert_whole_partitions(before, orders_files(stack))
    assert processes

    assert_succeeded_once(stack, backfill)
    spark_tries = [
        ti
        for ti in airflow.task_instances("backfill", backfill.backfill_id)
        if ti["task_id"] == "round_0.spark"
    ]
    assert spark_tries[0]["try_number"] == 2  # Airflow retried the step
    assert_reruns_started_once(airflow, "gated_report", days, cleared={})
    assert_tables_equal(
        spark, stack.warehouse, stack.root / "reference", [t for t in PROCESSED_TABLES if t.name == "orders"]
    )
    assert not staged_files(stack)


def test_a_restart_of_every_airflow_component_during_dag_reruns_starts_no_rerun_twice(
    stack: AirflowStack,
) -> None:
    airflow = stack.airflow
    days = ["2021-06-06", "2021-06-07"]
    hold = stack.outputs / "hold"
    # a scheduled run of gated_report exists for the first day: the backfill clears it, once
    airflow.trigger("gated_report", run_id="scheduled_0606", conf={}, logical_date=f"{days[0]}T00:00:00Z")
    assert airflow.wait_for_run("gated_report", "scheduled_0606", timeout=RUN_TIMEOUT) == "success"
    hold.write_text("held by the test")
    try:
        backfill = store_backfill(
            stack.aws,
            name="restart-during-reruns",
            waves=[[step("gated_report", "airflow_dag", dates=days)]],
            days=days,
        )
        airflow.trigger("backfill", run_id=backfill.backfill_id, conf=backfill.conf)
        wait_until(
            lambda: gated_starts(stack, days) >= 3,
            timeout=300,
            what=lambda: f"both reruns running: {gated_starts(stack, days)} starts",
        )

        airflow.kill()
        time.sleep(5)
        airflow.relaunch()
        # the scheduler resets the tasks the dead one left: the reruns' tasks start again
        wait_until(
            lambda: gated_starts(stack, days) >= 5,
            timeout=300,
            what=lambda: f"the reruns' tasks again: {gated_starts(stack, days)} starts",
        )
    finally:
        hold.unlink(missing_ok=True)

    assert_succeeded_once(stack, backfill)
    assert_reruns_started_once(airflow, "gated_report", days, cleared={days[0]: 1})
    states = task_states(airflow, backfill.backfill_id)
    assert states["round_0.prepare"] == "success", states
