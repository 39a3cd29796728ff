"""Root mismatches to the fewest backfill configs (version 1) that cover them: one per root
job, the jobs whose mismatches fall on exactly the same days, hours and feeds sharing one.
Downstream is left to the planner. Each config is validated by `parse_config` before use."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from datetime import date
from typing import Any

import yaml

from backfill_orchestrator.config import BackfillConfig, parse_config
from backfill_orchestrator.dates import compact_dates, day_ranges
from backfill_orchestrator.reconciliation.findings import Mismatch, TableNode

ALL_HOURS = tuple(range(24))
MAX_DESCRIPTION = 500
NAME_PREFIX = "recon"


def _selection(
    mismatches: list[Mismatch],
) -> tuple[tuple[date, ...], tuple[int, ...] | None, tuple[str, ...] | None]:
    days = tuple(sorted({m.day for m in mismatches}))
    hours = tuple(sorted({m.hour for m in mismatches if m.hour is not None}))
    feeds = tuple(sorted({m.feed for m in mismatches if m.feed is not None}))
    # A daily table (no hour in its grain) reruns whole days; the same for feeds.
    if any(m.hour is None for m in mismatches) or hours == ALL_HOURS:
        hours = ()
    if any(m.feed is None for m in mismatches):
        feeds = ()
    return days, hours or None, feeds or None


def _date_entries(days: Iterable[date]) -> list[Any]:
    return [
        first.isoformat() if first == last else {"start": first.isoformat(), "end": last.isoformat()}
        for first, last in day_ranges(days)
    ]


def config_name(*, checked_on: date, jobs: list[dict[str, str]], document_core: dict[str, Any]) -> str:
    """`recon-YYMMDD-<6 hex>` (19 characters): the same findings on the same day give the same
    name, hence the same backfill id, so a config dropped twice is recognised."""
    digest = hashlib.sha256(json.dumps([jobs, document_core], sort_keys=True).encode()).hexdigest()[:6]
    return f"{NAME_PREFIX}-{checked_on:%y%m%d}-{digest}"


def backfill_configs(
    roots: Iterable[Mismatch],
    *,
    nodes: Mapping[str, TableNode],
    owner: str,
    checked_on: date,
    report_uri: str,
) -> list[tuple[BackfillConfig, dict[str, Any]]]:
    """(validated config, its document) per group of root jobs, in a stable order."""
    by_job: dict[tuple[str, str], list[Mismatch]] = {}
    for mismatch in sorted(roots):
        job = nodes[mismatch.table].job
        by_job.setdefault((job.namespace, job.name), []).append(mismatch)
    by_selection: dict[tuple[Any, ...], list[tuple[str, str]]] = {}
    found: dict[tuple[Any, ...], list[Mismatch]] = {}
    for job_key, mismatches in sorted(by_job.items()):
        selection = _selection(mismatches)
        by_selection.setdefault(selection, []).append(job_key)
        found.setdefault(selection, []).extend(mismatches)
    configs = []
    for selection, job_keys in by_selection.items():
        days, hours, feeds = selection
        jobs = [{"namespace": namespace, "name": name} for namespace, name in job_keys]
        core: dict[str, Any] = {"dates": _date_entries(days)}
        if hours is not None:
            core["hours"] = list(hours)
        if feeds is not None:
            core["feeds"] = list(feeds)
        tables = sorted({m.table for m in found[selection]})
        reason = (
            f"reason: reconciliation on {checked_on.isoformat()} found {len(found[selection])} mismatched "
            f"partitions of {', '.join(tables)} on {compact_dates(days)}; report: {report_uri}"
        )
        if len(reason) > MAX_DESCRIPTION:  # keep the link whole: shorten the findings instead
            reason = f"reason: reconciliation on {checked_on.isoformat()}; report: {report_uri}"[
                :MAX_DESCRIPTION
            ]
        document: dict[str, Any] = {
            "version": 1,
            "name": config_name(checked_on=checked_on, jobs=jobs, document_core=core),
            "description": reason,
            "owner": owner,
            "mode": "batch",
            "jobs": jobs,
            **core,
        }
        configs.append((parse_config(document, source=document["name"]), document))
    return configs


def render_yaml(document: dict[str, Any], *, header: str) -> str:
    body = yaml.safe_dump(document, sort_keys=False, default_flow_style=None, width=120)
    return "".join(f"# {line}\n" for line in header.splitlines()) + body
