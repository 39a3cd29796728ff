"""Reconciliation in Spark: for each table with rules, recompute what it should hold from its
upstream tables with its own transform, and compare that with what it holds, per grain
partition, measure by measure, within tolerance.

Both sides read only the window's partitions (and the transform's lookback days upstream), so
the cost is that of rerunning the window, whatever the tables' history. Recomputing with the
table's own transform finds damage at any layer: a processed partition lost or corrupted, one
left behind by late raw data, one orphaned by raw data deleted at the source."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from backfill_orchestrator.config.model import JobRef
from backfill_orchestrator.errors import ConfigIssue
from backfill_orchestrator.planner.catalog import JobCatalog
from backfill_orchestrator.reconciliation import (
    InvalidRulesError,
    MeasureDiff,
    Mismatch,
    ReconciliationRules,
    TableNode,
    TableRules,
)
from spark_jobs.engine.measures import measured, number, table_rule_issues
from spark_jobs.engine.registry import Registry, Transform
from spark_jobs.engine.runner import conform, input_frames
from spark_jobs.engine.scope import Scope
from spark_jobs.engine.table_io import read_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class Subject:
    """A table to reconcile: its rules, the transform that writes it, its place in the pipeline."""

    rules: TableRules
    transform: Transform
    node: TableNode


@dataclass(frozen=True)
class TableOutcome:
    table: str
    partitions_compared: int
    mismatches: list[Mismatch]


def subjects(
    rules: ReconciliationRules, *, registry: Registry, catalog: JobCatalog, source: str | None = None
) -> list[Subject]:
    """Rules checked against the transforms and the catalog; InvalidRulesError lists every problem."""
    writers = {transform.output.name: transform for transform in registry}
    jobs: dict[str, JobRef] = {}
    for entry in catalog.entries:
        if entry.kind == "spark":
            jobs.setdefault(entry.transform or entry.name, JobRef(namespace=entry.namespace, name=entry.name))
    issues: list[ConfigIssue] = []
    found: list[Subject] = []
    for index, table_rules in enumerate(rules.tables):
        where = f"tables[{index}]"
        transform = writers.get(table_rules.table)
        if transform is None:
            known = ", ".join(sorted(writers)) or "none"
            issues.append(
                ConfigIssue(
                    f"{where}.table", f"no registered transform writes {table_rules.table!r} (known: {known})"
                )
            )
            continue
        problems = table_rule_issues(table_rules, transform, where)
        job = jobs.get(transform.name)
        if job is None:
            problems.append(
                ConfigIssue(
                    f"{where}.table",
                    f"no spark job in the catalog runs transform {transform.name!r}, which writes {table_rules.table}",
                )
            )
        issues += problems
        if not problems and job is not None:
            upstream = {spec.table.name: spec.lookback_days for spec in transform.inputs.values()}
            node = TableNode(table=table_rules.table, job=job, step_id=transform.name, upstream=upstream)
            found.append(Subject(rules=table_rules, transform=transform, node=node))
    if issues:
        raise InvalidRulesError(issues, source=source)
    return found


def reconcile_table(*, spark: SparkSession, warehouse: str, subject: Subject, scope: Scope) -> TableOutcome:
    """Mismatched grain partitions of one table within `scope` (days; hours and feeds as given)."""
    transform, rules = subject.transform, subject.rules
    output_scope = scope.restricted_to(transform.output.partition_columns)
    recomputed = conform(
        transform.apply(input_frames(spark=spark, warehouse=warehouse, transform=transform, scope=scope)),
        transform.output,
    )
    predicate = output_scope.predicate()
    if predicate is not None:  # windowed transforms emit days past the window
        recomputed = recomputed.where(predicate)
    held = read_table(spark=spark, warehouse=warehouse, table=transform.output, scope=output_scope)
    grain = rules.grain_columns
    compared = measured(recomputed, rules, "e").join(measured(held, rules, "a"), grain, "full_outer")
    mismatches = []
    rows = compared.collect()
    for row in rows:
        diffs = []
        for index, check in enumerate(rules.checks):
            expected, actual = number(row[f"e{index}"]), number(row[f"a{index}"])
            if not check.tolerance.allows(expected=expected, actual=actual):
                diffs.append(MeasureDiff(check=check.label, expected=expected, actual=actual))
        if diffs:
            mismatches.append(
                Mismatch(
                    table=rules.table,
                    day=row["day"],
                    hour=row["hour"] if "hour" in grain else None,
                    feed=row["feed"] if "feed" in grain else None,
                    diffs=tuple(diffs),
                )
            )
    return TableOutcome(table=rules.table, partitions_compared=len(rows), mismatches=sorted(mismatches))
