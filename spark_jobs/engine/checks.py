"""A staged step's checks, computed by Spark in the same application: the staged output's schema
against the live table's, the table's reconciliation rules on the staged partitions, and a
bounded data diff of every partition against its live version. Then the policy's verdict.

Each check aggregates per partition (a few numbers per partition reach the driver), so its
cost is one pass over the staged rows, already cached, and one over the live partitions of
the scope."""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import NumericType, StructField, StructType

from backfill_orchestrator.contracts.publish import (
    MAX_EXAMPLE_KEYS,
    MAX_PROBLEMS,
    MAX_TOP_PARTITIONS,
    ChecksVerdict,
    ColumnChange,
    DataDiff,
    PartitionChange,
    PartitionDiff,
    PublishPolicy,
    RuleOutcome,
    RulesCheck,
    SchemaCheck,
)
from backfill_orchestrator.reconciliation import TableRules
from spark_jobs.engine.measures import measured, number, table_rule_issues
from spark_jobs.engine.registry import Transform
from spark_jobs.engine.table_io import partition_path

ROWS = "__rows"
KEY_DIGEST_64, KEY_DIGEST_32 = "__keys64", "__keys32"


@dataclass(frozen=True)
class Profile:
    """One partition's figures: rows, nulls per column, sums of numeric columns, and (for a
    keyed table) a digest of its keys: two partitions with the same rows and digest hold the
    same keys, so the key diff need not look at them."""

    rows: int
    nulls: dict[str, int] = field(default_factory=dict)
    sums: dict[str, float] = field(default_factory=dict)
    key_digest: tuple[Decimal, int] | None = None
    values: tuple[object, ...] = ()  # the partition columns' values, as Spark read them


def _data_fields(schema: StructType, partition_columns: Iterable[str]) -> list[StructField]:
    skip = set(partition_columns)
    return [f for f in schema.fields if f.name not in skip]


def profiles(
    frame: DataFrame,
    schema: StructType,
    partition_columns: tuple[str, ...],
    key_columns: tuple[str, ...] = (),
) -> dict[str, Profile]:
    """partition -> Profile, in one aggregation. The key digest is the sum of two independent
    hashes of each row's keys (64 and 32 bits): order-free, so it needs no shuffle of the keys,
    and equal multisets of keys always give equal digests."""
    aggregates = [F.count(F.lit(1)).alias(ROWS)]
    fields = _data_fields(schema, partition_columns)
    for index, column in enumerate(fields):
        aggregates.append(F.count(F.col(column.name)).alias(f"n{index}"))  # the non-null values
        if isinstance(column.dataType, NumericType):
            aggregates.append(F.sum(F.col(column.name)).cast("double").alias(f"s{index}"))
    if key_columns:
        keys = [F.col(column) for column in key_columns]
        # decimal(20, 0) holds any 64-bit hash and sums exactly (a long sum would overflow)
        aggregates.append(F.sum(F.xxhash64(*keys).cast("decimal(20,0)")).alias(KEY_DIGEST_64))
        aggregates.append(F.sum(F.hash(*keys).cast("bigint")).alias(KEY_DIGEST_32))
    found = {}
    for row in frame.groupBy(*partition_columns).agg(*aggregates).collect():
        values = tuple(row[column] for column in partition_columns)
        found[partition_path(tuple(zip(partition_columns, values, strict=True)))] = Profile(
            rows=int(row[ROWS]),
            nulls={column.name: int(row[ROWS]) - int(row[f"n{i}"]) for i, column in enumerate(fields)},
            sums={
                column.name: float(row[f"s{i}"] or 0.0)
                for i, column in enumerate(fields)
                if isinstance(column.dataType, NumericType)
            },
            key_digest=(row[KEY_DIGEST_64], row[KEY_DIGEST_32]) if key_columns else None,
            values=values,
        )
    return found


