"""Building the OpenLineage events (pure: no I/O). The emitter sends them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, time, timedelta
from typing import Literal
from urllib.parse import urlparse

from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import (
    error_message_run,
    job_type_job,
    nominal_time_run,
    output_statistics_output_dataset,
    parent_run,
)

from backfill_orchestrator.contracts import RunReport, StepResult, StepStatus
from backfill_orchestrator.lineage_events.facets import BackfillPartitionsOutputDatasetFacet, BackfillRunFacet
from backfill_orchestrator.lineage_events.facts import BackfillFacts, FinalState
from backfill_orchestrator.lineage_events.ids import step_run_id, undo_run_id

PRODUCER = "https://github.com/backfill-orchestrator/backfill-orchestrator/tree/0.1.0"
INTEGRATION = "BACKFILL_ORCHESTRATOR"
MAX_PARTITIONS_LISTED = 1000  # an event stays bounded; the count is always exact


def run_facet(facts: BackfillFacts) -> BackfillRunFacet:
    return BackfillRunFacet(
        backfillId=facts.backfill_id,
        attempt=facts.attempt,
        configUri=facts.config_uri,
        dates=[str(day) for day in facts.dates],
        hours=list(facts.hours) if facts.hours is not None else None,
        feeds=list(facts.feeds) if facts.feeds is not None else None,
        submitter=facts.submitter,
        traceId=facts.trace_id,
        producer=PRODUCER,
    )


def parent_facet(facts: BackfillFacts) -> parent_run.ParentRunFacet:
    """The backfill run as the parent (and root) of a step's run."""
    return parent_run.ParentRunFacet(
        run=parent_run.Run(runId=facts.run_id),
        job=parent_run.Job(namespace=facts.namespace, name=facts.backfill_id),
        root=parent_run.Root(
            run=parent_run.RootRun(runId=facts.run_id),
            job=parent_run.RootJob(namespace=facts.namespace, name=facts.backfill_id),
        ),
        producer=PRODUCER,
    )


def _iso(when: datetime | None) -> str:
    return (when or datetime.now(UTC)).astimezone(UTC).isoformat()


def _job_type(job_type: str) -> job_type_job.JobTypeJobFacet:
    return job_type_job.JobTypeJobFacet(
        processingType="BATCH", integration=INTEGRATION, jobType=job_type, producer=PRODUCER
    )


def _error(message: str) -> error_message_run.ErrorMessageRunFacet:
    return error_message_run.ErrorMessageRunFacet(
        message=message[:2000], programmingLanguage="PYTHON", producer=PRODUCER
    )


def _run_event(
    state: RunState,
    *,
    when: datetime | None,
    run_id: str,
    facets: dict,
    job: Job,
    inputs: list[InputDataset] | None = None,
    outputs: list[OutputDataset] | None = None,
) -> RunEvent:
    return RunEvent(
        eventType=state,
        eventTime=_iso(when),
        run=Run(runId=run_id, facets=facets),
        job=job,
        inputs=inputs or [],
        outputs=outputs or [],
        producer=PRODUCER,
    )


def _child_job(facts: BackfillFacts, name: str, job_type: str) -> Job:
    """The job of a child run of the backfill run: `<backfill id>.<name>`."""
    return Job(
        namespace=facts.namespace, name=f"{facts.backfill_id}.{name}", facets={"jobType": _job_type(job_type)}
    )


def backfill_event(
    facts: BackfillFacts,
    state: Literal["START"] | FinalState,
    *,
    when: datetime | None = None,
    reason: str | None = None,
) -> RunEvent:
    run_facets: dict = {"backfill": run_facet(facts)}
    if reason and state in ("FAIL", "ABORT"):
        run_facets["errorMessage"] = _error(reason)
    job = Job(namespace=facts.namespace, name=facts.backfill_id, facets={"jobType": _job_type("BACKFILL")})
    return _run_event(RunState[state], when=when, run_id=facts.run_id, facets=run_facets, job=job)


def dataset_address(warehouse: str, table: str) -> tuple[str, str]:
    """(namespace, name) of a warehouse table, following OpenLineage's dataset naming:
    `s3://bucket` + key path for S3, `file` + absolute path for a local directory."""
    parsed = urlparse(warehouse)
    if parsed.scheme in ("s3", "s3a", "s3n"):
        return f"s3://{parsed.netloc}", "/".join(p for p in (parsed.path.strip("/"), table) if p)
    path = parsed.path if parsed.scheme == "file" else warehouse
    return "file", f"{path.rstrip('/')}/{table}"


def _outputs(step: StepResult, warehouse: str, *, final: bool) -> list[OutputDataset]:
    if not step.output_table:
        return []
    namespace, name = dataset_address(warehouse, step.output_table)
    facets: dict = {}
    if final and step.succeeded:
        facets["outputStatistics"] = output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
            rowCount=step.rows_out, size=step.bytes_written, producer=PRODUCER
        )
        facets["backfillPartitions"] = BackfillPartitionsOutputDatasetFacet(
            written=step.partitions_written[:MAX_PARTITIONS_LISTED],
            deleted=step.partitions_deleted[:MAX_PARTITIONS_LISTED],
            writtenCount=step.partitions_written_count,
            truncated=max(len(step.partitions_written), len(step.partitions_deleted)) > MAX_PARTITIONS_LISTED,
            producer=PRODUCER,
        )
    return [OutputDataset(namespace=namespace, name=name, outputFacets=facets)]


