"""Job-to-job lineage read from Marquez lineage responses.

A Marquez response (`{"graph": [node, ...]}`) is the neighbourhood of one job in both
directions, cut at `depth` job hops, with edges to jobs beyond the cut dropped. This module
turns it into what the planner needs: per job, who reads its outputs (downstream only), and
which of those answers are *complete* (not cut by the depth boundary).

Completeness follows Marquez's own query (`LineageDao.getLineage`): jobs are collected by a
breadth-first walk in both directions over shared datasets (a job is one hop from every job
that reads or writes one of its datasets), up to `depth` hops. A job at hop distance d < depth
therefore has every consumer of its outputs (distance <= d + 1 <= depth) in the response; a
job at the boundary (d == depth) may have lost some."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import chain, compress, repeat
from operator import eq, itemgetter
from typing import Any, NamedTuple, TypeVar, cast

from backfill_orchestrator.errors import ServiceError
from backfill_orchestrator.lineage.gcpause import paused_gc

JobKey = tuple[str, str]  # (namespace, name): cheap to hash, no validation per job
Key = TypeVar("Key")
Value = TypeVar("Value")


class JobInfo(NamedTuple):
    """What lineage tells about a job, besides its edges."""

    namespace: str
    name: str
    parent_job_name: str | None = None  # the DAG of an Airflow task job
    airflow_dag_id: str | None = None  # from the `airflow` run facet of its latest run, if any

    @property
    def key(self) -> JobKey:
        return (self.namespace, self.name)


def job_node_id(namespace: str, name: str) -> str:
    """Marquez's node id for a job. Only ever built to ask Marquez, never parsed."""
    return f"job:{namespace}:{name}"


@dataclass
class LineageGraph:
    """Jobs seen so far and, for complete jobs, every job that reads one of their outputs."""

    jobs: dict[JobKey, JobInfo] = field(default_factory=dict)
    consumers: dict[JobKey, tuple[JobKey, ...]] = field(default_factory=dict)
    # Per asked job (the start of an answer at least one hop deep): the jobs writing what it
    # reads, which Marquez's both-ways answer holds; the preflight's freshness check reuses it.
    producers: dict[JobKey, tuple[JobKey, ...]] = field(default_factory=dict)

    def is_complete(self, job: JobKey) -> bool:
        return job in self.consumers

    def merge(self, other: LineageGraph) -> None:
        """Add what `other` knows. Complete answers are never replaced by partial ones."""
        _add_unknown(self.jobs, other.jobs)
        _add_unknown(self.consumers, other.consumers)
        _add_unknown(self.producers, other.producers)


def _add_unknown(known: dict[Key, Value], other: Mapping[Key, Value]) -> None:
    """Add `other`'s entries for the keys `known` lacks: what is known already wins.
    dict.update does the work at C speed (answers are large)."""
    if known:
        merged = dict(other)
        merged.update(known)
        known.update(merged)
    else:
        known.update(other)


class MalformedLineageError(ServiceError, ValueError):
    """The payload is not a Marquez lineage graph; the message says where."""


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise MalformedLineageError(message)


def _job_info(node: Mapping[str, Any], index: int) -> JobInfo:
    data = node.get("data")
    if not isinstance(data, dict):
        raise MalformedLineageError(f"graph[{index}] (a job) has no data")
    ident = data["id"] if isinstance(data.get("id"), dict) else data
    namespace, name = ident.get("namespace"), ident.get("name")
    if not (isinstance(namespace, str) and isinstance(name, str) and namespace and name):
        raise MalformedLineageError(f"graph[{index}] (a job) has no data.id namespace and name")
    parent = data.get("parentJobName")
    return JobInfo(
        namespace, name, parent if isinstance(parent, str) and parent else None, _airflow_dag_id(data)
    )


def _airflow_dag_id(data: Mapping[str, Any]) -> str | None:
    """The Airflow integration's run facets (`airflow` for tasks, `airflowDagRun` for DAGs) name the DAG."""
    run = data.get("latestRun")
    facets = run.get("facets") if isinstance(run, dict) else None
    if not isinstance(facets, dict):
        return None
    for facet_name in ("airflow", "airflowDagRun"):
        facet = facets.get(facet_name)
        dag = facet.get("dag") if isinstance(facet, dict) else None
        dag_id = dag.get("dag_id") if isinstance(dag, dict) else None
        if isinstance(dag_id, str) and dag_id:
            return dag_id
    return None


def _edge_ends(node: Mapping[str, Any], side: str, end: str, index: int) -> list[str]:
    edges = node.get(side, [])
    _require(isinstance(edges, list), f"graph[{index}].{side} is not a list")
    ends = []
    for edge in edges:
        _require(
            isinstance(edge, dict) and isinstance(edge.get(end), str),
            f"graph[{index}].{side} has an edge without {end}",
        )
        ends.append(edge[end])
    return ends


