"""Where lineage comes from: the protocol the planner asks, and an in-memory source.

`MarquezClient` implements `LineageSource` over HTTP; `InMemoryLineage` answers from a graph
already loaded (a lineage export, a generated graph in a test or benchmark)."""

from __future__ import annotations

from typing import Any, Protocol

from backfill_orchestrator.config.model import JobRef
from backfill_orchestrator.lineage.errors import UnaddressableJobError, UnknownJobError
from backfill_orchestrator.lineage.graph import JobKey, LineageGraph, job_node_id, parse_lineage_response
from backfill_orchestrator.lineage.nodeid import is_addressable
from backfill_orchestrator.lineage.runs import RunHistory

URL_ENV = "MARQUEZ_URL"
API_KEY_ENV = "MARQUEZ_API_KEY"  # the name Marquez's own Python client reads


class LineageSource(Protocol):
    def lineage(self, job: JobRef, *, depth: int) -> LineageGraph:
        """The lineage around `job`, `depth` job hops deep (both directions, as Marquez answers).

        Jobs whose consumers the answer shows in full are marked complete in the graph.
        Raises UnknownJobError when the job does not exist, UnaddressableJobError when a source
        that asks by node id (Marquez) cannot name it."""
        ...


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
