"""A table's reconciliation measures, as Spark aggregates: what reconciliation compares between
a table and its recomputation, and what safe publish compares between a staged step and the
transform's result (spark_jobs.engine.checks)."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from pyspark.sql import functions as F
from pyspark.sql.types import NumericType

from backfill_orchestrator.errors import ConfigIssue
from backfill_orchestrator.reconciliation import Check, TableRules
from spark_jobs.engine.registry import Transform

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

# Row hashes are summed modulo this prime: order-independent, and no overflow below ~9e9 rows.
CHECKSUM_MODULUS = 1_000_000_007


def table_rule_issues(rules: TableRules, transform: Transform, where: str) -> list[ConfigIssue]:
    issues = []
    reads = sorted(spec.table.name for spec in transform.inputs.values())
    if sorted(rules.upstream) != reads:
        issues.append(
            ConfigIssue(
                f"{where}.upstream",
                f"transform {transform.name} reads {', '.join(reads)}, not {', '.join(sorted(rules.upstream))}",
            )
        )
    table = transform.output
    for position, column in enumerate(rules.grain):
        if column not in table.partition_columns:
            issues.append(
                ConfigIssue(f"{where}.grain[{position}]", f"{table.name} is not partitioned by {column}")
            )
    types = {field.name: field.dataType for field in table.schema}
    for check_index, check in enumerate(rules.checks):
        at = f"{where}.checks[{check_index}]"
        if check.column is not None:
            if check.column not in types:
                issues.append(ConfigIssue(f"{at}.column", f"no column {check.column!r} in {table.name}"))
            elif not isinstance(types[check.column], NumericType):
                issues.append(
                    ConfigIssue(
                        f"{at}.column",
                        f"{check.column} is {types[check.column].simpleString()}, not a number",
                    )
                )
        for position, column in enumerate(check.columns or ()):
            if column not in types:
                issues.append(
                    ConfigIssue(f"{at}.columns[{position}]", f"no column {column!r} in {table.name}")
                )
    return issues


def _aggregate(check: Check) -> Column:
    if check.measure == "row_count":
        return F.count(F.lit(1))
    if check.measure == "distinct_keys":
        return F.count_distinct(*[F.col(column) for column in check.columns or ()])
    if check.measure == "sum":
        return F.sum(F.col(check.column or ""))
    return F.sum(
        F.pmod(F.xxhash64(*[F.col(column) for column in check.columns or ()]), F.lit(CHECKSUM_MODULUS))
    )


def measured(frame: DataFrame, rules: TableRules, side: str) -> DataFrame:
    aggregates = [_aggregate(check).alias(f"{side}{index}") for index, check in enumerate(rules.checks)]
    return frame.groupBy(*rules.grain_columns).agg(*aggregates)


def number(value: object) -> int | float:
    if value is None:  # no rows on that side: nothing counted, nothing summed
        return 0
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value  # type: ignore[return-value]
