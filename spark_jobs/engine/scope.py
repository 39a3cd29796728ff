"""Which partitions a step touches: its days, hours and feeds, as Spark partition filters.

Partition columns are named `day` (DateType), `hour` (int) and `feed` (string) in every table,
so one scope can address a step's output and, shifted by a window, its inputs."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

if TYPE_CHECKING:
    from pyspark.sql import Column

    from backfill_orchestrator.contracts.plan import PlanStep

DAY, HOUR, FEED = "day", "hour", "feed"


@dataclass(frozen=True)
class Scope:
    """None means "all" on that axis, as in the plan."""

    days: tuple[date, ...] | None = None
    hours: tuple[int, ...] | None = None
    feeds: tuple[str, ...] | None = None

    @classmethod
    def of_step(cls, step: PlanStep) -> Scope:
        return cls(
            days=tuple(sorted(set(step.dates))),
            hours=None if step.hours is None else tuple(sorted(set(step.hours))),
            feeds=None if step.feeds is None else tuple(sorted(set(step.feeds))),
        )

    def restricted_to(self, partition_columns: Iterable[str]) -> Scope:
        """The scope as seen by a table: an axis the table is not partitioned by means "all"."""
        columns = set(partition_columns)
        return Scope(
            days=self.days if DAY in columns else None,
            hours=self.hours if HOUR in columns else None,
            feeds=self.feeds if FEED in columns else None,
        )

    def looking_back(self, days: int) -> Scope:
        """The input days a window of `days` + 1 days ending on each scope day needs."""
        if self.days is None or days == 0:
            return self
        needed = {day - timedelta(days=back) for day in self.days for back in range(days + 1)}
        return Scope(days=tuple(sorted(needed)), hours=self.hours, feeds=self.feeds)

    def predicate(self) -> Column | None:
        """A filter on partition columns only, so Spark prunes partitions instead of reading them."""
        conditions = []
        if self.days is not None:
            conditions.append(F.col(DAY).isin(list(self.days)))
        if self.hours is not None:
            conditions.append(F.col(HOUR).isin(list(self.hours)))
        if self.feeds is not None:
            conditions.append(F.col(FEED).isin(list(self.feeds)))
        if not conditions:
            return None
        combined = conditions[0]
        for condition in conditions[1:]:
            combined = combined & condition
        return combined

    def contains(self, partition: dict[str, object]) -> bool:
        return (
            (self.days is None or partition.get(DAY) in self.days)
            and (self.hours is None or partition.get(HOUR) in self.hours)
            and (self.feeds is None or partition.get(FEED) in self.feeds)
        )


ALL = Scope()
