"""Where lineage comes from: the protocol the planner asks, and an in-memory source.

`MarquezClient` implements `LineageSource` over HTTP; `InMemoryLineage` answers from a graph
already loaded (a lineage export, a generated graph in a test or benchmark)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Protocol

from backfill_orchestrator.config.model import JobRef
from backfill_orchestrator.lineage.errors import LineageError, UnaddressableJobError, UnknownJobError
from backfill_orchestrator.lineage.graph import JobKey, LineageGraph, job_node_id, parse_lineage_response
from backfill_orchestrator.lineage.nodeid import is_addressable
from backfill_orchestrator.lineage.runs import RunHistory, RunPage

URL_ENV = "MARQUEZ_URL"
API_KEY_ENV = "MARQUEZ_API_KEY"  # the name Marquez's own Python client reads


class LineageSource(Protocol):
    def lineage(self, job: JobRef, *, depth: int) -> LineageGraph:
        """The lineage around `job`, `depth` job hops deep (both directions, as Marquez answers).

        Jobs whose consumers the answer shows in full are marked complete in the graph.
        Raises UnknownJobError when the job does not exist, UnaddressableJobError when a source
        that asks by node id (Marquez) cannot name it."""
        ...


class JobDirectory(Protocol):
    def job_names(self, namespace: str) -> list[str]:
        """Names of the namespace's jobs (bounded), for "did you mean"; none for an unknown one."""
        ...


def job_names_of(source: object, namespace: str) -> list[str]:
    """The namespace's job names when the source can list them (`JobDirectory`), else none.
    Only for suggestions: a source that fails to list them suggests nothing."""
    listing = getattr(source, "job_names", None)
    if not callable(listing):
        return []
    try:
        return list(listing(namespace))
    except LineageError:
        return []


class LineageWithHistory(LineageSource, RunHistory, Protocol):
    """A lineage source that also has the jobs' run history (Marquez): what the trigger plans
    and runs its preflight against."""


def lookup_node_id(job: JobRef) -> str:
    """The node id to ask Marquez about `job`; UnaddressableJobError when Marquez would read it
    as another job (it would answer 404, or worse another job's lineage)."""
    if not is_addressable(job.namespace, job.name):
        raise UnaddressableJobError([job])
    return job_node_id(job.namespace, job.name)


class InMemoryLineage:
    """A LineageSource over one whole lineage graph: every answer is the whole graph, complete.

    Built from a Marquez-shaped response (`{"graph": [...]}`), parsed once."""

    def __init__(self, graph: LineageGraph):
        self._graph = graph
        self.queries = 0  # how many times it was asked; tests check the walker's economy

    @classmethod
    def from_response(cls, payload: Any) -> InMemoryLineage:
        return cls(parse_lineage_response(payload, start=None, depth=None))

    def lineage(self, job: JobRef, *, depth: int) -> LineageGraph:
        self.queries += 1
        if job.key not in self._graph.jobs:
            raise UnknownJobError([job])
        return self._graph

    def job_names(self, namespace: str) -> list[str]:
        return sorted(name for ns, name in self._graph.jobs if ns == namespace)


class ProducersSeen:
    """A LineageSource that passes every answer through and keeps the producers it names (the
    writers of what each asked job reads), so the preflight's freshness check reuses the
    planner's answers instead of asking Marquez about the roots again. One per invocation."""

    def __init__(self, source: LineageSource):
        self._source = source
        self.producers: dict[JobKey, tuple[JobKey, ...]] = {}

    def lineage(self, job: JobRef, *, depth: int) -> LineageGraph:
        graph = self._source.lineage(job, depth=depth)
        for key, found in graph.producers.items():
            self.producers.setdefault(key, found)
        return graph

    def job_names(self, namespace: str) -> list[str]:
        return job_names_of(self._source, namespace)


class LineageAhead:
    """A LineageWithHistory whose first answer was asked for ahead (`first_query`, answered by
    `first`, a read started side by side with other work): the planner's first question takes
    that answer, or its error, and everything else goes to `source()` (made on first use).
    One per invocation."""

    def __init__(
        self,
        source: Callable[[], LineageWithHistory],
        *,
        first_query: tuple[JobRef, int],
        first: Future[LineageGraph],
    ):
        self._source_factory = source
        self._source: LineageWithHistory | None = None
        self._first_key = (first_query[0].key, first_query[1])
        self._first: Future[LineageGraph] | None = first

    def _made(self) -> LineageWithHistory:
        if self._source is None:
            self._source = self._source_factory()
        return self._source

    def lineage(self, job: JobRef, *, depth: int) -> LineageGraph:
        first = self._first
        if first is not None and (job.key, depth) == self._first_key:
            self._first = None  # answered once: a second question is asked again
            return first.result()
        return self._made().lineage(job, depth=depth)

    def job_runs(self, job: JobRef, *, limit: int, offset: int) -> RunPage:
        return self._made().job_runs(job, limit=limit, offset=offset)

    def producers(self, job: JobRef) -> list[JobRef]:
        return self._made().producers(job)

    def job_names(self, namespace: str) -> list[str]:
        return job_names_of(self._made(), namespace)
