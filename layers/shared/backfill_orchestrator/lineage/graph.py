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
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, NamedTuple

from backfill_orchestrator.errors import ServiceError
from backfill_orchestrator.lineage.gcpause import paused_gc

JobKey = tuple[str, str]  # (namespace, name): cheap to hash, no validation per job


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

    def is_complete(self, job: JobKey) -> bool:
        return job in self.consumers

    def merge(self, other: LineageGraph) -> None:
        """Add what `other` knows. Complete answers are never replaced by partial ones."""
        # What is known already wins; dict.update does the rest at C speed (answers are large).
        if self.jobs:
            jobs = dict(other.jobs)
            jobs.update(self.jobs)
            self.jobs.update(jobs)
        else:
            self.jobs.update(other.jobs)
        if self.consumers:
            consumers = dict(other.consumers)
            consumers.update(self.consumers)
            self.consumers.update(consumers)
        else:
            self.consumers.update(other.consumers)


class MalformedLineageError(ServiceError, ValueError):
    """The payload is not a Marquez lineage graph; the message says where."""


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise MalformedLineageError(message)


def _job_info(node: Mapping[str, Any], index: int) -> JobInfo:
    data = node.get("data")
    _require(isinstance(data, dict), f"graph[{index}] (a job) has no data")
    ident = data.get("id") if isinstance(data.get("id"), dict) else data
    namespace, name = ident.get("namespace"), ident.get("name")
    _require(
        isinstance(namespace, str) and isinstance(name, str) and namespace != "" and name != "",
        f"graph[{index}] (a job) has no data.id namespace and name",
    )
    parent = data.get("parentJobName")
    return JobInfo(namespace, name, parent if isinstance(parent, str) and parent else None, _airflow_dag_id(data))


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
        _require(isinstance(edge, dict) and isinstance(edge.get(end), str), f"graph[{index}].{side} has an edge without {end}")
        ends.append(edge[end])
    return ends


def parse_lineage_response(
    payload: Any, *, start: JobKey | None, depth: int | None
) -> LineageGraph:
    """A Marquez lineage response to a LineageGraph.

    `start` and `depth` are the query's: jobs fewer than `depth` hops from `start` are marked
    complete. `depth=None` says the payload is the whole graph (every job complete), as for a
    lineage export held in memory. Raises MalformedLineageError."""
    with paused_gc():
        return _parse(payload, start=start, depth=depth)