# -- schema -------------------------------------------------------------------------------------
def schema_check(
    *,
    staged: StructType | None,
    live: StructType | None,
    staged_partitions: list[str],
    live_partitions: list[str],
) -> SchemaCheck:
    """Names, types, nullability and partition columns, each difference located by column."""
    problems = []
    if staged_partitions != live_partitions and live_partitions:
        problems.append(
            f"partition columns: staged {', '.join(staged_partitions)}; live {', '.join(live_partitions)}"
        )
    if staged is not None and live is not None:
        staged_fields = {f.name: f for f in staged.fields}
        live_fields = {f.name: f for f in live.fields}
        for name, expected in live_fields.items():
            actual = staged_fields.get(name)
            if actual is None:
                problems.append(f"column {name}: missing from the staged output")
            elif actual.dataType != expected.dataType:
                problems.append(
                    f"column {name}: staged {actual.dataType.simpleString()}, live {expected.dataType.simpleString()}"
                )
            elif actual.nullable != expected.nullable:
                problems.append(
                    f"column {name}: staged {'nullable' if actual.nullable else 'not null'}, "
                    f"live {'nullable' if expected.nullable else 'not null'}"
                )
        problems += [
            f"column {name}: not in the live table" for name in staged_fields if name not in live_fields
        ]
    return SchemaCheck(passed=not problems, problems=_bounded(problems))


# -- rules --------------------------------------------------------------------------------------
def rules_check(
    *, rules: TableRules | None, transform: Transform, computed: DataFrame, staged: DataFrame
) -> RulesCheck:
    """The table's rules: what the transform computed from the upstream tables (expected)
    against what the staged files hold (actual), per grain partition, within tolerance."""
    if rules is None:
        return RulesCheck(ran=False, passed=True)
    issues = table_rule_issues(rules, transform, f"rules for {rules.table}")
    if issues:
        return RulesCheck(
            ran=True,
            passed=False,
            grain=rules.grain_columns,
            outcomes=[
                RuleOutcome(
                    check="rules",
                    partitions_compared=0,
                    mismatched=len(issues),
                    examples=[str(i) for i in issues][:MAX_EXAMPLE_KEYS],
                )
            ],
        )
    grain = rules.grain_columns
    rows = measured(computed, rules, "e").join(measured(staged, rules, "a"), grain, "full_outer").collect()
    outcomes = []
    for index, check in enumerate(rules.checks):
        mismatched = []
        for row in rows:
            expected, actual = number(row[f"e{index}"]), number(row[f"a{index}"])
            if not check.tolerance.allows(expected=expected, actual=actual):
                where = partition_path(tuple((column, row[column]) for column in grain))
                mismatched.append(f"{where}: expected {expected}, staged {actual}")
        outcomes.append(
            RuleOutcome(
                check=check.label,
                partitions_compared=len(rows),
                mismatched=len(mismatched),
                examples=sorted(mismatched)[:MAX_EXAMPLE_KEYS],
            )
        )
    return RulesCheck(
        ran=True, passed=all(o.mismatched == 0 for o in outcomes), grain=grain, outcomes=outcomes
    )


# -- the data diff ------------------------------------------------------------------------------
@dataclass(frozen=True)
class KeyChanges:
    added: dict[str, int]
    removed: dict[str, int]
    examples_added: dict[str, list[str]]
    examples_removed: dict[str, list[str]]


