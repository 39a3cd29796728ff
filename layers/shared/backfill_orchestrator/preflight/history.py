"""Expected durations from Marquez run history: per step, the median `durationMs` of its job's
recent COMPLETED runs, per date (a run whose nominal window spans several days, or one hour,
is scaled to one day; a run without a window counts as one date)."""

from __future__ import annotations

from statistics import median

from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.lineage.errors import UnknownJobError
from backfill_orchestrator.lineage.runs import JobRun, RunHistory
from backfill_orchestrator.settings.preflight import HISTORY_RUNS


def seconds_per_date(run: JobRun) -> float | None:
    if run.state != "COMPLETED" or run.duration_ms is None:
        return None
    return run.duration_ms / 1000 / (run.window_days or 1.0)


def measured_seconds_per_date(history: RunHistory, plan: Plan, *, max_jobs: int) -> dict[str, float]:
    """step id -> seconds per date, for the steps (the first `max_jobs` jobs) with history.
    Marquez errors pass through to the caller."""
    measured: dict[str, float] = {}
    asked: dict[tuple[str, str], float | None] = {}
    for step in plan.steps:
        key = step.job.key
        if key not in asked:
            if len(asked) >= max_jobs:
                continue
            try:
                runs = history.job_runs(step.job, limit=HISTORY_RUNS, offset=0).runs
            except UnknownJobError:
                runs = []
            samples = [value for value in map(seconds_per_date, runs) if value is not None]
            asked[key] = median(samples) if samples else None
        if asked[key] is not None:
            measured[step.id] = asked[key]
    return measured
