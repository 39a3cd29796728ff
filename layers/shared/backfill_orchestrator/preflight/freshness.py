"""Upstream freshness: before reprocessing, did the jobs that feed the roots run well for the
selected dates? Reprocessing on top of a failed or missing input is what makes a second
backfill necessary.

The roots' producers are the writers of the datasets the roots read (Marquez lineage, one hop
upstream). For each selected date, every nominal window of a producer that overlaps the date
is judged by its latest run: COMPLETED is fresh; FAILED, ABORTED, RUNNING or NEW, or no run
at all, is not. Bounded: at most `upstream_max_jobs` producers and `upstream_max_runs` runs each,
paged newest first and stopped once the runs started before the earliest date."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time

from backfill_orchestrator._compat import UTC
from backfill_orchestrator.config.model import BackfillConfig, JobRef
from backfill_orchestrator.dates import compact_dates
from backfill_orchestrator.lineage.errors import UnknownJobError
from backfill_orchestrator.lineage.runs import MAX_PAGE_SIZE, JobRun, RunHistory
from backfill_orchestrator.preflight.model import Finding
from backfill_orchestrator.settings.preflight import PreflightLimits

NO_RUN = "no run"


@dataclass
class ProducerRuns:
    """What was read of one producer's runs."""

    runs: list[JobRun] = field(default_factory=list)
    reached_earliest: bool = False  # every run that could cover the dates was read


def read_runs(history: RunHistory, job: JobRef, *, earliest: date, max_runs: int) -> ProducerRuns:
    """The producer's runs, newest first, until they start before `earliest` (or run out)."""
    earliest_start = datetime.combine(earliest, time(0), tzinfo=UTC)
    read = ProducerRuns()
    while len(read.runs) < max_runs:
        limit = min(MAX_PAGE_SIZE, max_runs - len(read.runs))
        try:
            page = history.job_runs(job, limit=limit, offset=len(read.runs))
        except UnknownJobError:  # in the lineage but without runs: it has not run
            read.reached_earliest = True
            return read
        read.runs += page.runs
        if len(page.runs) < limit:
            read.reached_earliest = True
            return read
        last = page.runs[-1]  # Marquez orders by startedAt, never-started runs last
        if last.started_at is None or last.started_at < earliest_start:
            read.reached_earliest = True
            return read
    return read


def judge_dates(read: ProducerRuns, days: Sequence[date]) -> tuple[dict[str, list[date]], list[date]]:
    """Dates that are not fresh, by why (a run state or "no run"), and dates that could not be
    judged (older than the runs read)."""
    latest: dict[tuple[datetime | None, datetime | None], JobRun] = {}
    for run in read.runs:  # newest first: the first run of a window is its latest
        if run.has_window:
            latest.setdefault((run.nominal_start, run.nominal_end), run)
    stale: dict[str, list[date]] = {}
    unjudged: list[date] = []
    for day in days:
        covering = [run for run in latest.values() if run.covers(day)]
        if not covering:
            if read.reached_earliest:
                stale.setdefault(NO_RUN, []).append(day)
            else:
                unjudged.append(day)
            continue
        for state in sorted({run.state for run in covering if run.state != "COMPLETED"}):
            stale.setdefault(state, []).append(day)
    return stale, unjudged


def upstream_findings(
    config: BackfillConfig, history: RunHistory, *, days: Sequence[date], limits: PreflightLimits
) -> tuple[list[Finding], list[str]]:
    """Findings (`stale_upstream`: a warning, a refusal when fresh upstream is required) and
    what could not be judged. Marquez errors pass through to the caller."""
    if not days or not config.jobs:
        return [], []
    required = config.require_fresh_upstream or limits.require_fresh_upstream
    roots = list(config.jobs)
    root_keys = {root.key for root in roots}
    producers: dict[tuple[str, str], tuple[JobRef, int]] = {}
    for index, root in enumerate(roots):
        for producer in history.producers(root):
            if producer.key not in root_keys:  # a root rerun by the backfill itself is no input
                producers.setdefault(producer.key, (producer, index))
    findings: list[Finding] = []
    unchecked: list[str] = []
    checked = list(producers.values())
    if len(checked) > limits.upstream_max_jobs:
        findings.append(
            Finding(
                "upstream_check_capped",
                "jobs",
                f"the roots have {len(checked)} upstream producers; only the first {limits.upstream_max_jobs} were checked "
                "(UPSTREAM_CHECK_MAX_JOBS)",
            )
        )
        checked = checked[: limits.upstream_max_jobs]
    earliest = min(days)
    for producer, index in checked:
        read = read_runs(history, producer, earliest=earliest, max_runs=limits.upstream_max_runs)
        if read.runs and not any(run.has_window for run in read.runs):
            unchecked.append(f"upstream freshness of {producer} (its runs carry no nominal time)")
            continue
        stale, unjudged = judge_dates(read, days)
        if unjudged:
            unchecked.append(
                f"upstream freshness of {producer} for {compact_dates(unjudged)} "
                f"(older than its last {len(read.runs)} runs)"
            )
        if stale:
            why = "; ".join(
                f"{'no run' if reason == NO_RUN else f'latest run {reason}'} for {compact_dates(stale[reason])}"
                for reason in sorted(stale)
            )
            findings.append(
                Finding(
                    "stale_upstream",
                    f"jobs[{index}]",
                    f"upstream {producer} (it writes what {roots[index]} reads): {why}"
                    + ("; refused: fresh upstream is required" if required else ""),
                    "refusal" if required else "warning",
                )
            )
    return findings, unchecked
