"""The job catalog: what lineage cannot tell the planner, per job (YAML, a file or an S3 object).

    version: 1
    jobs:
      - namespace: food_delivery
        name: etl_orders_7_days
        kind: spark            # spark | airflow_dag (default)
        transform: etl_orders_7_days   # spark only; default: the job name
        dag_id: etl_orders_7_days      # default: parentJobName, then the job name
        window_days: 7         # a changed input day affects this many days (default 1)
        grain: day             # day | hour: the partitions it writes (default day)
        feeds: [web, app]      # the feeds it has partitions for (preflight checks `feeds`)
        inputs:                # spark only: warehouse tables it reads (preflight lists them)
          - {location: processed/orders, lookback_days: 6}
        output: {location: processed/orders_7_days}   # spark only: the table it rewrites (staging estimate)

A job without an entry maps to its DAG by `parentJobName`, then by the name of the DAG in the
Airflow run facet, then by its own name, as kind `airflow_dag` with window 1. A task job without
an entry of its own uses its DAG's entry (the entry named like its `parentJobName`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator

from backfill_orchestrator import documents
from backfill_orchestrator.config.model import FEED_PATTERN, NonBlank
from backfill_orchestrator.contracts.plan import StepKind
from backfill_orchestrator.errors import BackfillError, ConfigIssue, LocatedIssuesError, ServiceError
from backfill_orchestrator.lineage.graph import JobInfo, JobKey
from backfill_orchestrator.parsing import DocumentKind, issue_from_pydantic

MAX_CATALOG_BYTES = 8 * 1024 * 1024
MAX_WINDOW_DAYS = 366
# Airflow's own rule for DAG ids (KEY_REGEX, at most 250 characters).
DAG_ID_PATTERN = r"^[A-Za-z0-9_.-]{1,250}$"
TRANSFORM_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.-]{0,127}$"
CATALOG_ENV = "BACKFILL_JOB_CATALOG"


class CatalogError(BackfillError):
    """Base of catalog failures (a subject, not a category: each failure below has its own)."""


class InvalidCatalogError(LocatedIssuesError, CatalogError, ServiceError, ValueError):
    """A catalog that is not valid; carries every located issue (`jobs[3].window_days: ...`).
    The catalog is the deployment's, so this is a ServiceError (it pages)."""

    document = "job catalog"


class CatalogUnavailableError(CatalogError, ServiceError):
    """The catalog could not be read (no such file or object, no permission)."""


MAX_LOOKBACK_DAYS = 366
LOCATION_PATTERN = r"^[A-Za-z0-9_.=-]+(/[A-Za-z0-9_.=-]+)*$"
Grain = Literal["day", "hour"]


class CatalogInput(BaseModel):
    """A warehouse table a Spark step reads, relative to the warehouse root, partitioned
    Hive-style (`day=2021-06-04/hour=3/feed=web/...`); it reads `lookback_days` days before
    each date too."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    location: Annotated[str, Field(pattern=LOCATION_PATTERN, max_length=512)]
    lookback_days: Annotated[StrictInt, Field(ge=0, le=MAX_LOOKBACK_DAYS)] = 0


class CatalogOutput(BaseModel):
    """The warehouse table a Spark step rewrites: preflight lists the partitions it replaces,
    which the step stages and whose old versions the publish keeps as backups."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    location: Annotated[str, Field(pattern=LOCATION_PATTERN, max_length=512)]


class CatalogEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    namespace: NonBlank
    name: NonBlank
    kind: StepKind = "airflow_dag"
    dag_id: Annotated[str, Field(pattern=DAG_ID_PATTERN)] | None = None
    transform: Annotated[str, Field(pattern=TRANSFORM_PATTERN)] | None = None
    window_days: Annotated[StrictInt, Field(ge=1, le=MAX_WINDOW_DAYS)] = 1
    grain: Grain = "day"
    feeds: Annotated[list[Annotated[str, Field(pattern=FEED_PATTERN)]], Field(min_length=1)] | None = None
    inputs: list[CatalogInput] | None = None
    output: CatalogOutput | None = None

    @model_validator(mode="after")
    def _transform_only_for_spark(self) -> CatalogEntry:
        if self.transform is not None and self.kind != "spark":
            raise ValueError("transform is only for kind spark")
        if self.inputs is not None and self.kind != "spark":
            raise ValueError("inputs are only for kind spark")
        if self.output is not None and self.kind != "spark":
            raise ValueError("output is only for kind spark")
        if self.feeds is not None and len(set(self.feeds)) != len(self.feeds):
            raise ValueError("feeds: each feed once")
        return self

    @property
    def key(self) -> JobKey:
        return (self.namespace, self.name)