def key_changes(
    *,
    new: DataFrame,
    old: DataFrame,
    before: Mapping[str, Profile],
    after: Mapping[str, Profile],
    partition_columns: tuple[str, ...],
    key_columns: tuple[str, ...],
) -> KeyChanges:
    """Keys added and removed per partition, with a few examples of each for the partitions
    that have any. Only the partitions whose keys may differ are shuffled: new or emptied ones,
    and those whose row count or key digest changed (see `profiles`); the rest have none."""
    differing = {
        partition
        for partition in set(before) | set(after)
        if partition not in before
        or partition not in after
        or (before[partition].rows, before[partition].key_digest)
        != (after[partition].rows, after[partition].key_digest)
    }
    columns = [*partition_columns, *key_columns]
    marked = [
        _only(
            frame, {p: profile for p, profile in side.items() if p in differing}, len(side), partition_columns
        )
        .select(*columns)
        .withColumn("__new", F.lit(is_new))
        .withColumn("__old", F.lit(1 - is_new))
        for frame, side, is_new in ((new, after, 1), (old, before, 0))
        if differing & set(side)
    ]
    if not marked:
        return KeyChanges({}, {}, {}, {})
    sides = (
        functools.reduce(DataFrame.unionByName, marked)
        .groupBy(*columns)
        .agg(F.max("__new").alias("__new"), F.max("__old").alias("__old"))
        .where(F.col("__new") != F.col("__old"))
    )
    added: dict[str, int] = {}
    removed: dict[str, int] = {}
    examples_added: dict[str, list[str]] = {}
    examples_removed: dict[str, list[str]] = {}
    # Kept for the examples' read: without it, that read would shuffle the keys a second time.
    sides = sides.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        counted = sides.groupBy(*partition_columns).agg(
            F.sum("__new").alias("added"), F.sum("__old").alias("removed")
        )
        for row in counted.collect():
            key = partition_path(tuple((column, row[column]) for column in partition_columns))
            added[key], removed[key] = int(row["added"] or 0), int(row["removed"] or 0)
        if added or removed:
            limit = MAX_TOP_PARTITIONS * MAX_EXAMPLE_KEYS * 2
            for row in sides.limit(limit).collect():
                key = partition_path(tuple((column, row[column]) for column in partition_columns))
                label = ",".join(str(row[column]) for column in key_columns)
                target = examples_added if row["__new"] else examples_removed
                bucket = target.setdefault(key, [])
                if len(bucket) < MAX_EXAMPLE_KEYS:
                    bucket.append(label)
    finally:
        sides.unpersist()
    return KeyChanges(added, removed, examples_added, examples_removed)


def _only(
    frame: DataFrame, wanted: Mapping[str, Profile], of: int, partition_columns: tuple[str, ...]
) -> DataFrame:
    """`frame`'s rows in the `wanted` partitions (of `of` it has): all of them without a filter,
    a few through a semi-join with their values (null-safe, as partition values may be null)."""
    if len(wanted) == of:
        return frame
    names = [f"__p{index}" for index in range(len(partition_columns))]
    values = frame.sparkSession.createDataFrame(
        [profile.values for profile in wanted.values()],
        StructType(
            [
                StructField(name, frame.schema[column].dataType)
                for name, column in zip(names, partition_columns, strict=True)
            ]
        ),
    )
    matches = [
        F.col(column).eqNullSafe(F.col(name)) for column, name in zip(partition_columns, names, strict=True)
    ]
    return frame.join(F.broadcast(values), functools.reduce(operator.and_, matches), "left_semi")


def _close(first: float, second: float) -> bool:
    return math.isclose(first, second, rel_tol=1e-9, abs_tol=1e-9)


def _column_changes(before: Profile | None, after: Profile | None) -> list[ColumnChange]:
    columns = sorted(set((before.nulls if before else {}) | (after.nulls if after else {})))
    changes = []
    for column in columns:
        sum_before = before.sums.get(column) if before else None
        sum_after = after.sums.get(column) if after else None
        nulls_before = before.nulls.get(column, 0) if before else 0
        nulls_after = after.nulls.get(column, 0) if after else 0
        sums_differ = not _close(sum_before or 0.0, sum_after or 0.0)
        if sums_differ or nulls_before != nulls_after:
            changes.append(
                ColumnChange(
                    column=column,
                    sum_before=sum_before,
                    sum_after=sum_after,
                    nulls_before=nulls_before,
                    nulls_after=nulls_after,
                )
            )
    return changes


def _total(profiles_: Iterable[Profile]) -> Profile:
    nulls: dict[str, int] = {}
    sums: dict[str, float] = {}
    rows = 0
    for profile in profiles_:
        rows += profile.rows
        for column, count in profile.nulls.items():
            nulls[column] = nulls.get(column, 0) + count
        for column, total in profile.sums.items():
            sums[column] = sums.get(column, 0.0) + total
    return Profile(rows=rows, nulls=nulls, sums=sums)


