"""Cancelling a backfill while its Spark job writes: SIGTERM stops the job within seconds and
every partition is as it was or fully rewritten, never half-written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import date

import pytest

from tests.support.configs import REPO_ROOT
from tests.support.spark import assert_tables_equal, file_snapshot, hand_plan, hand_step

pytestmark = pytest.mark.slow
DAYS = [date(2021, 5, day) for day in range(1, 8)]


def test_sigterm_during_a_write_leaves_every_partition_intact(spark, warehouse, pristine, tmp_path):
    plan = hand_plan(
        [hand_step("etl_orders", DAYS)],
        [hand_step("etl_orders_7_days", DAYS, upstream=["etl_orders"])],
    )
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(plan.to_json())
    before = file_snapshot(warehouse)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(REPO_ROOT / "layers" / "shared")]),
    }
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "spark_jobs.engine.backfill_job",
            "--plan",
            str(plan_path),
            "--warehouse",
            str(warehouse),
            "--registry",
            "tests.spark.slow_registry:SLOW",
        ],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    orders = warehouse / "processed" / "orders"
    deadline = time.monotonic() + 300
    # The step's write is under way once Spark set up its output: in the step's staging under
    # `_backfill` (safe publish), or in the table's own `.spark-staging-*` (a direct write).
    while not any(orders.rglob(".spark-staging*")) and not any(warehouse.rglob("_temporary")):
        assert process.poll() is None, process.stdout.read()
        assert time.monotonic() < deadline, "the job never started writing"
        time.sleep(0.2)
    cancelled_at = time.monotonic()
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=120)
    stopped_after = time.monotonic() - cancelled_at
    assert process.returncode == 1, output
    assert stopped_after < 60, f"the job took {stopped_after:.0f} s to stop"
    assert "SIGTERM: cancelling" in output
    # Every partition is as before or fully rewritten: no partition directory is missing or
    # left with staging output, and the tables hold exactly the rows of the (clean) warehouse
    # they started from — a rewrite of a clean partition gives the same rows.
    after = file_snapshot(warehouse)
    directories = lambda snapshot: {path.rsplit("/", 1)[0] for path in snapshot}  # noqa: E731
    assert directories(after) == directories(before)
    # No staged output is left. A task that was starting as the job was cancelled can make its
    # empty set-up (`.spark-staging-*/_temporary/0/_temporary`) again after Spark's abort removed
    # it: no file, no partition directory, skipped by readers (docs/spark.md, "Cancelling").
    leftovers = [path for pattern in (".spark-staging*", "_temporary") for path in warehouse.rglob(pattern)]
    inside = [path for leftover in leftovers for path in leftover.rglob("*")]
    assert not [path for path in inside if path.is_file() or path.name.startswith("day=")], inside
    assert all(
        path.relative_to(warehouse).parts[2].startswith(".spark-staging")
        or path.relative_to(warehouse).parts[0] == "_backfill"
        for path in leftovers
    ), leftovers
    assert_tables_equal(spark, warehouse, pristine)
    assert (tmp_path / "run_report.json").exists(), output[-3000:]
    report = json.loads((tmp_path / "run_report.json").read_text())
    statuses = {step["id"]: step["status"] for step in report["steps"]}
    assert statuses["etl_orders"] in ("failed", "succeeded")  # cancelled mid-write, or its commit completed
    assert statuses["etl_orders_7_days"] == "blocked"  # no step starts after SIGTERM
