"""A job's runs as Marquez lists them, and the jobs that produce what a job reads.

`GET /api/v1/namespaces/{namespace}/jobs/{job}/runs?limit=&offset=` answers
`{"runs": [Run, ...], "totalCount": n}`, newest first (Marquez orders by `startedAt`, runs never
started last); a Run has `id`, `state` (NEW, RUNNING, COMPLETED, ABORTED, FAILED),
`nominalStartTime`/`nominalEndTime` (from the OpenLineage `nominalTime` run facet, may be null),
`startedAt`, `endedAt`, `durationMs` and more this module does not need.

The producers of a job's inputs are read from a lineage answer one hop deep: Marquez answers
the neighbourhood in both directions, so the writers of the job's input datasets are in it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any, Protocol

from backfill_orchestrator._compat import UTC
from backfill_orchestrator.config.model import JobRef
from backfill_orchestrator.errors import ServiceError

RUN_STATES = ("NEW", "RUNNING", "COMPLETED", "ABORTED", "FAILED")
MAX_PAGE_SIZE = 100  # Marquez's default `limit`; one answer stays the size it is used to serving


class MalformedRunsError(ServiceError, ValueError):
    """The payload is not a Marquez run list; the message says where."""


@dataclass(frozen=True)
class JobRun:
    run_id: str
    state: str
    started_at: datetime | None
    ended_at: datetime | None
    nominal_start: datetime | None
    nominal_end: datetime | None
    duration_ms: int | None

    @property
    def has_window(self) -> bool:
        return self.nominal_start is not None

    def covers(self, day: date) -> bool:
        """Whether the run's nominal window overlaps `day` (UTC). A zero-length window (start
        == end, as schedulers often send for a point in time) covers the day it falls in."""
        if self.nominal_start is None:
            return False
        day_start = datetime.combine(day, time(0), tzinfo=UTC)
        day_end = day_start + timedelta(days=1)
        end = self.nominal_end if self.nominal_end is not None else self.nominal_start
        if end <= self.nominal_start:
            return day_start <= self.nominal_start < day_end
        return self.nominal_start < day_end and end > day_start

    @property
    def window_days(self) -> float | None:
        """The length of the nominal window in days: how many dates one run processed."""
        if self.nominal_start is None or self.nominal_end is None or self.nominal_end <= self.nominal_start:
            return None
        return (self.nominal_end - self.nominal_start).total_seconds() / 86400


@dataclass(frozen=True)
class RunPage:
    runs: list[JobRun]
    total_count: int | None


class RunHistory(Protocol):
    """Where the preflight reads upstream freshness and run durations (MarquezClient)."""

    def job_runs(self, job: JobRef, *, limit: int, offset: int) -> RunPage:
        """One page of the job's runs, newest first. Raises UnknownJobError for an unknown job."""
        ...

    def producers(self, job: JobRef) -> list[JobRef]:
        """The jobs that write the datasets `job` reads (itself left out)."""
        ...


class KnownProducers:
    """A RunHistory answering `producers` from lineage already read (`known`: job key -> the
    keys of its producers, e.g. `ProducersSeen.producers`) and asking `history` for the rest
    and for runs, which must be current."""

    def __init__(self, history: RunHistory, known: Mapping[tuple[str, str], tuple[tuple[str, str], ...]]):
        self._history = history
        self._known = known

    def job_runs(self, job: JobRef, *, limit: int, offset: int) -> RunPage:
        return self._history.job_runs(job, limit=limit, offset=offset)

    def producers(self, job: JobRef) -> list[JobRef]:
        found = self._known.get(job.key)
        if found is None:
            return self._history.producers(job)
        return [JobRef(namespace=namespace, name=name) for namespace, name in found]


def _time(value: Any, where: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise MalformedRunsError(f"{where}: expected an ISO-8601 time, got {type(value).__name__}")
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise MalformedRunsError(f"{where}: not an ISO-8601 time: {value[:40]!r}") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)


def parse_runs_response(payload: Any) -> RunPage:
    """A Marquez run list to a RunPage. Raises MalformedRunsError."""
    if not isinstance(payload, dict) or not isinstance(payload.get("runs"), list):
        raise MalformedRunsError("no 'runs' list in the response")
    runs = []
    for index, item in enumerate(payload["runs"]):
        where = f"runs[{index}]"
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("id"), str)
            or not isinstance(item.get("state"), str)
        ):
            raise MalformedRunsError(f"{where}: a run needs an id and a state")
        duration = item.get("durationMs")
        if duration is not None and (
            not isinstance(duration, int) or isinstance(duration, bool) or duration < 0
        ):
            raise MalformedRunsError(
                f"{where}.durationMs: expected a whole number of milliseconds, got {duration!r}"
            )
        runs.append(
            JobRun(
                run_id=item["id"],
                state=item["state"],
                started_at=_time(item.get("startedAt"), f"{where}.startedAt"),
                ended_at=_time(item.get("endedAt"), f"{where}.endedAt"),
                nominal_start=_time(item.get("nominalStartTime"), f"{where}.nominalStartTime"),
                nominal_end=_time(item.get("nominalEndTime"), f"{where}.nominalEndTime"),
                duration_ms=duration,
            )
        )
    total = payload.get("totalCount")
    return RunPage(
        runs=runs, total_count=total if isinstance(total, int) and not isinstance(total, bool) else None
    )


def upstream_producers(payload: Any, job: JobRef) -> list[JobRef]:
    """From a lineage answer around `job`: the writers of its input datasets, in id order.
    Raises MalformedRunsError when the answer has no graph."""
    if not isinstance(payload, dict) or not isinstance(payload.get("graph"), list):
        raise MalformedRunsError("no 'graph' list in the lineage response")
    nodes: dict[str, Mapping[str, Any]] = {
        node["id"]: node
        for node in payload["graph"]
        if isinstance(node, dict) and isinstance(node.get("id"), str)
    }
    start = next(
        (node for node in nodes.values() if node.get("type") == "JOB" and _job_key(node) == job.key), None
    )
    if start is None:
        return []
    found: dict[tuple[str, str], None] = {}
    for edge in _edges(start, "inEdges"):
        dataset = nodes.get(str(edge.get("origin")))
        if dataset is None or dataset.get("type") != "DATASET":
            continue
        for writer_edge in _edges(dataset, "inEdges"):
            writer = nodes.get(str(writer_edge.get("origin")))
            key = _job_key(writer) if writer is not None and writer.get("type") == "JOB" else None
            if key is not None and key != job.key:
                found[key] = None
    return [JobRef(namespace=namespace, name=name) for namespace, name in found]


def _edges(node: Mapping[str, Any], side: str) -> list[Mapping[str, Any]]:
    edges = node.get(side)
    return [edge for edge in edges if isinstance(edge, dict)] if isinstance(edges, list) else []


def _job_key(node: Mapping[str, Any]) -> tuple[str, str] | None:
    data = node.get("data")
    ident = data.get("id") if isinstance(data, dict) and isinstance(data.get("id"), dict) else data
    if not isinstance(ident, dict):
        return None
    namespace, name = ident.get("namespace"), ident.get("name")
    return (namespace, name) if isinstance(namespace, str) and isinstance(name, str) else None
