"""Dates for people: compact a list of days into ranges (`2021-06-04..06-10, 06-15`).

Used by `backfill plan`'s readable output and by the Slack notifier, so a plan reads the
same everywhere."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, timedelta

_ONE_DAY = timedelta(days=1)


def day_ranges(days: Iterable[date]) -> list[tuple[date, date]]:
    """Runs of consecutive days as (first, last), sorted; duplicates collapse."""
    ranges: list[tuple[date, date]] = []
    for day in sorted(set(days)):
        if ranges and day - ranges[-1][1] == _ONE_DAY:
            ranges[-1] = (ranges[-1][0], day)
        else:
            ranges.append((day, day))
    return ranges


def compact_dates(days: Iterable[date]) -> str:
    """`2021-06-04..06-10, 06-15`: consecutive days become `first..last`.

    The year is written once and again only when it changes (`2021-12-30..2022-01-02`),
    so a long list stays short but is never ambiguous. Empty input gives ''."""
    parts: list[str] = []
    year: int | None = None  # the year the reader has in mind so far
    for first, last in day_ranges(days):
        text = _day(first, year)
        year = first.year
        if last != first:
            text += ".." + _day(last, year)
            year = last.year
        parts.append(text)
    return ", ".join(parts)


def _day(day: date, known_year: int | None) -> str:
    return day.strftime("%m-%d") if day.year == known_year else day.isoformat()
