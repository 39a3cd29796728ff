"""A Marquez double: ingests OpenLineage events and answers `GET /api/v1/lineage` as Marquez does.

Semantics copied from Marquez (0.51, `LineageDao.getLineage` and `LineageService`), because
the planner's correctness depends on them:
- The answer is the neighbourhood in *both* directions: jobs are collected breadth first over
  shared datasets (a job is one hop from every job that reads or writes one of its datasets,
  siblings included) up to `depth` job hops (default 20).
- Every input and output dataset of those jobs is in the answer; edges to jobs outside it are
  dropped, so a dataset at the boundary looks unread.
- Nodes are sorted by id, edges by origin then destination; ids are `job:<ns>:<name>` and
  `dataset:<ns>:<name>`, unescaped.
- An id it is given is read as Marquez reads it (`NodeId.parts`, ported in
  `backfill_orchestrator.lineage.nodeid`): cut at the first colons not followed by `//` or a
  digit, so `job:arn:aws:glue:...:etl` is job `aws:glue:...:etl` in namespace `arn` -> 404.
- Errors as Dropwizard renders them: unknown job 404 `Job '<name>' not found.`, unknown dataset
  `Dataset '<name>' not found.`; an id or depth Jersey cannot convert (not `job:`/`dataset:`/
  `datasetField:`/`run:`, depth not an int) 404 `HTTP 404 Not Found`, as an unknown path; a
  missing nodeId 400; an id Marquez fails to split 500. A dataset without jobs answers itself
  alone (an orphan graph). An id with `#` (a version) skips the existence check, as in
  Marquez: an unknown job then reads as the orphan dataset of that name, or fails with 500.
- Node data carries every field Marquez never leaves null (`DatasetData`/`JobData`/`Run`):
  datasets `updatedAt`, `sourceName` ("default" without a dataSource facet), `fields`, `tags`.
- A job's lineage is the inputs and outputs of its latest run that declared any (events of one
  run accumulate: the sample declares them on START only). A run facet `parent` makes the job
  a child: `parentJobName` is set and the name is prefixed `<parent>.` unless it already is.

`POST /api/v1/lineage` checks an event as Marquez's `LineageEvent` model does (JSON object;
`eventTime`, `producer`, `schemaURL`, `run.runId` (a UUID), `job.namespace`, `job.name`;
`eventType` one of the spec's) and answers 201, 400 for a body that is not JSON, 422 for an
invalid event. With `strict_spec=True` it also validates the event and its facets against
the OpenLineage JSON Schemas (`openlineage_schemas.validate_event`). Accepted events are kept
(`events`, the last MAX_KEPT_EVENTS). `GET /api/v1/namespaces/<ns>/jobs` and
`GET /api/v1/namespaces/<ns>/jobs/<job>/runs?limit=&offset=` answer as Marquez (JobData with
`parentJobName`; runs as `RunDao.findAll`: by startedAt newest first, never-started last,
`limit` default 100, both >= 0, `totalCount` of all the job's runs, `nominalStartTime`/
`nominalEndTime` from the `nominalTime` run facet, `durationMs` from start to end), so a
backfill's child runs can be read back and the preflight's upstream freshness and durations
tested. To seed runs, send events: `run_events(..., nominal=(start, end), outcome="FAIL")`
gives one run of a job for those dates (in tests, `store.ingest_all(...)`; for the demo, a
JSON list of events with `--events FILE`).

Runs on 127.0.0.1 (port 0 picks a free one). From tests:

    with MarquezDouble(seed="food_delivery") as marquez:
        MarquezClient(marquez.url).lineage(...)

For the demo: `python -m backfill_local.marquez_double --port 5000 --seed food_delivery`.
"""

from __future__ import annotations

import argparse
import json
import threading
import uuid
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from backfill_orchestrator.errors import ServiceError, UserError
from backfill_orchestrator.lineage.nodeid import NodeIdParseError, split_node_id

LINEAGE_PATH = "/api/v1/lineage"
NAMESPACES_PATH = "/api/v1/namespaces/"
EVENT_TYPES = ("START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER")
MAX_KEPT_EVENTS = 10_000
DEFAULT_DEPTH = 20
DEFAULT_RUNS_LIMIT = 100  # JobResource.listRuns: @DefaultValue("100") @Min(0) limit, @Min(0) offset
DEFAULT_JOBS_LIMIT = 100  # JobResource.list: @DefaultValue("100") limit, offset
PRODUCER = "https://github.com/backfill-orchestrator/marquez-double"
SCHEMA_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
SEEDS = ("food_delivery",)
_STATES = {
    "START": "RUNNING",
    "RUNNING": "RUNNING",
    "COMPLETE": "COMPLETED",
    "FAIL": "FAILED",
    "ABORT": "ABORTED",
}
_DONE = {"COMPLETED", "FAILED", "ABORTED"}
NODE_KINDS = ("dataset", "datasetField", "job", "run")  # NodeId.ID_PATTERN
DEFAULT_SOURCE_NAME = "default"  # OpenLineageDao.DEFAULT_SOURCE_NAME
_IDS = uuid.UUID("6f1c5e3a-9d3b-4c1e-8a57-0d1b2c3d4e5f")  # uuid5 namespace for stable uuids

