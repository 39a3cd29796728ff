"""The preflight's estimate against what the Spark job then does on the sample warehouse: the
partitions it rewrites (the run report) and the files it reads (Spark's own input files)."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from pyspark.sql import functions as F

from backfill_orchestrator.config import parse_config
from backfill_orchestrator.contracts.publish import PublishPolicy
from backfill_orchestrator.planner.catalog import JobCatalog
from backfill_orchestrator.preflight import Reach, preflight_plan, warehouse_lister
from backfill_orchestrator.settings.preflight import PreflightLimits
from spark_jobs.engine.catalogs import Catalogs
from spark_jobs.engine.publishing import PublishSettings
from spark_jobs.engine.runner import input_frames, run_plan
from spark_jobs.engine.scope import Scope
from spark_jobs.sample.transforms import FOOD_DELIVERY
from tests.support.configs import REPO_ROOT
from tests.support.spark import partition_of, plan_with_planner

pytestmark = pytest.mark.slow

CATALOG = JobCatalog.load(str(REPO_ROOT / "examples" / "catalog.yaml"))


def read_bytes(spark, warehouse: Path, step) -> int:
    """The bytes of every data file Spark's scans of the step's inputs read."""
    scope = Scope(
        days=tuple(step.dates),
        hours=tuple(step.hours) if step.hours else None,
        feeds=tuple(step.feeds) if step.feeds else None,
    )
    frames = input_frames(
        spark=spark, warehouse=str(warehouse), transform=FOOD_DELIVERY[step.transform], scope=scope
    )
    # input_file_name() of the pruned scans: the files actually opened (inputFiles() ignores pruning).
    files = {
        row[0] for frame in frames.values() for row in frame.select(F.input_file_name()).distinct().collect()
    }
    return sum(Path(unquote(urlparse(uri).path)).stat().st_size for uri in files)


def live_bytes(warehouse: Path, step) -> int:
    """The data files of the step's output partitions in its scope."""
    table = FOOD_DELIVERY[step.transform].output
    scope = Scope.of_step(step).restricted_to(table.partition_columns)
    return sum(
        path.stat().st_size
        for path in (warehouse / table.location).rglob("*")
        if path.is_file()
        and not any(
            part.startswith((".", "_")) for part in path.relative_to(warehouse / table.location).parts
        )
        and scope.contains(partition_of(str(path.relative_to(warehouse)), table.location) or {})
    )


def test_partitions_and_bytes_equal_what_the_spark_job_reads_and_writes(spark, warehouse):
    config = parse_config(
        {
            "version": 1,
            "name": "estimate",
            "owner": "@jane",
            "mode": "batch",
            "jobs": [{"namespace": "food_delivery", "name": "etl_orders"}],
            "dates": ["2021-05-04"],
            "hours": [0, 1],
            "feeds": ["partner"],
            "downstream": {"max_depth": 1},  # etl_orders and its 7-day aggregate: both read and write here
        }
    )
    plan = plan_with_planner(config)
    spark_plan = plan.model_copy(
        update={"waves": [w for w in plan.waves if all(s.kind == "spark" for s in w.steps)]}
    )
    verdict, planned = preflight_plan(
        config, spark_plan, Reach(PreflightLimits(), catalog=CATALOG, lister=warehouse_lister(str(warehouse)))
    )
    estimates = {entry["step"]: entry for entry in planned.estimate["steps"]}
    expected_bytes = {step.id: read_bytes(spark, warehouse, step) for step in spark_plan.steps}

    staged_before = {step.id: live_bytes(warehouse, step) for step in spark_plan.steps}

    publishing = PublishSettings.build(
        spark=spark,
        backfill_id=spark_plan.backfill_id,
        attempt=1,
        root=str(warehouse / "_backfill"),
        policy=PublishPolicy(),
        catalogs=Catalogs(spark, "none"),
    )
    report = run_plan(
        spark=spark, plan=spark_plan, warehouse=str(warehouse), registry=FOOD_DELIVERY, publishing=publishing
    )
    assert report.status == "succeeded", [step.error for step in report.steps]
    for step in report.steps:
        assert estimates[step.id]["partitions"]["value"] == step.partitions_written_count, step.id
        assert estimates[step.id]["bytes_to_read"]["value"] == expected_bytes[step.id] > 0, step.id
        # What the step replaces, and so what the publish keeps as backups.
        assert estimates[step.id]["bytes_to_stage"]["value"] == staged_before[step.id] > 0, step.id
        backups = warehouse / "_backfill" / "backups" / spark_plan.backfill_id / "a1" / step.id
        kept = sum(
            p.stat().st_size for p in backups.rglob("*") if p.is_file() and not p.name.startswith((".", "_"))
        )
        assert kept == staged_before[step.id], step.id
    assert [s.id for s in spark_plan.steps] == ["etl_orders", "etl_orders_7_days"]
    assert verdict.accepted and date(2021, 5, 4) in spark_plan.steps[0].dates
