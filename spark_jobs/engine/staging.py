"""Leftovers of killed writes: Spark's hidden `.spark-staging-<job uuid>` directories.

A dynamic partition overwrite stages its output in `<table>/.spark-staging-<uuid>/` and moves
it into the partitions at job commit. A job killed before it could abort (Airflow SIGKILLs a
cancelled task's process group, the JVM included) leaves that directory behind: outside every
partition and skipped by readers, but litter. Before each write the job removes the ones that
cannot belong to a live writer:

- empty: a live write holds its `_temporary` (or its committed output) there from setup to
  the end of its commit, when Spark deletes the directory itself; only a dead one is empty;
- holding output only for days this write replaces: the claims let no other backfill write
  those days of the table now, and this write replaces them anyway; likewise with no output
  yet but day directories only of those days (a task killed before its first file landed);
- unchanged for `STALE_AFTER_SECONDS`: no backfill's Spark job runs that long.

Anything else (output for other days, changed recently) may be a concurrent backfill of other
days of the same table, and is kept."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import date
from typing import Protocol

from spark_jobs.engine.scope import DAY

STAGING_PREFIX = ".spark-staging-"
STALE_AFTER_SECONDS = (
    6 * 3600
)  # the DAG's default [backfill] spark_timeout_seconds: every job is stopped by then


class StagingFilesystem(Protocol):
    """What the cleanup needs of a filesystem (HadoopFs on a cluster); URIs are strings."""

    def glob_directories(self, pattern: str) -> list[str]: ...
    def children(self, uri: str) -> list[str]: ...
    def files(self, uri: str) -> list[tuple[str, int]]: ...  # every file under uri: (uri, modified ms)
    def directories(self, uri: str) -> list[str]: ...  # every directory under uri
    def modified_ms(self, uri: str) -> int: ...
    def delete(self, uri: str) -> None: ...


def staging_days(files: Collection[str]) -> set[date] | None:
    """The days the staged files are output for (`.../day=2021-06-04/...`), or None when a
    file names no day (it cannot be told whose it is)."""
    days = set()
    for uri in files:
        segments = uri.split("/")
        after = next((i for i, s in enumerate(segments) if s.startswith(STAGING_PREFIX)), -1) + 1
        found = [s[len(DAY) + 1 :] for s in segments[after:] if s.startswith(f"{DAY}=")]
        try:
            days.add(date.fromisoformat(found[-1]))
        except (IndexError, ValueError):
            return None
    return days


@dataclass(frozen=True)
class StagingSweep:
    """One write's judgement, at `now_ms`, of which staging directories are dead writes'.
    `days`: the days this write replaces, None for all of them."""

    filesystem: StagingFilesystem
    days: Collection[date] | None
    now_ms: int
    stale_after_seconds: float = STALE_AFTER_SECONDS

    def removal_reason(self, directory: str) -> str | None:
        """Why `directory` (a staging directory) is a dead write's, or None to keep it."""
        filesystem, days = self.filesystem, self.days
        if not filesystem.children(directory):
            return "empty"
        files = filesystem.files(directory)
        staged = staging_days([uri for uri, _ in files])
        if files and staged is not None and (days is None or staged <= set(days)):
            return f"output only for days this write replaces ({', '.join(sorted(d.isoformat() for d in staged))})"
        if not files:  # set up, no file yet: the day directories its tasks made say whose it is
            named = staging_days([uri for uri in filesystem.directories(directory) if f"/{DAY}=" in uri])
            if named and (days is None or named <= set(days)):
                return f"no output yet, set up only for days this write replaces ({', '.join(sorted(d.isoformat() for d in named))})"
        last_change_ms = max([filesystem.modified_ms(directory), *(modified for _, modified in files)])
        if last_change_ms > 0 and self.now_ms - last_change_ms > self.stale_after_seconds * 1000:
            return f"unchanged for {(self.now_ms - last_change_ms) / 3_600_000:.1f} h"
        return None

    def remove_dead(self, table_uri: str) -> dict[str, str]:
        """Delete the table's staging directories left by dead writes; returns them with why."""
        removed = {}
        for directory in self.filesystem.glob_directories(f"{table_uri.rstrip('/')}/{STAGING_PREFIX}*"):
            reason = self.removal_reason(directory)
            if reason is not None:
                self.filesystem.delete(directory)
                removed[directory] = reason
        return removed