Key = tuple[str, str]


class InvalidEventError(UserError, ValueError):
    """An OpenLineage event Marquez would reject (422)."""


class NodeNotFoundError(UserError, LookupError):
    """No such job or dataset (404)."""


class BadNodeIdError(UserError, ValueError):
    """A node id Jersey cannot convert to a NodeId: 404 `HTTP 404 Not Found` (JAX-RS answers a
    query parameter it cannot convert with 404)."""


class UnmodelledNodeKindError(UserError, ValueError):
    """A `datasetField:` or `run:` id: valid for Marquez, not modelled by this double (400)."""


class MarquezFailure(ServiceError, RuntimeError):
    """Where Marquez itself throws (an id it cannot split, a null dataset): 500."""


# -- the lineage model ---------------------------------------------------------------------
@dataclass
class _Run:
    run_id: str
    created_at: datetime
    updated_at: datetime
    state: str = "NEW"
    started_at: datetime | None = None
    ended_at: datetime | None = None
    facets: dict[str, Any] = field(default_factory=dict)
    inputs: dict[Key, None] = field(default_factory=dict)
    outputs: dict[Key, None] = field(default_factory=dict)


@dataclass
class _Job:
    namespace: str
    name: str
    simple_name: str
    parent_job_name: str | None
    created_at: datetime
    updated_at: datetime
    description: str | None = None
    location: str | None = None
    latest_run: _Run | None = None
    inputs: tuple[Key, ...] = ()
    outputs: tuple[Key, ...] = ()


@dataclass
class _Dataset:
    namespace: str
    name: str
    created_at: datetime
    updated_at: datetime
    last_modified_at: datetime | None = None
    description: str | None = None
    source_name: str | None = None
    lifecycle_state: str | None = None
    fields: list[dict[str, Any]] = field(default_factory=list)


def _node_id(kind: str, key: Key) -> str:
    return f"{kind}:{key[0]}:{key[1]}"


def _uuid(*parts: str) -> str:
    """A stable uuid for what Marquez keys by a generated one (jobs, dataset versions)."""
    return str(uuid.uuid5(_IDS, "\x1f".join(parts)))