def data_diff(
    *,
    before: Mapping[str, Profile],
    after: Mapping[str, Profile],
    keys: KeyChanges | None,
    key_columns: tuple[str, ...],
) -> DataDiff:
    partitions = sorted(set(before) | set(after))
    diffs = []
    counts = dict.fromkeys(PartitionChange, 0)
    for partition in partitions:
        old, new = before.get(partition), after.get(partition)
        added = None if keys is None else keys.added.get(partition, 0)
        removed = None if keys is None else keys.removed.get(partition, 0)
        columns = _column_changes(old, new)
        if old is None:
            change = PartitionChange.NEW
        elif new is None:
            change = PartitionChange.EMPTIED
        elif old.rows == new.rows and not columns and not added and not removed:
            change = PartitionChange.SAME
        else:
            change = PartitionChange.CHANGED
        counts[change] += 1
        if change is not PartitionChange.SAME:
            diffs.append(
                PartitionDiff(
                    partition=partition,
                    change=change,
                    rows_before=old.rows if old else 0,
                    rows_after=new.rows if new else 0,
                    keys_added=added,
                    keys_removed=removed,
                    examples_added=(keys.examples_added.get(partition, []) if keys else []),
                    examples_removed=(keys.examples_removed.get(partition, []) if keys else []),
                    columns=columns,
                )
            )
    diffs.sort(
        key=lambda d: (
            -abs(d.rows_after - d.rows_before),
            -((d.keys_added or 0) + (d.keys_removed or 0)),
            d.partition,
        )
    )
    total_before, total_after = _total(before.values()), _total(after.values())
    return DataDiff(
        key_columns=list(key_columns),
        partitions=len(partitions),
        partitions_new=counts[PartitionChange.NEW],
        partitions_emptied=counts[PartitionChange.EMPTIED],
        partitions_changed=counts[PartitionChange.CHANGED],
        partitions_same=counts[PartitionChange.SAME],
        rows_before=total_before.rows,
        rows_after=total_after.rows,
        keys_added=None if keys is None else sum(keys.added.values()),
        keys_removed=None if keys is None else sum(keys.removed.values()),
        columns=_column_changes(total_before if before else None, total_after if after else None),
        top=diffs[:MAX_TOP_PARTITIONS],
    )


# -- the verdict --------------------------------------------------------------------------------
def verdict(
    *,
    policy: PublishPolicy,
    schema: SchemaCheck,
    rules: RulesCheck,
    diff: DataDiff,
    before: Mapping[str, Profile],
    after: Mapping[str, Profile],
) -> tuple[ChecksVerdict, list[str]]:
    """FAILED when the schema (or, if the policy requires them, the rules) fail; HOLD when the
    diff is outside the policy's thresholds or the policy publishes nothing by itself."""
    failed = [f"schema: {problem}" for problem in schema.problems]
    rule_problems = [
        f"rule {o.check}: {o.mismatched} of {o.partitions_compared} partitions differ"
        + (f" ({o.examples[0]})" if o.examples else "")
        for o in rules.outcomes
        if o.mismatched
    ]
    if policy.require_rules:
        failed += rule_problems
    if failed:
        return ChecksVerdict.FAILED, _bounded(failed)
    held = []
    if not policy.auto_publish:
        held.append("policy: auto_publish is false")
    for partition in sorted(set(before) | set(after)):
        old, new = before.get(partition), after.get(partition)
        if old is not None and new is None and not policy.allow_emptied_partitions:
            held.append(
                f"{partition}: would be emptied ({old.rows} rows now; policy allow_emptied_partitions false)"
            )
        if old is None and new is not None and not policy.allow_new_partitions:
            held.append(f"{partition}: would be created (policy allow_new_partitions false)")
        if old is not None and old.rows and policy.max_rows_removed_percent is not None:
            lost = max(0, old.rows - (new.rows if new else 0)) * 100.0 / old.rows
            if lost > policy.max_rows_removed_percent:
                held.append(
                    f"{partition}: {lost:.1f}% of rows removed ({old.rows} -> {new.rows if new else 0}; "
                    f"policy max {policy.max_rows_removed_percent:g}%)"
                )
    if (
        policy.max_rows_changed_percent is not None
        and diff.rows_changed_percent > policy.max_rows_changed_percent
    ):
        held.append(
            f"rows changed by {diff.rows_changed_percent:.1f}% ({diff.rows_before} -> {diff.rows_after}; "
            f"policy max {policy.max_rows_changed_percent:g}%)"
        )
    return (ChecksVerdict.HOLD if held else ChecksVerdict.PUBLISH), _bounded(held)


def _bounded(lines: list[str]) -> list[str]:
    if len(lines) <= MAX_PROBLEMS:
        return lines
    return [*lines[: MAX_PROBLEMS - 1], f"... and {len(lines) - MAX_PROBLEMS + 1} more"]
