"""How big a plan is: partitions to rewrite, bytes to read and to stage (listed), DAG reruns,
duration and cost; and the input check that comes with the listing (nothing to reprocess, missing dates).
A step's duration is measured (Marquez run history, per date) or assumed (per partition)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, timedelta

from backfill_orchestrator.config.model import BackfillConfig
from backfill_orchestrator.contracts.plan import Plan, PlanStep
from backfill_orchestrator.planner.catalog import CatalogEntry
from backfill_orchestrator.planner.partitions import step_partitions
from backfill_orchestrator.planner.rounds import plan_rounds
from backfill_orchestrator.preflight.checks import missing_dates_message
from backfill_orchestrator.preflight.model import (
    DEFAULT_SECONDS_PER_PARTITION,
    Estimate,
    Figure,
    Finding,
    StepEstimate,
)
from backfill_orchestrator.preflight.warehouse import Lister, StoredFile
from backfill_orchestrator.settings.preflight import PreflightLimits


def partitions_figure(step: PlanStep, entry: CatalogEntry | None) -> Figure:
    """The step's partitions (planner/partitions.py, the one count), measured or assumed."""
    count, measured = step_partitions(step, entry)
    return Figure(count, "measured" if measured else "assumed", "partitions")


def _wanted(step: PlanStep, lookback_days: int) -> set[str]:
    days: set[date] = set()
    for day in step.dates:
        days.update(day - timedelta(days=back) for back in range(lookback_days + 1))
    return {day.isoformat() for day in days}


def _selected(file: StoredFile, days: set[str], step: PlanStep, *, hourly: bool) -> bool:
    # As the Spark job reads (spark_jobs/engine/runner.py input_frames): an axis the output is
    # not partitioned by is read whole, so a daily step reads every hour of its days.
    partition = file.partition
    if partition.day is not None and partition.day not in days:
        return False
    if hourly and step.hours is not None and partition.hour is not None and partition.hour not in step.hours:
        return False
    return not (step.feeds is not None and partition.feed is not None and partition.feed not in step.feeds)


def read_inputs(
    step: PlanStep, entry: CatalogEntry, lister: Lister, *, root: bool
) -> tuple[Figure, list[Finding]]:
    """Bytes the step reads for its dates (lookback included) and what is missing."""
    total, findings = 0, []
    for index, table in enumerate(entry.inputs or []):
        wanted, hourly = _wanted(step, table.lookback_days), entry.grain == "hour"
        selected = [f for f in lister(table.location) if _selected(f, wanted, step, hourly=hourly)]
        total += sum(f.size for f in selected)
        found_days = {f.partition.day for f in selected}
        if selected and found_days == {None}:
            continue  # reference data, not partitioned by day: read whole
        missing = [day for day in step.dates if day.isoformat() not in found_days]
        where = f"steps.{step.id}.inputs[{index}]"
        if missing and len(missing) == len(step.dates):
            findings.append(
                Finding(
                    "nothing_to_reprocess",
                    where,
                    f"{table.location}: no input partitions for any selected date and feed: nothing to reprocess",
                    "refusal" if root else "warning",
                )
            )
        elif missing:
            findings.append(
                Finding("missing_inputs", where, f"{table.location}: {missing_dates_message(step, missing)}")
            )
    return Figure(total, "measured", "bytes"), findings


def staged_bytes(step: PlanStep, entry: CatalogEntry, lister: Lister) -> Figure:
    """Bytes of the live partitions of the step's output in its scope: about what the step
    stages, and what the publish then keeps as backups (docs/spark.md, "Safe publish")."""
    assert entry.output is not None
    days, hourly = _wanted(step, 0), entry.grain == "hour"
    selected = [f for f in lister(entry.output.location) if _selected(f, days, step, hourly=hourly)]
    return Figure(sum(f.size for f in selected), "measured", "bytes")


def estimate_plan(
    config: BackfillConfig,
    plan: Plan,
    entries: Mapping[str, CatalogEntry | None],
    limits: PreflightLimits,
    *,
    lister: Lister | None,
    seconds_per_date: Mapping[str, float] | None = None,
) -> tuple[Estimate, list[Finding]]:
    """The estimate, and the input findings of the listing (when a lister is given).
    `seconds_per_date`: step id -> measured seconds per date (preflight/history.py); other
    steps' durations are assumed."""
    history = seconds_per_date or {}
    root_ids = {step.id for step in plan.steps if step.reason == "root"}
    steps, findings = [], []
    spark_seconds = 0.0
    for step in plan.steps:
        entry = entries.get(step.id)
        partitions = partitions_figure(step, entry)
        read = staged = None
        if lister is not None and entry is not None and entry.inputs:
            read, found = read_inputs(step, entry, lister, root=step.id in root_ids)
            findings += found
        if lister is not None and entry is not None and entry.output is not None:
            staged = staged_bytes(step, entry, lister)
        if step.id in history:
            seconds = Figure(history[step.id] * len(step.dates), "measured", "seconds")
        else:
            seconds = Figure(DEFAULT_SECONDS_PER_PARTITION * partitions.value, "assumed", "seconds")
        if step.kind == "spark":
            spark_seconds += seconds.value
        steps.append(StepEstimate(step.id, partitions, read, seconds, staged))
    rounds = plan_rounds(plan)
    vcpus, memory_gb = limits.profile_sizes.get(config.effective_spark.profile, (0, 0))
    hours = spark_seconds / 3600
    cost = hours * (
        vcpus * limits.prices.get("vcpu_hour", 0.0) + memory_gb * limits.prices.get("gb_hour", 0.0)
    )
    estimate = Estimate(
        steps=steps,
        dag_reruns=Figure(sum(round_.dag_reruns for round_ in rounds), "measured", "reruns"),
        rounds=Figure(len(rounds), "measured", "rounds"),
        cost=Figure(cost, "assumed", "USD"),
    )
    return estimate, findings
