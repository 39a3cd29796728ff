"""What a backfill claims: the (step, partition date) pairs it will rewrite.

A step id names one output (a Spark transform's table or a DAG), the same in every plan, so
two plans that share a step id and a date would race on the same partitions. Claims are per
day: hours and feeds are not told apart (two backfills of different hours of the same day
of the same step wait for each other), because DAG reruns are per logical date and a daily
output table rewrites whole days anyway — a conservative choice that never lets two writers
meet.

A claim set is stored as a small JSON document, `{"claims_version": 1, "steps": {step id:
[[first, last], ...]}}` with inclusive ISO date ranges, so a 10,000-step plan over a year
stays small.

For admission a claim set is cut into keys, one per (step, ISO week) it touches, each with
the days of that week as a 7-bit mask (`buckets`): two claim sets overlap exactly when they
share a key whose masks meet (registry.py indexes claims that way). A week rather than a
month: two backfills of nearby weeks of one step (a 7-day window each, say) then share at
most one key instead of one with every other backfill of the month, so they rarely wait for
each other; a 90-day plan has 14 keys a step."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

from backfill_orchestrator.dates import day_ranges
from backfill_orchestrator.errors import ServiceError

CLAIMS_VERSION = 1


class InvalidClaimsDocumentError(ServiceError, ValueError):
    """A stored claim set is not a claims document we wrote."""


@dataclass(frozen=True, order=True)
class ClaimKey:
    """One (step, ISO week) of the claims index: `week` is `YYYY-Www`."""

    step_id: str
    week: str

    def days(self, mask: int) -> frozenset[date]:
        """The days of this week a mask names (bit 0 for Monday)."""
        year, week = int(self.week[:4]), int(self.week[6:8])
        return frozenset(date.fromisocalendar(year, week, bit + 1) for bit in range(7) if mask >> bit & 1)


def week_key(day: date) -> str:
    year, week, _ = day.isocalendar()
    return f"{year:04d}-W{week:02d}"


@dataclass(frozen=True)
class ClaimSet:
    """step id -> the days this backfill rewrites for it."""

    steps: Mapping[str, frozenset[date]]

    @classmethod
    def from_plan(cls, plan: Any, *, skip: Mapping[str, Iterable[date]] | None = None) -> ClaimSet:
        """Every step's dates; `skip` leaves out days already done (a retry of failed work)."""
        skip = skip or {}
        steps: dict[str, frozenset[date]] = {}
        for step in plan.steps:
            days = frozenset(step.dates) - frozenset(skip.get(step.id, ()))
            if days:
                steps[step.id] = days
        return cls(steps)

    def __len__(self) -> int:
        return sum(len(days) for days in self.steps.values())

    def overlap(self, other: ClaimSet) -> dict[str, frozenset[date]]:
        """step id -> the days both sets claim (empty when they are disjoint)."""
        small, large = (self, other) if len(self.steps) <= len(other.steps) else (other, self)
        shared: dict[str, frozenset[date]] = {}
        for step_id, days in small.steps.items():
            theirs = large.steps.get(step_id)
            if theirs and (both := days & theirs):
                shared[step_id] = both
        return shared

    def buckets(self) -> dict[ClaimKey, int]:
        """(step, week) -> the days claimed in it as a mask, in key order."""
        masks: dict[ClaimKey, int] = {}
        for step_id, days in self.steps.items():
            for day in days:
                key = ClaimKey(step_id, week_key(day))
                masks[key] = masks.get(key, 0) | 1 << day.weekday()
        return dict(sorted(masks.items()))

    def digest(self) -> str:
        """Names the content: an admission again with the same claims keeps its place."""
        return hashlib.sha256(self.to_json().encode()).hexdigest()[:32]

    def to_json(self) -> str:
        steps = {
            step_id: [[first.isoformat(), last.isoformat()] for first, last in day_ranges(days)]
            for step_id, days in sorted(self.steps.items())
        }
        return json.dumps({"claims_version": CLAIMS_VERSION, "steps": steps}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes, *, source: str = "claims") -> ClaimSet:
        try:
            data = json.loads(text)
            if data.get("claims_version") != CLAIMS_VERSION:
                raise ValueError(f"claims_version {data.get('claims_version')!r}, expected {CLAIMS_VERSION}")
            steps: dict[str, frozenset[date]] = {}
            for step_id, ranges in data["steps"].items():
                days: set[date] = set()
                for first_text, last_text in ranges:
                    first, last = date.fromisoformat(first_text), date.fromisoformat(last_text)
                    days.update(date.fromordinal(n) for n in range(first.toordinal(), last.toordinal() + 1))
                steps[step_id] = frozenset(days)
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise InvalidClaimsDocumentError(f"{source}: not a claims document: {error}") from None
        return cls(steps)