class _CatalogDocument(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[1]
    jobs: list[CatalogEntry] = Field(default_factory=list)


class StepTarget(NamedTuple):
    """What a lineage job becomes in a plan: the step it belongs to and how that step runs."""

    step_id: str
    kind: StepKind
    dag_id: str
    transform: str | None
    window_days: int


_new_tuple = tuple.__new__


class JobCatalog:
    def __init__(self, entries: Iterable[CatalogEntry] = (), *, source: str | None = None):
        self.source = source
        self._entries: dict[JobKey, CatalogEntry] = {}
        for entry in entries:
            self._entries.setdefault(entry.key, entry)

    @classmethod
    def empty(cls) -> JobCatalog:
        return cls()

    @classmethod
    def parse(cls, data: bytes | str | dict[str, Any], *, source: str | None = None) -> JobCatalog:
        """YAML/JSON text or a parsed mapping to a catalog; raises InvalidCatalogError."""
        document = CATALOG_DOCUMENT.parse(data, source=source)
        return cls(document.jobs, source=source)

    @classmethod
    def load(cls, location: str, *, s3_client: Any = None) -> JobCatalog:
        """A file path or an `s3://bucket/key` URI. Raises CatalogUnavailableError or InvalidCatalogError."""
        try:
            data = documents.read_bytes(
                location, max_bytes=MAX_CATALOG_BYTES, over_limit="keep", s3_client=s3_client
            )
        except documents.DocumentError as error:
            raise CatalogUnavailableError(f"catalog {error}") from None
        return cls.parse(data, source=location)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def entries(self) -> list[CatalogEntry]:
        return list(self._entries.values())

    def entry_for(self, job: JobInfo) -> CatalogEntry | None:
        """The job's own entry, else its DAG's (by parentJobName)."""
        entry = self._entries.get(job[:2])  # job.key, minus a property call: this runs for every job
        if entry is None and job.parent_job_name:
            entry = self._entries.get((job.namespace, job.parent_job_name))
        return entry

    def entry_for_step(
        self, *, namespace: str, name: str, kind: StepKind, step_id: str
    ) -> CatalogEntry | None:
        """The entry a plan step came from: the step's job's own, else the one naming its
        transform (spark) or DAG (airflow_dag) in the same namespace."""
        entry = self._entries.get((namespace, name))
        if entry is not None:
            return entry
        for candidate in self._entries.values():
            if candidate.namespace != namespace or candidate.kind != kind:
                continue
            named = (
                (candidate.transform or candidate.name)
                if kind == "spark"
                else (candidate.dag_id or candidate.name)
            )
            if named == step_id:
                return candidate
        return None

    def target_for(self, job: JobInfo) -> StepTarget:
        # Runs for every planned job (50,000 in benchmarks/planner.py): entry_for inlined, and
        # the tuple made without StepTarget's Python-level __new__.
        entry = self._entries.get(job[:2])
        if entry is None and job.parent_job_name:
            entry = self._entries.get((job.namespace, job.parent_job_name))
        default_dag = job.parent_job_name or job.airflow_dag_id or job.name
        if entry is None:
            return _new_tuple(StepTarget, (default_dag, "airflow_dag", default_dag, None, 1))
        if entry.dag_id:
            dag_id = entry.dag_id
        elif entry.key == job.key:
            dag_id = default_dag
        else:
            dag_id = entry.name  # the DAG's own entry: its name is the dag_id
        if entry.kind == "spark":
            transform = entry.transform or entry.name
            return StepTarget(transform, "spark", dag_id, transform, entry.window_days)
        return StepTarget(dag_id, "airflow_dag", dag_id, None, entry.window_days)


def _issue(error: Any) -> ConfigIssue:
    def unknown_key(loc: Any) -> str:
        known = ", ".join(CatalogEntry.model_fields) if len(loc) > 2 else "version, jobs"
        return f"unknown key; known keys: {known}"

    return issue_from_pydantic(error, unknown_key=unknown_key)


def _cross_entry_issues(entries: list[CatalogEntry]) -> list[ConfigIssue]:
    """Each job once; a step id (spark transform or airflow_dag dag_id) names one kind of step."""
    issues: list[ConfigIssue] = []
    first_index: dict[JobKey, int] = {}
    step_kinds: dict[str, tuple[StepKind, int]] = {}
    for index, entry in enumerate(entries):
        if entry.key in first_index:
            issues.append(
                ConfigIssue(
                    f"jobs[{index}]",
                    f"duplicate of jobs[{first_index[entry.key]}] ({entry.namespace}/{entry.name})",
                )
            )
            continue
        first_index[entry.key] = index
        if entry.kind == "spark":
            step_id, field = entry.transform or entry.name, "transform" if entry.transform else "name"
        else:
            step_id, field = entry.dag_id or entry.name, "dag_id" if entry.dag_id else "name"
        other = step_kinds.setdefault(step_id, (entry.kind, index))
        if other[0] != entry.kind:
            issues.append(
                ConfigIssue(
                    f"jobs[{index}].{field}",
                    f"{step_id!r} is the step id of jobs[{other[1]}] (kind {other[0]}) too; "
                    "a spark transform and an airflow_dag DAG must not share a name",
                )
            )
    return issues


CATALOG_DOCUMENT = DocumentKind(
    _CatalogDocument,
    error=InvalidCatalogError,
    max_bytes=MAX_CATALOG_BYTES,
    issue=_issue,
    model_checks=lambda parsed: _cross_entry_issues(parsed.jobs),
)
