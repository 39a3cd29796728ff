"""A backfill's lineage read back from Marquez (or the double) through its REST API: the
backfill run, then its child runs (Spark steps with their partitions, rows and bytes; DAG
reruns per date). The demo prints it; works against a real Marquez too."""

from __future__ import annotations

from datetime import date
from typing import Any
from urllib.parse import quote

import requests

from backfill_orchestrator.dates import compact_dates
from backfill_orchestrator.errors import ServiceError


class LineageMissingError(ServiceError, RuntimeError):
    """Marquez does not know the backfill's run, or none of its child runs."""


def _get(base: str, path: str) -> Any:
    answer = requests.get(f"{base.rstrip('/')}/api/v1/{path}", timeout=10)
    answer.raise_for_status()
    return answer.json()


def backfill_lineage(marquez_url: str, *, namespace: str, backfill_id: str) -> list[str]:
    """Lines to print: `backfill run -> spark steps -> DAG reruns`."""
    jobs = {
        job["name"]: job for job in _get(marquez_url, f"namespaces/{quote(namespace, safe='')}/jobs")["jobs"]
    }
    parent = jobs.get(backfill_id)
    if parent is None or parent.get("latestRun") is None:
        raise LineageMissingError(f"Marquez has no run of job {namespace}/{backfill_id}")
    run = parent["latestRun"]
    facet = run["facets"].get("backfill", {})
    lines = [
        f"backfill {namespace}/{backfill_id} run {run['id']}: {run['state']} "
        f"(attempt {facet.get('attempt')}, dates {','.join(facet.get('dates', []))}, trace {facet.get('traceId')})"
    ]
    children = sorted(
        (job for job in jobs.values() if job.get("parentJobName") == backfill_id), key=lambda j: j["name"]
    )
    if not children:
        raise LineageMissingError(f"Marquez has no child runs of {namespace}/{backfill_id}")
    for job in children:
        path = f"namespaces/{quote(namespace, safe='')}/jobs/{quote(job['name'], safe='')}/runs"
        runs = [
            r
            for r in _get(marquez_url, path)["runs"]
            if r["facets"].get("parent", {}).get("run", {}).get("runId") == run["id"]
        ]
        kind = (job["latestRun"] or {}).get("facets", {}).get("nominalTime") and "DAG rerun" or "Spark step"
        outputs = ", ".join(o["name"] for o in job["outputs"]) or "-"
        lines.append(f"  ↳ {kind} {job['simpleName']}: {len(runs)} run(s), writes {outputs}")
        by_state: dict[str, list[date]] = {}
        for child in sorted(runs, key=lambda r: (r.get("nominalStartTime") or "", r["id"])):
            if child.get("nominalStartTime"):  # a DAG rerun: one run per date, listed by state
                by_state.setdefault(child["state"], []).append(
                    date.fromisoformat(child["nominalStartTime"][:10])
                )
            else:
                lines.append(f"      run {child['id']} {child['state']}")
        lines += [f"      {state} for {compact_dates(days)}" for state, days in sorted(by_state.items())]
    return lines