def parse_lineage_response(payload: Any, *, start: JobKey | None, depth: int | None) -> LineageGraph:
    """A Marquez lineage response to a LineageGraph.

    `start` and `depth` are the query's: jobs fewer than `depth` hops from `start` are marked
    complete. `depth=None` says the payload is the whole graph (every job complete), as for a
    lineage export held in memory. Raises MalformedLineageError."""
    with paused_gc():
        return _parse(payload, start=start, depth=depth)


def _parse(payload: Any, *, start: JobKey | None, depth: int | None) -> LineageGraph:
    # Answers run to 100,000s of nodes, so the usual shapes go through C-level maps over the
    # node and edge lists, and anything unusual takes the checked path (`_job_info`,
    # `_edge_ends`), which says where the answer is malformed. Edge ends are looked up once,
    # straight to what the planner keeps (job keys, reader tuples): each lookup hashes a
    # string the decoder just made, a cache miss per edge on large answers.
    _require(
        isinstance(payload, dict) and isinstance(payload.get("graph"), list),
        "no 'graph' list in the response",
    )
    nodes: list[Any] = payload["graph"]
    ids, kinds = _ids_and_kinds(nodes)
    is_job = list(map(eq, kinds, repeat("JOB")))
    is_dataset = list(map(eq, kinds, repeat("DATASET")))  # other node types (none today) carry no lineage
    job_nodes, job_ids = list(compress(nodes, is_job)), list(compress(ids, is_job))
    dataset_nodes, dataset_ids = list(compress(nodes, is_dataset)), list(compress(ids, is_dataset))

    infos = _job_infos(nodes, job_nodes)
    keys = list(map(_KEY, infos))
    key_by_id = dict(zip(job_ids, keys, strict=True))
    if len(key_by_id) == len(job_ids):
        jobs = dict(zip(keys, infos, strict=True))
    else:  # a job id twice (never from Marquez): its last node wins, as for any id
        jobs = dict(zip(key_by_id.values(), dict(zip(job_ids, infos, strict=True)).values(), strict=True))
    graph = LineageGraph(jobs=jobs)

    # Dataset -> the keys of its readers inside the answer, each once. Writers and the datasets
    # of each job only serve the completeness walk: a whole graph (depth None) neither reads
    # nor checks them (each edge is also listed, and checked, at its other end).
    walk = depth is not None
    readers: dict[str, tuple[JobKey, ...]] = {}
    writers: dict[str, list[JobKey]] = {}
    for node, node_id in zip(dataset_nodes, dataset_ids, strict=True):
        readers[node_id] = tuple(dict.fromkeys(_ends_as(node, "outEdges", "destination", key_by_id, nodes)))
        if walk:
            writers[node_id] = _ends_as(node, "inEdges", "origin", key_by_id, nodes)
    # Job -> the reader tuples of its outputs inside the answer.
    outputs: dict[JobKey, list[tuple[JobKey, ...]]] = {}
    job_datasets: dict[JobKey, list[str]] = {}
    dataset_by_id = dict(zip(dataset_ids, dataset_ids, strict=True)) if walk else {}
    for node, node_id, key in zip(job_nodes, job_ids, keys, strict=True):
        if node_id in readers:
            continue  # an id given to a dataset and a job: the dataset's, as Marquez's ids never clash
        outputs[key] = _ends_as(node, "outEdges", "destination", readers, nodes)
        if walk:
            job_datasets[key] = [
                *_ends_as(node, "inEdges", "origin", dataset_by_id, nodes),
                *_ends_as(node, "outEdges", "destination", dataset_by_id, nodes),
            ]

    if depth is None:
        complete: Iterable[JobKey] = jobs
    else:
        if start is None or start not in jobs:
            # Marquez answers a job without inputs or outputs with an empty graph (older
            # versions) or the job alone: it exists and nothing reads from it.
            if start is not None:
                graph.jobs.setdefault(start, JobInfo(*start))
                if depth > 0:
                    graph.consumers[start] = ()
                    graph.producers[start] = ()
            return graph
        complete = _within_hops(start, depth - 1, job_datasets, readers, writers)
        if depth > 0:
            graph.producers[start] = _producers(start, job_nodes, keys, dataset_by_id, writers, nodes)

    consumers = graph.consumers
    for key in complete:
        found = outputs.get(key, ())
        # The usual job writes one table: its readers' tuple is shared, not copied.
        consumers[key] = found[0] if len(found) == 1 else tuple(dict.fromkeys(chain.from_iterable(found)))
    return graph


