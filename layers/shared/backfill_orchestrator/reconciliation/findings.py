"""What reconciliation found, and what to do about it, with no Spark: mismatches per table
and grain partition; which of them are already being repaired by a backfill in flight; which
are roots (the most upstream broken table) and which are explained by a root upstream."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import cache

from backfill_orchestrator.config.model import JobRef
from backfill_orchestrator.contracts.plan import Plan


@dataclass(frozen=True)
class MeasureDiff:
    check: str  # the check's label: row_count, sum(quantity), ...
    expected: int | float
    actual: int | float


@dataclass(frozen=True, order=True)
class Mismatch:
    """One grain partition of one table whose measures differ from the recomputed ones.
    `hour` / `feed` are None when the table's grain has no such column."""

    table: str
    day: date
    hour: int | None
    feed: str | None
    diffs: tuple[MeasureDiff, ...] = field(default=(), compare=False)

    @property
    def partition(self) -> str:
        parts = [f"day={self.day.isoformat()}"]
        if self.hour is not None:
            parts.append(f"hour={self.hour}")
        if self.feed is not None:
            parts.append(f"feed={self.feed}")
        return "/".join(parts)

    def __str__(self) -> str:
        shown = ", ".join(f"{d.check} expected {d.expected} got {d.actual}" for d in self.diffs)
        return f"{self.table} {self.partition}: {shown}"


@dataclass(frozen=True)
class TableNode:
    """A reconciled table in the pipeline: the catalog job that writes it, that job's plan
    step id, and the reconciled tables it reads with each one's lookback in days."""

    table: str
    job: JobRef
    step_id: str
    upstream: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class _Rewrite:
    backfill_id: str
    days: frozenset[date]
    hours: frozenset[int] | None
    feeds: frozenset[str] | None

    def covers(self, mismatch: Mismatch) -> bool:
        return (
            mismatch.day in self.days
            # A daily table's step rewrites whole days: its hours do not narrow it.
            and (mismatch.hour is None or self.hours is None or mismatch.hour in self.hours)
            and (mismatch.feed is None or self.feeds is None or mismatch.feed in self.feeds)
        )


def _rewrites_by_step(plans: Sequence[Plan]) -> dict[str, list[_Rewrite]]:
    by_step: dict[str, list[_Rewrite]] = {}
    for plan in plans:
        for step in plan.steps:
            by_step.setdefault(step.id, []).append(
                _Rewrite(
                    backfill_id=plan.backfill_id,
                    days=frozenset(step.dates),
                    hours=None if step.hours is None else frozenset(step.hours),
                    feeds=None if step.feeds is None else frozenset(step.feeds),
                )
            )
    return by_step


def split_covered(
    mismatches: Iterable[Mismatch], *, nodes: Mapping[str, TableNode], plans: Sequence[Plan]
) -> tuple[list[Mismatch], dict[Mismatch, str]]:
    """(mismatches no backfill in flight repairs, {mismatch: the backfill in flight that rewrites
    that partition: its table's step, on its day, for its hour and feed})."""
    by_step = _rewrites_by_step(plans)
    uncovered: list[Mismatch] = []
    covered: dict[Mismatch, str] = {}
    for mismatch in sorted(mismatches):
        rewrite = next(
            (r for r in by_step.get(nodes[mismatch.table].step_id, ()) if r.covers(mismatch)), None
        )
        if rewrite is None:
            uncovered.append(mismatch)
        else:
            covered[mismatch] = rewrite.backfill_id
    return uncovered, covered


def downstream_reach(nodes: Mapping[str, TableNode]):
    """reach(upstream, downstream): the most days after an upstream day that the downstream
    table's partitions depend on it (the sum of lookbacks along the longest path), or None
    when the downstream table does not read the upstream one, even indirectly."""

    @cache
    def reach(upstream: str, downstream: str) -> int | None:
        best: int | None = None
        for parent, lookback in nodes[downstream].upstream.items():
            if parent == upstream:
                candidate: int | None = lookback
            elif parent in nodes:
                further = reach(upstream, parent)
                candidate = None if further is None else further + lookback
            else:
                candidate = None
            if candidate is not None and (best is None or candidate > best):
                best = candidate
        return best

    return reach


def _same(a: object, b: object) -> bool:
    return a is None or b is None or a == b


def explain(mismatches: Sequence[Mismatch], *, nodes: Mapping[str, TableNode]) -> dict[Mismatch, str | None]:
    """Each mismatch -> None when it is a root, else the root table that explains it.

    A mismatch is explained when a table it reads (directly or not) mismatches on a day whose
    rerun reaches it (within the lookbacks along the way), for the same feed and hour where
    both have one: backfilling that upstream table with downstream enabled reruns this one
    too. Explanations chain to the most upstream broken table."""
    reach = downstream_reach(nodes)
    by_table_day: dict[str, dict[date, list[Mismatch]]] = {}
    for mismatch in mismatches:
        by_table_day.setdefault(mismatch.table, {}).setdefault(mismatch.day, []).append(mismatch)

    def direct_cause(mismatch: Mismatch) -> Mismatch | None:
        for table, by_day in by_table_day.items():
            days = None if table == mismatch.table else reach(table, mismatch.table)
            if days is None:
                continue
            for back in range(days + 1):  # upstream days whose rerun reaches this one
                for candidate in by_day.get(mismatch.day - timedelta(days=back), ()):
                    if _same(candidate.feed, mismatch.feed) and _same(candidate.hour, mismatch.hour):
                        return candidate
        return None

    roots: dict[Mismatch, str | None] = {}
    for mismatch in mismatches:
        cause, seen = direct_cause(mismatch), {mismatch}
        root = None
        while cause is not None and cause not in seen:  # the graph is acyclic; `seen` guards bad input
            seen.add(cause)
            root = cause.table
            cause = direct_cause(cause)
        roots[mismatch] = root
    return roots
