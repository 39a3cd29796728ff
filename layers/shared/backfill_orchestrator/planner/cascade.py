"""The days each step reruns: roots take the config's days; a step takes every day its
upstream steps rerun, widened by its window (day d affects d..d+window-1), never past today.

Day sets are frozensets of ordinals, shared: a step with one upstream and a 1-day window
takes its parent's set itself, equal sets are kept once, and a set is widened by a window
once. Steps far down a graph mostly rerun the same days, so a plan of 50,000 steps holds
a few distinct sets rather than 50,000 copies."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date

Days = frozenset[int]


def cascade_dates(
    ordered: Sequence[Sequence[int]],
    data_upstream: Sequence[Iterable[int]],
    *,
    windows: Sequence[int],
    root_steps: set[int],
    root_days: Iterable[date],
    today: date,
) -> list[Days]:
    """Day ordinals per step number; `ordered` lists the steps upstream first (the waves)."""
    base = frozenset(day.toordinal() for day in root_days)
    last = today.toordinal()
    empty: Days = frozenset()
    distinct: dict[Days, Days] = {empty: empty}
    widened: dict[tuple[Days, int], Days] = {}
    dates: list[Days] = [empty] * len(windows)
    for wave in ordered:
        for step in wave:
            days = empty
            for parent in data_upstream[step]:
                parent_days = dates[parent]
                if days is empty:
                    days = parent_days
                elif parent_days is not days:
                    union = days | parent_days
                    days = distinct.setdefault(union, union)
            window = windows[step]
            if window > 1:
                key = (days, window)
                found = widened.get(key)
                if found is None:
                    spread = frozenset(
                        day + shift for day in days for shift in range(window) if day + shift <= last
                    )
                    found = widened[key] = distinct.setdefault(spread, spread)
                days = found
            if step in root_steps:
                with_base = days | base
                days = distinct.setdefault(with_base, with_base)
            dates[step] = days
    return dates