def _producers(
    start: JobKey,
    job_nodes: list[Any],
    keys: list[JobKey],
    dataset_by_id: Mapping[str, str],
    writers: Mapping[str, list[JobKey]],
    nodes: list[Any],
) -> tuple[JobKey, ...]:
    """The writers of the datasets `start` reads, in edge order, itself left out (as
    `lineage.runs.upstream_producers` reads them from the same answer)."""
    node = job_nodes[keys.index(start)]
    found: dict[JobKey, None] = {}
    for dataset_id in _ends_as(node, "inEdges", "origin", dataset_by_id, nodes):
        for writer in writers.get(dataset_id, ()):
            if writer != start:
                found[writer] = None
    return tuple(found)


_ID = itemgetter("id")
_KEY = itemgetter(slice(0, 2))  # JobInfo -> JobKey, a plain (namespace, name) tuple


def _ids_and_kinds(nodes: list[Any]) -> tuple[list[str], list[Any]]:
    """Each node's id and type; raises MalformedLineageError at the first node without an id."""
    try:
        ids = list(map(_ID, nodes))
        kinds = list(map(dict.get, nodes, repeat("type")))
        if set(map(type, ids)) <= {str}:
            return ids, kinds
    except (KeyError, TypeError):
        pass
    for index, node in enumerate(nodes):
        _require(isinstance(node, dict) and isinstance(node.get("id"), str), f"graph[{index}] has no id")
    return [node["id"] for node in nodes], [node.get("type") for node in nodes]


def _job_infos(nodes: list[Any], job_nodes: list[Any]) -> list[JobInfo]:
    infos = list(map(_plain_job_info, map(dict.get, job_nodes, repeat("data"))))
    if None not in infos:
        return cast(list[JobInfo], infos)  # the common case: no per-node checks
    return [
        info if info is not None else _job_info(node, _index(nodes, node))
        for info, node in zip(infos, job_nodes, strict=True)
    ]


def _index(nodes: list[Any], node: Any) -> int:
    """Where a node is in the answer, for an error message (only ever on the checked path)."""
    return next(index for index, candidate in enumerate(nodes) if candidate is node)


def _plain_job_info(data: Any) -> JobInfo | None:
    """The usual job node's data (data.id with namespace and name, maybe parentJobName), or
    None to take the checked path (`_job_info`)."""
    if data.__class__ is not dict:
        return None
    ident = data.get("id")
    if ident.__class__ is not dict:
        return None
    namespace, name = ident.get("namespace"), ident.get("name")
    if namespace.__class__ is not str or name.__class__ is not str or not namespace or not name:
        return None
    parent = data.get("parentJobName")
    if parent is not None and parent.__class__ is not str:
        return None
    run = data.get("latestRun")
    dag_id = _airflow_dag_id(data) if run and (run.__class__ is not dict or run.get("facets")) else None
    return _new_tuple(JobInfo, (namespace, name, parent or None, dag_id))  # JobInfo(...) minus a Python call


_new_tuple = tuple.__new__
_NO_EDGES: list[Any] = []  # a node without the key (never written to)
_END = {"destination": itemgetter("destination"), "origin": itemgetter("origin")}


def _ends_as(
    node: Mapping[str, Any], side: str, end: str, known: Mapping[str, Any], nodes: list[Any]
) -> list[Any]:
    """`known[e]` for each end `e` of a node's edges that is in `known` (a node of the answer)."""
    edges = node.get(side, _NO_EDGES)
    try:
        if edges.__class__ is list:
            ends = list(map(_END[end], edges))
            found = list(map(known.get, ends))
            if None in found:  # ids in `known` are str: only what was left out may not be
                "".join(ends)  # TypeError unless every end is a str
                found = [value for value in found if value is not None]
            return found
    except (TypeError, KeyError):
        pass
    return [known[other] for other in _edge_ends(node, side, end, _index(nodes, node)) if other in known]


def _within_hops(
    start: JobKey,
    max_hops: int,
    job_datasets: Mapping[JobKey, list[str]],
    readers: Mapping[str, Iterable[JobKey]],
    writers: Mapping[str, Iterable[JobKey]],
) -> list[JobKey]:
    """Jobs at most `max_hops` job hops from `start`, both directions (Marquez's walk)."""
    if max_hops < 0:
        return []
    distance = {start: 0}
    seen_datasets: set[str] = set()
    queue = deque([start])
    while queue:
        job = queue.popleft()
        hops = distance[job]
        if hops == max_hops:
            continue
        for dataset_id in job_datasets.get(job, ()):
            if dataset_id in seen_datasets:
                continue
            seen_datasets.add(dataset_id)
            for neighbour in (*readers.get(dataset_id, ()), *writers.get(dataset_id, ())):
                if neighbour not in distance:
                    distance[neighbour] = hops + 1
                    queue.append(neighbour)
    return list(distance)
