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
        for key, info in other.jobs.items():
            self.jobs.setdefault(key, info)
        for key, readers in other.consumers.items():
            self.consumers.setdefault(key, readers)


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
    _require(isinstance(payload, dict) and isinstance(payload.get("graph"), list), "no 'graph' list in the response")
    nodes: list[Any] = payload["graph"]

    job_by_id: dict[str, JobInfo] = {}
    dataset_ids: set[str] = set()
    for index, node in enumerate(nodes):
        _require(isinstance(node, dict) and isinstance(node.get("id"), str), f"graph[{index}] has no id")
        kind = node.get("type")
        if kind == "JOB":
            job_by_id[node["id"]] = _job_info(node, index)
        elif kind == "DATASET":
            dataset_ids.add(node["id"])
        # Other node types (none today) carry no job-to-job lineage.

    # Dataset -> its readers and writers inside the response (ids of jobs).
    readers: dict[str, list[str]] = {}
    writers: dict[str, list[str]] = {}
    job_outputs: dict[str, list[str]] = {}
    job_datasets: dict[str, list[str]] = {}
    for index, node in enumerate(nodes):
        node_id = node["id"]
        if node_id in dataset_ids:
            readers[node_id] = [j for j in _edge_ends(node, "outEdges", "destination", index) if j in job_by_id]
            writers[node_id] = [j for j in _edge_ends(node, "inEdges", "origin", index) if j in job_by_id]
        elif node_id in job_by_id:
            outputs = [d for d in _edge_ends(node, "outEdges", "destination", index) if d in dataset_ids]
            inputs = [d for d in _edge_ends(node, "inEdges", "origin", index) if d in dataset_ids]
            job_outputs[node_id] = outputs
            job_datasets[node_id] = inputs + outputs

    graph = LineageGraph(jobs={info.key: info for info in job_by_id.values()})
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

    for job_id in complete:
        seen: dict[JobKey, None] = {}
        for dataset_id in job_outputs.get(job_id, ()):
            for reader in readers.get(dataset_id, ()):
                seen[job_by_id[reader].key] = None
        graph.consumers[job_by_id[job_id].key] = tuple(seen)
    return graph


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
