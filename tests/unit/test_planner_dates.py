"""compact_dates: the one way dates are shown to people (CLI, Slack)."""

from __future__ import annotations

from datetime import date

import pytest

from backfill_orchestrator.dates import compact_dates, day_ranges


def d(text: str) -> date:
    return date.fromisoformat(text)


@pytest.mark.parametrize(
    ("days", "expected"),
    [
        ([], ""),
        (["2021-06-04"], "2021-06-04"),
        (["2021-06-04", "2021-06-05"], "2021-06-04..06-05"),
        ([f"2021-06-{n:02d}" for n in (4, 5, 6, 7, 8, 9, 10, 15)], "2021-06-04..06-10, 06-15"),
        (["2021-06-15", "2021-06-04", "2021-06-04", "2021-06-05"], "2021-06-04..06-05, 06-15"),
        (["2021-12-30", "2021-12-31", "2022-01-01", "2022-01-05"], "2021-12-30..2022-01-01, 01-05"),
        (["2021-06-04", "2022-06-04"], "2021-06-04, 2022-06-04"),
        (["2024-02-28", "2024-02-29", "2024-03-01"], "2024-02-28..03-01"),
    ],
)
def test_compact_dates(days, expected):
    assert compact_dates([d(day) for day in days]) == expected


def test_day_ranges_merge_consecutive_days():
    assert day_ranges([d("2021-06-03"), d("2021-06-01"), d("2021-06-02"), d("2021-06-09")]) == [
        (d("2021-06-01"), d("2021-06-03")),
        (d("2021-06-09"), d("2021-06-09")),
    ]
