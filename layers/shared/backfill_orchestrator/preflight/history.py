"""Expected durations from Marquez run history: per step, the median `durationMs` of its job's
recent COMPLETED runs, per date (a run whose nominal window spans several days, or one hour,
is scaled to one day; a run without a window counts as one date).

A warm trigger keeps these figures for HISTORY_CACHE_SECONDS (`DurationCache`,
preflight/duration_cache.py): a job's median over its last 20 runs barely moves in minutes,
and reading it again was most of a config's Marquez round trips."""

from __future__ import annotations

import contextvars
from concurrent.futures import ThreadPoolExecutor
from statistics import median
from typing import Protocol

from backfill_orchestrator.config import JobRef
from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.lineage.errors import UnknownJobError
from backfill_orchestrator.lineage.runs import JobRun, RunHistory
from backfill_orchestrator.settings.preflight import HISTORY_RUNS

HISTORY_PARALLEL = 6  # Marquez reads at once: bounded, so a wide plan cannot flood it


class DurationCache(Protocol):
    """Seconds per date by job key, kept across invocations (None: the job has no such runs)."""

    def lookup(self, key: tuple[str, str]) -> tuple[bool, float | None]:
        """(found, figure)."""
        ...

    def store(self, key: tuple[str, str], seconds: float | None) -> None: ...


def seconds_per_date(run: JobRun) -> float | None:
    if run.state != "COMPLETED" or run.duration_ms is None:
        return None
    return run.duration_ms / 1000 / (run.window_days or 1.0)


def measured_seconds_per_date(
    history: RunHistory,
    plan: Plan,
    *,
    max_jobs: int,
    parallel: int = HISTORY_PARALLEL,
    cache: DurationCache | None = None,
) -> dict[str, float]:
    """step id -> seconds per date, for the steps (the first `max_jobs` jobs) with history.
    The jobs' reads go side by side (at most `parallel` at once): one after another they were
    most of the trigger's Marquez wait. With a `cache`, a job's figure kept there is used and
    not read again (it is still a measured one); what is read is stored. Marquez errors pass
    through to the caller (and nothing of that read is stored)."""
    jobs: dict[tuple[str, str], JobRef] = {}
    for step in plan.steps:
        if step.job.key not in jobs and len(jobs) < max_jobs:
            jobs[step.job.key] = step.job
    asked: dict[tuple[str, str], float | None] = {}
    if cache is not None:
        for key in jobs:
            found, seconds = cache.lookup(key)
            if found:
                asked[key] = seconds
    missing = {key: job for key, job in jobs.items() if key not in asked}

    def per_date(job) -> float | None:  # noqa: ANN001 - a plan step's job
        try:
            runs = history.job_runs(job, limit=HISTORY_RUNS, offset=0).runs
        except UnknownJobError:
            runs = []
        samples = [value for value in map(seconds_per_date, runs) if value is not None]
        return median(samples) if samples else None

    if missing:
        with ThreadPoolExecutor(max_workers=max(1, min(parallel, len(missing)))) as pool:
            # Each read runs in a copy of this context: the invocation's deadline applies there too.
            futures = {
                key: pool.submit(contextvars.copy_context().run, per_date, job)
                for key, job in missing.items()
            }
            read = {key: future.result() for key, future in futures.items()}
        if cache is not None:
            for key, seconds in read.items():
                cache.store(key, seconds)
        asked.update(read)
    return {step.id: seconds for step in plan.steps if (seconds := asked.get(step.job.key)) is not None}
