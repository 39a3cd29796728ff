"""Where a deployment's message archive keeps one feed-hour: a key prefix template.

    ArchiveLayout.parse("{feed}/{yyyy}/{mm}/{dd}/{hh}/").prefix(feed="orders", day=date(2021, 6, 4), hour=9)
    -> "orders/2021/06/04/09/"

Placeholders: {feed}, {yyyy}, {mm}, {dd}, {hh} (two digits each except the year) and
{date} (YYYY-MM-DD). A layout must name the feed, the day and the hour, so that no two
tasks read the same objects."""

from __future__ import annotations

import string
from dataclasses import dataclass
from datetime import date

from backfill_orchestrator.errors import ServiceError

DEFAULT_LAYOUT = "{feed}/{yyyy}/{mm}/{dd}/{hh}/"
PLACEHOLDERS = frozenset({"feed", "yyyy", "mm", "dd", "hh", "date"})


class ArchiveLayoutError(ServiceError, ValueError):
    """The layout template cannot address one feed-hour unambiguously."""


@dataclass(frozen=True)
class ArchiveLayout:
    template: str

    @classmethod
    def parse(cls, template: str) -> ArchiveLayout:
        try:
            fields = [name for _, name, spec, _ in string.Formatter().parse(template) if name is not None]
        except ValueError as error:
            raise ArchiveLayoutError(f"archive layout {template!r}: {error}") from None
        unknown = sorted({name for name in fields if name not in PLACEHOLDERS})
        if unknown:
            raise ArchiveLayoutError(
                f"archive layout {template!r}: unknown placeholder(s) {', '.join(unknown)}; "
                f"known: {', '.join(sorted(PLACEHOLDERS))}"
            )
        if any(
            spec or conversion for _, name, spec, conversion in string.Formatter().parse(template) if name
        ):
            raise ArchiveLayoutError(f"archive layout {template!r}: placeholders take no format spec")
        named = set(fields)
        has_day = "date" in named or {"yyyy", "mm", "dd"} <= named
        if "feed" not in named or "hh" not in named or not has_day:
            raise ArchiveLayoutError(
                f"archive layout {template!r}: must contain {{feed}}, {{hh}} and the day ({{date}} or {{yyyy}}, {{mm}}, {{dd}})"
            )
        if template.startswith("/"):
            raise ArchiveLayoutError(f"archive layout {template!r}: an S3 key prefix must not start with '/'")
        return cls(template)

    def prefix(self, *, feed: str, day: date, hour: int) -> str:
        return self.template.format(
            feed=feed,
            yyyy=f"{day.year:04d}",
            mm=f"{day.month:02d}",
            dd=f"{day.day:02d}",
            hh=f"{hour:02d}",
            date=day.isoformat(),
        )