def _parse_time(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidEventError(f"eventTime: not an ISO-8601 date-time: {text!r}") from None
    if moment.tzinfo is None:
        raise InvalidEventError(f"eventTime: no time zone: {text!r}")
    return moment.astimezone(UTC)


def _instant(moment: datetime | None) -> str | None:
    """Java's `Instant.toString()`, as Jackson writes Marquez's times: UTC, `Z`, the fraction in
    groups of three digits and left out when zero."""
    if moment is None:
        return None
    text = moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    micros = moment.microsecond
    if micros:
        text += f".{micros // 1000:03d}" if micros % 1000 == 0 else f".{micros:06d}"
    return text + "Z"


def _nominal(value: Any) -> str | None:
    """A nominalTime facet's time as Marquez stores and writes it (an Instant), else null."""
    if not isinstance(value, str):
        return None
    try:
        return _instant(_parse_time(value))
    except InvalidEventError:
        return None


def _required_text(event: dict[str, Any], *path: str) -> str:
    value: Any = event
    for part in path:
        value = value.get(part) if isinstance(value, dict) else None
    if not isinstance(value, str) or not value:
        raise InvalidEventError(f"{'.'.join(path)}: required")
    return value


def check_event(event: Any) -> None:
    """What Marquez's `LineageEvent` model refuses (422): the required fields and their forms."""
    if not isinstance(event, dict):
        raise InvalidEventError("an event must be a JSON object")
    problems = []
    for path in (
        ("eventTime",),
        ("producer",),
        ("schemaURL",),
        ("run", "runId"),
        ("job", "namespace"),
        ("job", "name"),
    ):
        try:
            _required_text(event, *path)
        except InvalidEventError as error:
            problems.append(str(error))
    run_id = (event.get("run") or {}).get("runId") if isinstance(event.get("run"), dict) else None
    if isinstance(run_id, str) and run_id:
        try:
            uuid.UUID(run_id)
        except ValueError:
            problems.append(f"run.runId: not a UUID: {run_id!r}")
    event_type = event.get("eventType")
    if event_type is not None and event_type not in EVENT_TYPES:
        problems.append(f"eventType: must be one of {', '.join(EVENT_TYPES)}, got {event_type!r}")
    if problems:
        raise InvalidEventError("; ".join(problems))


class LineageStore:
    """Marquez's lineage model in memory. Thread-safe; every query is linear in its answer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[Key, _Job] = {}
        self._datasets: dict[Key, _Dataset] = {}
        self._runs: dict[str, _Run] = {}
        self._run_job: dict[str, Key] = {}
        self._readers: dict[Key, dict[Key, None]] = {}  # dataset -> jobs reading it now
        self._writers: dict[Key, dict[Key, None]] = {}  # dataset -> jobs writing it now

    # -- ingest ----------------------------------------------------------------------------
    def ingest(self, event: dict[str, Any]) -> None:
        if not isinstance(event, dict):
            raise InvalidEventError("an event must be a JSON object")
        event_time = _parse_time(_required_text(event, "eventTime"))
        run_id = _required_text(event, "run", "runId")
        namespace = _required_text(event, "job", "namespace")
        name = _required_text(event, "job", "name")
        _required_text(event, "producer")
        inputs = self._datasets_of(event, "inputs", event_time)
        outputs = self._datasets_of(event, "outputs", event_time)
        run_facets = (event.get("run") or {}).get("facets") or {}
        job_facets = event["job"].get("facets") or {}
        parent = (run_facets.get("parent") or {}).get("job") if isinstance(run_facets, dict) else None
        parent_name = (
            parent.get("name") if isinstance(parent, dict) and isinstance(parent.get("name"), str) else None
        )
        if parent_name and not name.startswith(parent_name + "."):
            name = f"{parent_name}.{name}"
        with self._lock:
            # A run belongs to one job: later events of it (COMPLETE often carries no parent
            # facet) update that job, never a new one.
            key = self._run_job.get(run_id, (namespace, name))
            job = self._jobs.get(key)
            if job is None:
                simple = name[len(parent_name) + 1 :] if parent_name else name
                job = self._jobs[key] = _Job(namespace, name, simple, parent_name, event_time, event_time)
            job.updated_at = event_time
            if parent_name:
                job.parent_job_name = parent_name
            description = (job_facets.get("documentation") or {}).get("description")
            job.description = description or job.description
            job.location = (job_facets.get("sourceCodeLocation") or {}).get("url") or job.location
            run = self._runs.get(run_id)
            if run is None:
                run = self._runs[run_id] = _Run(run_id, event_time, event_time)
                self._run_job[run_id] = key
            run.updated_at = event_time
            run.state = _STATES.get(str(event.get("eventType", "")).upper(), run.state)
            if run.state == "RUNNING" and run.started_at is None:
                run.started_at = event_time
            if run.state in _DONE:
                run.ended_at = event_time
            if isinstance(run_facets, dict):
                run.facets.update(run_facets)
            run.inputs.update(dict.fromkeys(inputs))
            run.outputs.update(dict.fromkeys(outputs))
            if run.state == "COMPLETED":  # a completed run's outputs were modified by it
                for output in run.outputs:
                    self._datasets[output].last_modified_at = event_time
            job.latest_run = run
            if run.inputs or run.outputs:
                self._set_io(key, job, tuple(run.inputs), tuple(run.outputs))

    def ingest_all(self, events: Iterable[dict[str, Any]]) -> int:
        count = 0
        for event in events:
            self.ingest(event)
            count += 1
        return count

    def _datasets_of(self, event: dict[str, Any], side: str, event_time: datetime) -> list[Key]:
        items = event.get(side) or []
        if not isinstance(items, list):
            raise InvalidEventError(f"{side}: must be a list")
        keys = []
        for index, item in enumerate(items):
            namespace = item.get("namespace") if isinstance(item, dict) else None
            name = item.get("name") if isinstance(item, dict) else None
            if not (isinstance(namespace, str) and namespace and isinstance(name, str) and name):
                raise InvalidEventError(f"{side}[{index}]: namespace and name required")
            key = (namespace, name)
            keys.append(key)
            facets = item.get("facets") or {}
            with self._lock:
                dataset = self._datasets.get(key)
                if dataset is None:
                    dataset = self._datasets[key] = _Dataset(namespace, name, event_time, event_time)
                dataset.updated_at = max(dataset.updated_at, event_time)
                dataset.description = (facets.get("documentation") or {}).get(
                    "description"
                ) or dataset.description
                dataset.source_name = (facets.get("dataSource") or {}).get("name") or dataset.source_name
                dataset.fields = (facets.get("schema") or {}).get("fields") or dataset.fields
                change = (facets.get("lifecycleStateChange") or {}).get("lifecycleStateChange")
                dataset.lifecycle_state = change or dataset.lifecycle_state
        return keys

    def _set_io(self, key: Key, job: _Job, inputs: tuple[Key, ...], outputs: tuple[Key, ...]) -> None:
        for dataset in job.inputs:
            self._readers[dataset].pop(key, None)
        for dataset in job.outputs:
            self._writers[dataset].pop(key, None)
        job.inputs, job.outputs = inputs, outputs
        for dataset in inputs:
            self._readers.setdefault(dataset, {})[key] = None
        for dataset in outputs:
            self._writers.setdefault(dataset, {})[key] = None

    # -- query -----------------------------------------------------------------------------
    @property
    def job_count(self) -> int:
        return len(self._jobs)

    def jobs(self, namespace: str, *, limit: int = DEFAULT_JOBS_LIMIT, offset: int = 0) -> dict[str, Any]:
        """`GET /namespaces/<ns>/jobs?limit=&offset=` (`JobResource.list`): a page of the
        namespace's jobs, by name; `totalCount` counts them all."""
        with self._lock:
            keys = [key for key in sorted(self._jobs) if key[0] == namespace]
            jobs = [self._job_data(self._jobs[key]) for key in keys[offset : offset + limit]]
        return {"jobs": jobs, "totalCount": len(keys)}

    def runs(
        self, namespace: str, name: str, *, limit: int = DEFAULT_RUNS_LIMIT, offset: int = 0
    ) -> dict[str, Any]:
        """`GET /namespaces/<ns>/jobs/<name>/runs?limit=&offset=` (`JobResource.listRuns`,
        `RunDao.findAll`): ordered by startedAt, newest first, never-started runs last; 404 for
        an unknown job; `totalCount` counts every run of the job."""
        key = (namespace, name)
        with self._lock:
            job = self._jobs.get(key)
            if job is None:
                raise NodeNotFoundError(f"Job '{name}' not found.")
            runs = [self._runs[run_id] for run_id, owner in self._run_job.items() if owner == key]
            runs.sort(
                key=lambda run: (run.started_at is not None, run.started_at or run.created_at), reverse=True
            )
            answer = [self._run_data(job, run) for run in runs[offset : offset + limit]]
        return {"runs": answer, "totalCount": len(runs)}

    def lineage(self, node_id: str, depth: int = DEFAULT_DEPTH) -> dict[str, Any]:
        """Marquez's `GET /lineage` (`OpenLineageResource.getLineage`, `LineageService.lineage`)."""
        kind = node_id.partition(":")[0] if ":" in node_id else ""
        if kind not in NODE_KINDS:
            raise BadNodeIdError(
                f"node ID ({node_id}) must start with 'dataset', 'datasetField', 'job' or 'run'"
            )
        if kind not in ("job", "dataset"):
            raise UnmodelledNodeKindError(f"the Marquez double does not model {kind} node ids")
        try:
            _, namespace, name = split_node_id(node_id)
        except NodeIdParseError as error:
            raise MarquezFailure(str(error)) from None
        key = (namespace, name)
        checked = "#" not in node_id  # BaseResource.throwIfNotExists skips ids with a version
        with self._lock:
            if kind == "job":
                if key not in self._jobs:
                    if checked:
                        raise NodeNotFoundError(f"Job '{name}' not found.")
                    return self._orphan(key)
                start = key
            else:
                if key not in self._datasets and checked:
                    raise NodeNotFoundError(f"Dataset '{name}' not found.")
                found = self._latest_job_of(key)
                if found is None:
                    return self._orphan(key)
                start = found
            return self._graph(self._neighbourhood(start, depth))

    def _latest_job_of(self, dataset: Key) -> Key | None:
        """Marquez starts a dataset's lineage at its latest writer, else its latest reader."""
        for index in (self._writers, self._readers):
            jobs = index.get(dataset)
            if jobs:
                return max(jobs, key=lambda job: self._jobs[job].updated_at)
        return None

    def _orphan(self, dataset: Key) -> dict[str, Any]:
        """`LineageService.toLineageWithOrphanDataset`: the dataset alone; Marquez throws on a
        dataset it does not have (a null DatasetData)."""
        if dataset not in self._datasets:
            raise MarquezFailure(f"no dataset {dataset} for an orphan graph")
        node = {
            "id": _node_id("dataset", dataset),
            "type": "DATASET",
            "data": self._dataset_data(self._datasets[dataset]),
            "inEdges": [],
            "outEdges": [],
        }
        return {"graph": [node]}

    def _neighbourhood(self, start: Key, depth: int) -> dict[Key, int]:
        hops = {start: 0}
        seen_datasets: set[Key] = set()
        queue = deque([start])
        while queue:
            key = queue.popleft()
            if hops[key] >= depth:
                continue
            job = self._jobs[key]
            for dataset in (*job.inputs, *job.outputs):
                if dataset in seen_datasets:
                    continue
                seen_datasets.add(dataset)
                for other in (*self._readers.get(dataset, ()), *self._writers.get(dataset, ())):
                    if other not in hops:
                        hops[other] = hops[key] + 1
                        queue.append(other)
        return hops

    def _graph(self, jobs: dict[Key, int]) -> dict[str, Any]:
        nodes: list[dict[str, Any]] = []
        datasets: dict[Key, None] = {}
        for key in jobs:
            job = self._jobs[key]
            job_id = _node_id("job", key)
            datasets.update(dict.fromkeys(job.inputs))
            datasets.update(dict.fromkeys(job.outputs))
            nodes.append(
                {
                    "id": job_id,
                    "type": "JOB",
                    "data": self._job_data(job),
                    "inEdges": sorted(
                        ({"origin": _node_id("dataset", d), "destination": job_id} for d in job.inputs),
                        key=_edge_order,
                    ),
                    "outEdges": sorted(
                        ({"origin": job_id, "destination": _node_id("dataset", d)} for d in job.outputs),
                        key=_edge_order,
                    ),
                }
            )
        for key in datasets:
            dataset_id = _node_id("dataset", key)
            writers = [j for j in self._writers.get(key, ()) if j in jobs]
            readers = [j for j in self._readers.get(key, ()) if j in jobs]
            nodes.append(
                {
                    "id": dataset_id,
                    "type": "DATASET",
                    "data": self._dataset_data(self._datasets[key]),
                    "inEdges": sorted(
                        ({"origin": _node_id("job", j), "destination": dataset_id} for j in writers),
                        key=_edge_order,
                    ),
                    "outEdges": sorted(
                        ({"origin": dataset_id, "destination": _node_id("job", j)} for j in readers),
                        key=_edge_order,
                    ),
                }
            )
        nodes.sort(key=lambda node: node["id"])
        return {"graph": nodes}

    @staticmethod
    def _job_data(job: _Job) -> dict[str, Any]:
        """`marquez.service.models.JobData` as Jackson writes it (`uuid`, `inputUuids`,
        `outputUuids` are @JsonIgnore'd)."""
        run = job.latest_run
        return {
            "id": {"namespace": job.namespace, "name": job.name},
            "type": "BATCH",
            "name": job.name,
            "simpleName": job.simple_name,
            "parentJobName": job.parent_job_name,
            "parentJobUuid": _uuid("job", job.namespace, job.parent_job_name)
            if job.parent_job_name
            else None,
            "currentRunUuid": run.run_id if run is not None else None,
            "createdAt": _instant(job.created_at),
            "updatedAt": _instant(job.updated_at),
            "namespace": job.namespace,
            "inputs": [{"namespace": ns, "name": name} for ns, name in job.inputs],
            "outputs": [{"namespace": ns, "name": name} for ns, name in job.outputs],
            "location": job.location,
            "description": job.description,
            "latestRun": None if run is None else LineageStore._run_data(job, run),
        }

    @staticmethod
    def _run_data(job: _Job, run: _Run) -> dict[str, Any]:
        """`marquez.service.models.Run`: every field is written, the optional ones as null."""
        nominal = run.facets.get("nominalTime") if isinstance(run.facets.get("nominalTime"), dict) else {}
        duration = None
        if run.started_at is not None and run.ended_at is not None:
            duration = int((run.ended_at - run.started_at).total_seconds() * 1000)
        version = _uuid(
            "job-version", job.namespace, job.name, repr(sorted(run.inputs)), repr(sorted(run.outputs))
        )

        def versions(datasets: dict[Key, None]) -> list[dict[str, Any]]:
            return [
                {
                    "datasetVersionId": {
                        "namespace": ns,
                        "name": name,
                        "version": _uuid("dataset-version", run.run_id, ns, name),
                    },
                    "facets": {},
                }
                for ns, name in datasets
            ]

        return {
            "id": run.run_id,
            "createdAt": _instant(run.created_at),
            "updatedAt": _instant(run.updated_at),
            "nominalStartTime": _nominal(nominal.get("nominalStartTime")),
            "nominalEndTime": _nominal(nominal.get("nominalEndTime")),
            "state": run.state,
            "startedAt": _instant(run.started_at),
            "endedAt": _instant(run.ended_at),
            "durationMs": duration,
            "args": {},
            "jobVersion": {"namespace": job.namespace, "name": job.name, "version": version},
            "inputDatasetVersions": versions(run.inputs),
            "outputDatasetVersions": versions(run.outputs),
            "facets": run.facets,
        }

    @staticmethod
    def _dataset_data(dataset: _Dataset) -> dict[str, Any]:
        """`marquez.service.models.DatasetData`: `updatedAt`, `sourceName`, `fields` and `tags`
        are @NonNull, so Marquez never writes them as null."""
        return {
            "id": {"namespace": dataset.namespace, "name": dataset.name},
            "type": "DB_TABLE",
            "name": dataset.name,
            "physicalName": dataset.name,
            "createdAt": _instant(dataset.created_at),
            "updatedAt": _instant(dataset.updated_at),
            "namespace": dataset.namespace,
            "sourceName": dataset.source_name or DEFAULT_SOURCE_NAME,
            "fields": [
                {
                    "name": f.get("name"),
                    "type": f.get("type"),
                    "tags": [],
                    "description": f.get("description"),
                }
                for f in dataset.fields
                if isinstance(f, dict)
            ],
            "tags": [],
            "lastModifiedAt": _instant(dataset.last_modified_at),
            "description": dataset.description,
            "lastLifecycleState": dataset.lifecycle_state,
        }


def _edge_order(edge: dict[str, str]) -> tuple[str, str]:
    return (edge["origin"], edge["destination"])


class InProcessMarquez:
    """A LineageSource answering from a LineageStore without HTTP: Marquez's answers, parsed
    exactly as MarquezClient parses them. For unit tests and benchmarks."""

    def __init__(self, store: LineageStore):
        self.store = store
        self.queries: list[tuple[str, int]] = []

    def lineage(self, job: Any, *, depth: int) -> Any:
        from backfill_orchestrator.lineage import UnknownJobError, lookup_node_id, parse_lineage_response

        node_id = lookup_node_id(job)  # UnaddressableJobError before asking, as MarquezClient
        self.queries.append((node_id, depth))
        try:
            payload = self.store.lineage(node_id, depth)
        except NodeNotFoundError:
            raise UnknownJobError([job]) from None
        return parse_lineage_response(payload, start=job.key, depth=depth)

    def job_runs(self, job: Any, *, limit: int, offset: int) -> Any:
        """`RunHistory.job_runs`, parsed as MarquezClient parses the HTTP answer."""
        from backfill_orchestrator.lineage import UnknownJobError
        from backfill_orchestrator.lineage.runs import parse_runs_response

        try:
            return parse_runs_response(self.store.runs(job.namespace, job.name, limit=limit, offset=offset))
        except NodeNotFoundError:
            raise UnknownJobError([job]) from None

    def job_names(self, namespace: str) -> list[str]:
        """`JobDirectory.job_names`, as MarquezClient reads them."""
        return [job["name"] for job in self.store.jobs(namespace, limit=10_000)["jobs"]]

    def producers(self, job: Any) -> list[Any]:
        """`RunHistory.producers`: the writers of the job's inputs, from its lineage one hop deep."""
        from backfill_orchestrator.lineage import UnknownJobError, lookup_node_id
        from backfill_orchestrator.lineage.runs import upstream_producers

        try:
            return upstream_producers(self.store.lineage(lookup_node_id(job), 1), job)
        except NodeNotFoundError:
            raise UnknownJobError([job]) from None


# -- events for seeding ----------------------------------------------------------------------
def run_events(
    namespace: str,
    name: str,
    *,
    inputs: Sequence[str | tuple[str, str]] = (),
    outputs: Sequence[str | tuple[str, str]] = (),
    parent: str | None = None,
    airflow_dag_id: str | None = None,
    dataset_namespace: str | None = None,
    event_time: datetime | None = None,
    nominal: tuple[datetime, datetime] | None = None,
    outcome: str = "COMPLETE",
    duration: timedelta = timedelta(minutes=5),
) -> list[dict[str, Any]]:
    """The START (with inputs and outputs) and final (`outcome`: COMPLETE, FAIL or ABORT) events
    of one run of a job, as the OpenLineage integrations send them: with `nominal` (start, end)
    the run carries a `nominalTime` facet, so it becomes a run for those dates in
    `GET .../jobs/<job>/runs`. Datasets are `name` (in `dataset_namespace`, default the job's
    namespace) or `(namespace, name)`."""
    if outcome not in ("COMPLETE", "FAIL", "ABORT"):
        raise ValueError(f"outcome must be COMPLETE, FAIL or ABORT, got {outcome!r}")
    when = event_time or datetime(2021, 6, 1, tzinfo=UTC)
    run_id = str(uuid.uuid4())
    facets: dict[str, Any] = {}
    if nominal is not None:
        facets["nominalTime"] = {
            "_producer": PRODUCER,
            "_schemaURL": "https://openlineage.io/spec/facets/1-0-1/NominalTimeRunFacet.json#/$defs/NominalTimeRunFacet",
            "nominalStartTime": nominal[0].isoformat(),
            "nominalEndTime": nominal[1].isoformat(),
        }
    if parent:
        facets["parent"] = {
            "run": {"runId": str(uuid.uuid4())},
            "job": {"namespace": namespace, "name": parent},
        }
    if airflow_dag_id:
        facets["airflow"] = {"dag": {"dag_id": airflow_dag_id}}

    def dataset(item: str | tuple[str, str]) -> dict[str, str]:
        ds_namespace, ds_name = item if isinstance(item, tuple) else (dataset_namespace or namespace, item)
        return {"namespace": ds_namespace, "name": ds_name}

    start = {
        "eventType": "START",
        "eventTime": when.isoformat(),
        "run": {"runId": run_id, "facets": facets},
        "job": {"namespace": namespace, "name": name},
        "inputs": [dataset(item) for item in inputs],
        "outputs": [dataset(item) for item in outputs],
        "producer": PRODUCER,
        "schemaURL": SCHEMA_URL,
    }
    complete = {
        "eventType": outcome,
        "eventTime": (when + duration).isoformat(),
        "run": {"runId": run_id, "facets": facets},
        "job": {"namespace": namespace, "name": name},
        "producer": PRODUCER,
        "schemaURL": SCHEMA_URL,
    }
    return [start, complete]


def food_delivery_events(*, start: datetime | None = None) -> list[dict[str, Any]]:
    """Marquez's own sample (26 events, 13 jobs), time placeholders filled in."""
    text = resources.files("backfill_local").joinpath("data/food_delivery_events.json").read_text()
    when = start or datetime(2021, 6, 4, 2, 0, tzinfo=UTC)
    text = text.replace("{{RUN_START_TIME}}", when.isoformat())
    for minutes in range(1, 61):
        text = text.replace(
            f"{{{{RUN_END_TIME_AFTER_{minutes}_MINUTES}}}}", (when + timedelta(minutes=minutes)).isoformat()
        )
    return json.loads(text)


def seed_events(seed: str) -> list[dict[str, Any]]:
    if seed == "food_delivery":
        return food_delivery_events()
    raise ValueError(f"unknown seed {seed!r}; known: {', '.join(SEEDS)}")


# -- HTTP ------------------------------------------------------------------------------------
@dataclass
class _Fault:
    status: int
    times: int
    retry_after: str | None


class MarquezDouble:
    """The HTTP server. Context manager; `url` is its base URL; `requests` logs what it served.

    Knobs for tests: `api_key` (then requests need `Authorization: Bearer <key>`, else 401),
    `fail_next(status, times=, retry_after=, on=)` to answer the next lineage (`on="lineage"`)
    or job-runs (`on="runs"`) requests with an error."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        store: LineageStore | None = None,
        seed: str | None = None,
        events: Iterable[dict[str, Any]] = (),
        api_key: str | None = None,
        strict_spec: bool = False,
    ):
        self.store = store or LineageStore()
        self.strict_spec = strict_spec
        self.events: deque[dict[str, Any]] = deque(maxlen=MAX_KEPT_EVENTS)  # accepted POSTs
        if seed:
            self.store.ingest_all(seed_events(seed))
        self.store.ingest_all(events)
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []
        self._faults: dict[str, deque[_Fault]] = {"lineage": deque(), "runs": deque()}
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((host, port), _handler_for(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def fail_next(
        self, status: int, *, times: int = 1, retry_after: str | None = None, on: str = "lineage"
    ) -> None:
        with self._lock:
            self._faults[on].append(_Fault(status, times, retry_after))

    def lineage_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"] == LINEAGE_PATH and r["method"] == "GET"]

    def runs_requests(self) -> list[dict[str, Any]]:
        return [
            r for r in self.requests if r["path"].startswith(NAMESPACES_PATH) and r["path"].endswith("/runs")
        ]

    def _take_fault(self, on: str = "lineage") -> _Fault | None:
        with self._lock:
            faults = self._faults[on]
            if not faults:
                return None
            fault = faults[0]
            fault.times -= 1
            if fault.times <= 0:
                faults.popleft()
            return fault

    def start(self) -> MarquezDouble:
        self._thread = threading.Thread(target=self._server.serve_forever, name="marquez-double", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> MarquezDouble:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _handler_for(double: MarquezDouble) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Keep-alive answers go out as two writes (headers, body); with Nagle on, the body waits
        # for the client's delayed ACK of the headers (40 ms on Linux) from a connection's
        # second request on. A real server sends them together.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet in tests
            return None

        def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
            self._send(status, {"code": status, "message": message}, headers)

        def _authorized(self) -> bool:
            if double.api_key and self.headers.get("Authorization") != f"Bearer {double.api_key}":
                self._error(HTTPStatus.UNAUTHORIZED, "HTTP 401 Unauthorized")
                return False
            return True

        def _log(self) -> tuple[str, dict[str, list[str]]]:
            parts = urlsplit(self.path)
            query = parse_qs(parts.query)
            with double._lock:
                double.requests.append(
                    {
                        "method": self.command,
                        "path": parts.path,
                        "params": {k: v[0] for k, v in query.items()},
                        "authorization": self.headers.get("Authorization"),
                    }
                )
            return parts.path, query

        def _fault(self, on: str) -> bool:
            fault = double._take_fault(on)
            if fault is None:
                return False
            headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else None
            self._error(fault.status, f"injected fault {fault.status}", headers)
            return True

        def _namespaces(self, path: str, query: dict[str, list[str]]) -> None:
            """/api/v1/namespaces/<ns>/jobs[/<job>/runs] (names URL-encoded, as Marquez's clients send)."""
            from urllib.parse import unquote

            parts = path[len(NAMESPACES_PATH) :].split("/")
            try:
                if len(parts) == 2 and parts[1] == "jobs":
                    paging = self._paging(query, DEFAULT_JOBS_LIMIT)
                    if paging is not None:
                        self._send(HTTPStatus.OK, double.store.jobs(unquote(parts[0]), **paging))
                elif len(parts) == 4 and parts[1] == "jobs" and parts[3] == "runs":
                    if self._fault("runs"):
                        return
                    paging = self._paging(query, DEFAULT_RUNS_LIMIT)
                    if paging is not None:
                        self._send(
                            HTTPStatus.OK, double.store.runs(unquote(parts[0]), unquote(parts[2]), **paging)
                        )
                else:
                    self._error(HTTPStatus.NOT_FOUND, "HTTP 404 Not Found")
            except NodeNotFoundError as error:
                self._error(HTTPStatus.NOT_FOUND, str(error))

        def _paging(self, query: dict[str, list[str]], default_limit: int) -> dict[str, int] | None:
            """`limit` and `offset` as Marquez reads them; None once an error was answered."""
            paging = {}
            for name, default in (("limit", default_limit), ("offset", 0)):
                try:
                    paging[name] = int(query.get(name, [str(default)])[0])
                except ValueError:  # an int query param Jersey cannot convert: 404
                    self._error(HTTPStatus.NOT_FOUND, "HTTP 404 Not Found")
                    return None
                if paging[name] < 0:  # @Min(0): Dropwizard's validation error shape
                    self._send(
                        HTTPStatus.BAD_REQUEST,
                        {"errors": [f"query param {name} must be greater than or equal to 0"]},
                    )
                    return None
            return paging

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            path, query = self._log()
            if path.startswith(NAMESPACES_PATH):
                if self._authorized():
                    self._namespaces(path, query)
                return
            if path != LINEAGE_PATH:
                self._error(HTTPStatus.NOT_FOUND, "HTTP 404 Not Found")
                return
            if not self._authorized():
                return
            if self._fault("lineage"):
                return
            if "nodeId" not in query:  # @NotNull: Dropwizard's validation error shape
                self._send(HTTPStatus.BAD_REQUEST, {"errors": ["query param nodeId must not be null"]})
                return
            node_id = query["nodeId"][0]
            try:
                depth = int(query.get("depth", [str(DEFAULT_DEPTH)])[0])
            except ValueError:  # an int query param Jersey cannot convert: 404
                self._error(HTTPStatus.NOT_FOUND, "HTTP 404 Not Found")
                return
            try:
                self._send(HTTPStatus.OK, double.store.lineage(node_id, depth))
            except BadNodeIdError:
                self._error(HTTPStatus.NOT_FOUND, "HTTP 404 Not Found")
            except UnmodelledNodeKindError as error:
                self._error(HTTPStatus.BAD_REQUEST, str(error))
            except NodeNotFoundError as error:
                self._error(HTTPStatus.NOT_FOUND, str(error))
            except MarquezFailure:  # Dropwizard's LoggingExceptionMapper
                self._error(
                    HTTPStatus.INTERNAL_SERVER_ERROR,
                    f"There was an error processing your request. It has been logged (ID {uuid.uuid4().int >> 64:016x}).",
                )

        def do_POST(self) -> None:  # noqa: N802
            path, _ = self._log()
            if path != LINEAGE_PATH:
                self._error(HTTPStatus.NOT_FOUND, "HTTP 404 Not Found")
                return
            if not self._authorized():
                return
            length = int(self.headers.get("Content-Length") or 0)
            try:
                event = json.loads(self.rfile.read(length) or b"null")
            except ValueError as error:  # Jackson cannot read the body: Dropwizard answers 400
                self._error(HTTPStatus.BAD_REQUEST, f"Unable to process JSON: {error}")
                return
            try:
                check_event(event)
                if double.strict_spec:
                    from backfill_local.openlineage_schemas import validate_event

                    problems = validate_event(event)
                    if problems:
                        raise InvalidEventError("; ".join(problems[:20]))
                double.store.ingest(event)
            except InvalidEventError as error:
                self._error(HTTPStatus.UNPROCESSABLE_ENTITY, str(error))
                return
            with double._lock:
                double.events.append(event)
            self.send_response(HTTPStatus.CREATED)
            self.send_header("Content-Length", "0")
            self.end_headers()

    return Handler


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="marquez_double", description="A Marquez lineage API double on 127.0.0.1"
    )
    parser.add_argument("--port", type=int, default=5000)
    parser.add_argument("--seed", choices=SEEDS, help="load a sample lineage graph")
    parser.add_argument("--events", metavar="FILE", help="a JSON list of OpenLineage events to load")
    parser.add_argument("--api-key", help="require this bearer key")
    args = parser.parse_args(argv)
    events: list[dict[str, Any]] = []
    if args.events:
        with open(args.events, encoding="utf-8") as handle:
            events = json.load(handle)
    double = MarquezDouble(port=args.port, seed=args.seed, events=events, api_key=args.api_key)
    print(f"marquez double: {double.store.job_count} jobs, serving {double.url}{LINEAGE_PATH}", flush=True)
    try:
        double._server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        double._server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