def _parse(payload: Any, *, start: JobKey | None, depth: int | None) -> LineageGraph:
    # One pass to tell jobs from datasets, one to read the edges: answers run to 100,000s of
    # nodes, so the common shapes take the short path and anything unusual the checked one
    # (`_job_info`, `_edge_ends`), which says where the answer is malformed.
    _require(isinstance(payload, dict) and isinstance(payload.get("graph"), list), "no 'graph' list in the response")
    nodes: list[Any] = payload["graph"]

    job_by_id: dict[str, JobInfo] = {}
    key_by_id: dict[str, JobKey] = {}
    dataset_ids: set[str] = set()
    job_nodes: list[tuple[int, Any]] = []
    dataset_nodes: list[tuple[int, Any]] = []
    for index, node in enumerate(nodes):
        _require(isinstance(node, dict) and isinstance(node.get("id"), str), f"graph[{index}] has no id")
        kind = node.get("type")
        if kind == "JOB":
            info = _plain_job_info(node.get("data")) or _job_info(node, index)
            job_by_id[node["id"]] = info
            key_by_id[node["id"]] = info[:2]
            job_nodes.append((index, node))
        elif kind == "DATASET":
            dataset_ids.add(node["id"])
            dataset_nodes.append((index, node))
        # Other node types (none today) carry no job-to-job lineage.

    # Dataset -> its readers and writers inside the response (ids of jobs). Writers and each
    # job's inputs only serve the completeness walk: a whole graph (depth None) neither reads
    # nor checks them (each edge is also listed, and checked, at its other end).
    walk = depth is not None
    readers: dict[str, list[str]] = {}
    writers: dict[str, list[str]] = {}
    job_outputs: dict[str, list[str]] = {}
    job_datasets: dict[str, list[str]] = {}
    for index, node in dataset_nodes:
        readers[node["id"]] = _ends_within(node, "outEdges", "destination", index, job_by_id)
        if walk:
            writers[node["id"]] = _ends_within(node, "inEdges", "origin", index, job_by_id)
    for index, node in job_nodes:
        if node["id"] in dataset_ids:
            continue  # an id given to a dataset and a job: the dataset's, as Marquez's ids never clash
        outputs = job_outputs[node["id"]] = _ends_within(node, "outEdges", "destination", index, dataset_ids)
        if walk:
            job_datasets[node["id"]] = _ends_within(node, "inEdges", "origin", index, dataset_ids) + outputs

    graph = LineageGraph(jobs=dict(zip(key_by_id.values(), job_by_id.values(), strict=True)))
    if depth is None:
        complete: Iterable[str] = job_by_id
    else:
        start_id = _find_start(job_by_id, start)
        if start_id is None:
            # Marquez answers a job without inputs or outputs with an empty graph (older
            # versions) or the job alone: it exists and nothing reads from it.
            if start is not None:
                graph.jobs.setdefault(start, JobInfo(*start))
                if depth > 0:
                    graph.consumers[start] = ()
            return graph
        complete = _within_hops(start_id, depth - 1, job_datasets, readers, writers)

    key_of = key_by_id.__getitem__
    consumers = graph.consumers
    for job_id in complete:
        outputs = job_outputs.get(job_id, ())
        if len(outputs) == 1:  # the usual job: one output table
            consumers[key_of(job_id)] = tuple(dict.fromkeys(map(key_of, readers[outputs[0]])))
        else:
            consumers[key_of(job_id)] = tuple(
                dict.fromkeys(key_of(reader) for dataset_id in outputs for reader in readers[dataset_id])
            )
    return graph


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


def _ends_within(node: Mapping[str, Any], side: str, end: str, index: int, known: Collection[str]) -> list[str]:
    """The ends of a node's edges that are in `known` (a node of the answer)."""
    edges = node.get(side, _NO_EDGES)
    try:
        if edges.__class__ is list:
            ends = list(map(_END[end], edges))
            inside = list(filter(known.__contains__, ends))
            if len(inside) != len(ends):  # ids in `known` are str: only what was left out may not be
                "".join(ends)  # TypeError unless every end is a str
            return inside
    except (TypeError, KeyError):
        pass
    return [other for other in _edge_ends(node, side, end, index) if other in known]


def _find_start(job_by_id: Mapping[str, JobInfo], start: JobKey | None) -> str | None:
    if start is None:
        return None
    candidate = job_node_id(*start)
    if candidate in job_by_id and job_by_id[candidate].key == start:
        return candidate
    for node_id, info in job_by_id.items():  # ids are Marquez's business: trust the data
        if info.key == start:
            return node_id
    return None


def _within_hops(
    start_id: str,
    max_hops: int,
    job_datasets: Mapping[str, list[str]],
    readers: Mapping[str, list[str]],
    writers: Mapping[str, list[str]],
) -> list[str]:
    """Job ids at most `max_hops` job hops from `start_id`, both directions (Marquez's walk)."""
    if max_hops < 0:
        return []
    distance = {start_id: 0}
    seen_datasets: set[str] = set()
    queue = deque([start_id])
    while queue:
        job_id = queue.popleft()
        hops = distance[job_id]
        if hops == max_hops:
            continue
        for dataset_id in job_datasets.get(job_id, ()):
            if dataset_id in seen_datasets:
                continue
            seen_datasets.add(dataset_id)
            for neighbour in (*readers.get(dataset_id, ()), *writers.get(dataset_id, ())):
                if neighbour not in distance:
                    distance[neighbour] = hops + 1
                    queue.append(neighbour)
    return list(distance)
