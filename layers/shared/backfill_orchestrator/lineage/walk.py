"""Collect enough lineage to follow every downstream path from the roots, `max_depth` hops deep.

One Marquez answer shows at most `depth` job hops and drops edges at its boundary, so a job at
the boundary is asked about again (the frontier). Each answer marks complete every job well
inside it, so a wide frontier costs one query per region, not one per job."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from backfill_orchestrator.config.model import JobRef
from backfill_orchestrator.lineage.errors import (
    LineageChangedError,
    UnaddressableJobError,
    UnknownJobError,
    UnwalkableLineageError,
)
from backfill_orchestrator.lineage.graph import JobKey, LineageGraph
from backfill_orchestrator.lineage.source import LineageSource

# Marquez's own default depth: answers stay the size Marquez is used to serving.
DEFAULT_QUERY_DEPTH = 20


def depth_to_ask(hops: int, *, max_depth: int, query_depth: int = DEFAULT_QUERY_DEPTH) -> int:
    """The depth to ask about a job `hops` from a root: enough that everything down to
    `max_depth` is inside the answer, not on its edge (0: the job's own data only)."""
    return 0 if max_depth == 0 else min(query_depth, max_depth - hops + 1)


def fetch_downstream(
    source: LineageSource,
    roots: Sequence[JobRef],
    *,
    max_depth: int,
    query_depth: int = DEFAULT_QUERY_DEPTH,
) -> LineageGraph:
    """A graph in which every job within `max_depth` hops downstream of a root is complete
    (its consumers known), so the caller can also tell where `max_depth` cut the walk.

    Exclusions are the caller's business: this walks through every job. `max_depth=0` only
    checks that the roots exist and reads their data. Raises UnaddressableJobError naming every
    root Marquez cannot look up by node id, else UnknownJobError naming every unknown root;
    UnwalkableLineageError when a job whose consumers are needed cannot be looked up;
    LineageChangedError if a job vanishes while walking; other lineage errors pass through."""
    if query_depth < 1:
        raise ValueError("query_depth must be at least 1")
    graph = LineageGraph()

    def ensure(job: JobRef, hops: int) -> None:
        known = job.key in graph.jobs
        if known and (max_depth == 0 or graph.is_complete(job.key)):
            return
        graph.merge(
            source.lineage(job, depth=depth_to_ask(hops, max_depth=max_depth, query_depth=query_depth))
        )

    unknown: list[JobRef] = []
    unaddressable: list[JobRef] = []
    for root in roots:
        try:
            ensure(root, 0)
        except UnaddressableJobError:
            unaddressable.append(root)
        except UnknownJobError:
            unknown.append(root)
    if unaddressable:
        raise UnaddressableJobError(unaddressable)
    if unknown:
        raise UnknownJobError(unknown)
    if max_depth == 0 or len(graph.consumers) == len(graph.jobs):
        # Every job known is complete (consumers' keys are jobs): no answer is cut, nothing
        # to ask, as when one answer holds the whole graph (an in-memory lineage export).
        return graph

    distance: dict[JobKey, int] = {}
    queue: deque[JobKey] = deque()
    for root in roots:
        if root.key not in distance:
            distance[root.key] = 0
            queue.append(root.key)
    while queue:
        key = queue.popleft()
        hops = distance[key]
        if not graph.is_complete(key):
            job = JobRef(namespace=key[0], name=key[1])
            try:
                ensure(job, hops)
            except UnaddressableJobError:
                raise UnwalkableLineageError(job, hops=hops) from None
            except UnknownJobError:
                raise LineageChangedError(job) from None
        if hops == max_depth:
            continue
        for reader in graph.consumers.get(key, ()):
            if reader not in distance:
                distance[reader] = hops + 1
                queue.append(reader)
    return graph