def _inputs(step: StepResult, warehouse: str) -> list[InputDataset]:
    tables = sorted(set(step.input_tables.values())) if step.input_tables else sorted(step.rows_in_by_input)
    return [InputDataset(*dataset_address(warehouse, table)) for table in tables]


def step_events(facts: BackfillFacts, report: RunReport, *, warehouse: str) -> list[RunEvent]:
    """START and COMPLETE/FAIL for every spark step that ran, as child runs of the backfill run.
    A blocked step never ran: it has no run."""
    events: list[RunEvent] = []
    for step in report.steps:
        if step.status is StepStatus.BLOCKED:
            continue
        run_id = step_run_id(backfill_id=facts.backfill_id, attempt=facts.attempt, step_id=step.id)
        job = _child_job(facts, step.id, "SPARK_STEP")
        end_facets: dict = {}
        if not step.succeeded:
            end_facets["errorMessage"] = _error(step.error or "step failed")
        inputs = _inputs(step, warehouse)
        for kind, when, facets, final in (
            (RunState.START, report.started_at, {}, False),
            (RunState.COMPLETE if step.succeeded else RunState.FAIL, report.finished_at, end_facets, True),
        ):
            events.append(
                _run_event(
                    kind,
                    when=when,
                    run_id=run_id,
                    facets={"parent": parent_facet(facts), **facets},
                    job=job,
                    inputs=inputs,
                    outputs=_outputs(step, warehouse, final=final),
                )
            )
    return events


NOT_RUN_STATES = frozenset({"not run", "skipped", "removed", "upstream_failed"})


def dag_rerun_events(
    facts: BackfillFacts, *, step_id: str, dag_id: str, dates: Mapping[str, str], when: datetime | None = None
) -> list[RunEvent]:
    """One child run of the backfill run per (DAG, date) rerun that ran: job
    `<backfill id>.<step>`, nominal time the rerun's logical day, COMPLETE when its rerun task
    succeeded, else FAIL. A rerun that never ran has no run. (With the Airflow OpenLineage
    provider installed the rerun DAG's own events carry the same parent, from the conf.)"""
    events: list[RunEvent] = []
    job = _child_job(facts, step_id, "DAG_RERUN")
    for day_text, state in sorted(dates.items()):
        if state in NOT_RUN_STATES:
            continue
        day = date.fromisoformat(day_text)
        start = datetime.combine(day, time(0), tzinfo=UTC)
        facets: dict = {
            "parent": parent_facet(facts),
            "nominalTime": nominal_time_run.NominalTimeRunFacet(
                nominalStartTime=start.isoformat(),
                nominalEndTime=(start + timedelta(days=1)).isoformat(),
                producer=PRODUCER,
            ),
        }
        run_id = step_run_id(
            backfill_id=facts.backfill_id, attempt=facts.attempt, step_id=f"{step_id}/{day_text}"
        )
        end = dict(facets)
        if state != "success":
            end["errorMessage"] = _error(f"rerun of DAG {dag_id} for {day_text} ended {state}")
        end_state = RunState.COMPLETE if state == "success" else RunState.FAIL
        events.append(_run_event(RunState.START, when=when, run_id=run_id, facets=facets, job=job))
        events.append(_run_event(end_state, when=when, run_id=run_id, facets=end, job=job))
    return events


def undo_events(
    facts: BackfillFacts, restored: Mapping[str, Sequence[str]], *, when: datetime | None = None
) -> list[RunEvent]:
    """An undo as a child run of the backfill run (job `<backfill id>.undo`): START, then
    COMPLETE whose outputs are the tables it restored (`restored`: table location -> the
    partitions put back), each with its partitions in the `backfillPartitions` facet."""
    outputs = []
    for table_uri, partitions in sorted(restored.items()):
        parent, _, table = table_uri.rstrip("/").rpartition("/")
        namespace, name = dataset_address(parent, table)
        facet = BackfillPartitionsOutputDatasetFacet(
            written=sorted(partitions)[:MAX_PARTITIONS_LISTED],
            deleted=[],
            writtenCount=len(partitions),
            truncated=len(partitions) > MAX_PARTITIONS_LISTED,
            producer=PRODUCER,
        )
        outputs.append(
            OutputDataset(namespace=namespace, name=name, outputFacets={"backfillPartitions": facet})
        )
    run_id = undo_run_id(backfill_id=facts.backfill_id, attempt=facts.attempt)
    facets: dict = {"parent": parent_facet(facts), "backfill": run_facet(facts)}
    job = _child_job(facts, "undo", "UNDO")
    return [
        _run_event(RunState.START, when=when, run_id=run_id, facets=facets, job=job),
        _run_event(RunState.COMPLETE, when=when, run_id=run_id, facets=facets, job=job, outputs=outputs),
    ]
