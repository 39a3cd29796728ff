"""A step's partition grid as SVG: one column per date, one row per hour under each feed. A
date's hours and feeds share the date's state, so each (date, feed) is one rectangle over its
24 hour rows (hour lines drawn over it), which keeps a 90-date, 3-feed step at 270 elements;
finer per-partition states (`StepGrid.cells`) are drawn as single cells on top, and a clear
column per date carries the date's tooltip. Every cell carries `data-state`; the page's
script recolours them as the backfill runs."""

from __future__ import annotations

from html import escape

from backfill_orchestrator.ui.progress import StepGrid

MAX_GRID_DATES = 400  # columns drawn per step (a longer step says how many are left out)
LABEL_W, TOP = 78, 16
ROW_H, FEED_GAP = 3, 6
MAX_WIDTH = 960
TICK_W = 36  # a date label's width: ticks at least this far apart


def cell_width(dates: int) -> int:
    return max(3, min(24, (MAX_WIDTH - LABEL_W) // max(dates, 1)))


def grid_svg(grid: StepGrid, *, index: int) -> str:
    dates = grid.dates[:MAX_GRID_DATES]
    width_per = cell_width(len(dates))
    feed_h = len(grid.hours) * ROW_H
    width = LABEL_W + len(dates) * width_per + TICK_W
    height = TOP + len(grid.feeds) * (feed_h + FEED_GAP)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="partition-grid" data-step="{escape(grid.step_id)}" '
        f'data-index="{index}" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(grid.step_id)}: {len(grid.dates)} dates × {len(grid.hours)} hours × '
        f'{len(grid.feeds)} feeds">'
    ]
    tick_every = max(1, -(-TICK_W // width_per), len(dates) // 12)
    for column, day in enumerate(dates):
        if column % tick_every == 0:
            parts.append(
                f'<text class="tick" x="{LABEL_W + column * width_per}" y="11">{day.isoformat()[5:]}</text>'
            )
    for feed_index, feed in enumerate(grid.feeds):
        top = TOP + feed_index * (feed_h + FEED_GAP)
        parts.append(f'<text class="feed" x="0" y="{top + min(feed_h, 12)}">{escape(feed[:12])}</text>')
        for column, state in enumerate(grid.states[: len(dates)]):
            parts.append(
                f'<rect class="cell" data-i="{column}" data-state="{state}" x="{LABEL_W + column * width_per}" '
                f'y="{top}" width="{width_per - 1}" height="{feed_h}"/>'
            )
        rules = "".join(
            f"M {LABEL_W} {top + hour * ROW_H} H {LABEL_W + len(dates) * width_per} "
            for hour in range(6, len(grid.hours), 6)
        )
        if rules:
            parts.append(f'<path class="hour-rule" d="{rules.strip()}"/>')
    for column, (day, state) in enumerate(zip(dates, grid.states, strict=False)):
        parts.append(
            f'<rect class="hover" data-i="{column}" data-state="{state}" x="{LABEL_W + column * width_per}" '
            f'y="{TOP}" width="{width_per}" height="{height - TOP}"><title>{day.isoformat()}: {state}'
            "</title></rect>"
        )
    for (column, hour, feed_index), state in grid.cells.items():
        if column >= len(dates) or hour not in grid.hours or feed_index >= len(grid.feeds):
            continue
        top = TOP + feed_index * (feed_h + FEED_GAP) + grid.hours.index(hour) * ROW_H
        parts.append(
            f'<rect class="cell partition" data-state="{state}" x="{LABEL_W + column * width_per}" y="{top}" '
            f'width="{width_per - 1}" height="{ROW_H}"><title>{dates[column].isoformat()} hour {hour} '
            f"{escape(grid.feeds[feed_index])}: {state}</title></rect>"
        )
    parts.append("</svg>")
    return "".join(parts)
