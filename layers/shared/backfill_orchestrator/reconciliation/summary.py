"""The Slack summary of one reconciliation run: what it checked, what it found, and what it
submitted. Built with the notification module's Block Kit helpers, so it is escaped, clipped
and never raises like every other message."""

from __future__ import annotations

from collections.abc import Sequence

from backfill_orchestrator.dates import compact_dates
from backfill_orchestrator.notify.messages import (
    MAX_SECTION,
    _context,
    _fields,
    _header,
    _message,
    _never_raises,
    _section,
    escape,
)
from backfill_orchestrator.notify.slack import SlackMessage
from backfill_orchestrator.reconciliation.report import ReconciliationReport

MAX_LISTED = 15


@_never_raises
def reconciliation_message(
    *, report: ReconciliationReport, report_uri: str, submitted: Sequence[str], run_url: str | None = None
) -> SlackMessage:
    """`submitted`: where each config was uploaded (an empty list when nothing was)."""
    window = compact_dates(report.days)
    if report.mismatches_found == 0:
        title = f"Reconciliation {window}: every table matches"
    else:
        title = f"Reconciliation {window}: {report.mismatches_found} mismatched partitions"
    roots = [m for m in report.mismatches_listed if m.role == "root"]
    blocks = [
        _header(title),
        _fields(
            [
                ("Tables checked", str(len(report.tables))),
                ("Mismatches", str(report.mismatches_found)),
                ("Already in flight", str(report.mismatches_in_flight)),
                ("Configs submitted", str(len(submitted))),
            ]
        ),
    ]
    found = [
        f"`{escape(t.table)}` ({escape(t.job)}): {t.mismatches} of {t.partitions_compared}"
        for t in report.tables
        if t.mismatches
    ]
    if found:
        blocks.append(_section("*Found*\n" + "\n".join(found)))
    if roots:
        by_table: dict[str, list] = {}
        for mismatch in roots:
            by_table.setdefault(mismatch.table, []).append(mismatch.day)
        lines = [
            f"`{escape(table)}` on {escape(compact_dates(days))}" for table, days in sorted(by_table.items())
        ]
        blocks.append(_section("*Broken at the root*\n" + "\n".join(lines[:MAX_LISTED])))
    if submitted:
        lines = [
            f"`{escape(config.name)}`: {escape(', '.join(config.jobs))}, {config.days} days → {escape(uri)}"
            for config, uri in zip(report.configs, submitted, strict=False)
        ][:MAX_LISTED]
        more = f"\n…and {len(submitted) - MAX_LISTED} more" if len(submitted) > MAX_LISTED else ""
        blocks.append(_section(("*Submitted*\n" + "\n".join(lines))[: MAX_SECTION - len(more)] + more))
    elif report.mismatches_found:
        blocks.append(_section("Nothing submitted: backfills in flight already repair every mismatch."))
    links = f"Report: {escape(report_uri)}" + (f" · <{run_url}|Airflow run>" if run_url else "")
    blocks.append(_context(links))
    return _message(escape(f"{title}; {len(submitted)} configs submitted"), blocks)
