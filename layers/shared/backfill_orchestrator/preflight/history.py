"""Expected durations from Marquez run history: per step, the median `durationMs` of its job's
recent COMPLETED runs, per date (a run whose nominal window spans several days, or one hour,
is scaled to one day; a run without a window counts as one date)."""

from __future__ import annotations

import contextvars
from concurrent.futures import ThreadPoolExecutor
from statistics import median

from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.lineage.errors import UnknownJobError
from backfill_orchestrator.lineage.runs import JobRun, RunHistory
from backfill_orchestrator.settings.preflight import HISTORY_RUNS

HISTORY_PARALLEL = 6  # Marquez reads at once: bounded, so a wide plan cannot flood it


def seconds_per_date(run: JobRun) -> float | None:
    if run.state != "COMPLETED" or run.duration_ms is None:
        return None
    return run.duration_ms / 1000 / (run.window_days or 1.0)


def measured_seconds_per_date(
    history: RunHistory, plan: Plan, *, max_jobs: int, parallel: int = HISTORY_PARALLEL
) -> dict[str, float]:
    """step id -> seconds per date, for the steps (the first `max_jobs` jobs) with history.
    The jobs' reads go side by side (at most `parallel` at once): one after another they were
    most of the trigger's Marquez wait. Marquez errors pass through to the caller."""
    jobs = {}
    for step in plan.steps:
        if step.job.key not in jobs and len(jobs) < max_jobs:
            jobs[step.job.key] = step.job
    if not jobs:
        return {}

    def per_date(job) -> float | None:  # noqa: ANN001 - a plan step's job
        try:
            runs = history.job_runs(job, limit=HISTORY_RUNS, offset=0).runs
        except UnknownJobError:
            runs = []
        samples = [value for value in map(seconds_per_date, runs) if value is not None]
        return median(samples) if samples else None

    with ThreadPoolExecutor(max_workers=max(1, min(parallel, len(jobs)))) as pool:
        # Each read runs in a copy of this context: the invocation's deadline applies there too.
        futures = {key: pool.submit(contextvars.copy_context().run, per_date, job) for key, job in jobs.items()}
        asked = {key: future.result() for key, future in futures.items()}
    return {step.id: asked[step.job.key] for step in plan.steps if asked.get(step.job.key) is not None}
