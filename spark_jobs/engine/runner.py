"""Run a plan's spark steps in one SparkSession: wave after wave, the steps of a wave side by
side on threads (Spark schedules concurrent jobs from several threads), a failed step
skipping only the steps that depend on it."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from pyspark import StorageLevel

from backfill_orchestrator.contracts import RunReport, StepResult, StepStatus
from backfill_orchestrator.contracts.plan import Plan, PlanStep
from backfill_orchestrator.contracts.publish import (
    ChecksVerdict,
    ManifestState,
    PartitionAction,
    PublishManifest,
)
from backfill_orchestrator.errors import UserError
from backfill_orchestrator.publish import PublishError, UnknownStagedAttemptError
from spark_jobs.engine.catalogs import Catalogs
from spark_jobs.engine.phases import PhaseClock
from spark_jobs.engine.publishing import AUTO_PUBLISHER, PublishSettings, StagedStep, stage_step
from spark_jobs.engine.registry import Registry, Transform
from spark_jobs.engine.scope import Scope
from spark_jobs.engine.table_io import (
    TASKS_END_TIMEOUT_SECONDS,
    read_table,
    replace_partitions,
    wait_for_the_step_tasks,
)
from spark_jobs.engine.tables import Table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

MAX_ERROR_CHARS = 2000


class PlanNotRunnableError(UserError, ValueError):
    """The plan is valid but this job cannot run it (a transform nobody registered)."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


class TransformSchemaError(UserError, ValueError):
    """A transform's result does not have its output table's columns and types."""


def check_plan(plan: Plan, registry: Registry) -> list[str]:
    """Problems that would stop the plan before anything runs; empty when it can run."""
    return [
        f"step {step.id}: unknown transform {step.transform!r} (registered: {', '.join(registry.names)})"
        for step in plan.steps
        if step.kind == "spark" and step.transform not in registry
    ]


def conform(frame: DataFrame, table: Table) -> DataFrame:
    """The frame's columns in the table's order, after checking names and types match."""
    actual = {field.name: field.dataType for field in frame.schema}
    problems = []
    for expected in table.schema:
        if expected.name not in actual:
            problems.append(f"missing column {expected.name}")
        elif actual[expected.name] != expected.dataType:
            problems.append(
                f"column {expected.name} is {actual[expected.name].simpleString()}, "
                f"expected {expected.dataType.simpleString()}"
            )
    extra = sorted(set(actual) - {field.name for field in table.schema})
    if extra:
        problems.append(f"unexpected columns {', '.join(extra)}")
    if problems:
        raise TransformSchemaError(f"result does not fit table {table.name}: {'; '.join(problems)}")
    return frame.select(*table.schema.names)


def input_frames(
    *,
    spark: SparkSession,
    warehouse: str,
    transform: Transform,
    scope: Scope,
    catalogs: Catalogs | None = None,
) -> Mapping[str, DataFrame]:
    """Each input read for just what the step's output partitions need (pruned at the scan).

    An axis the output is not partitioned by is read whole (a daily table needs all hours);
    a partition column of the same name in an input and the output means the same thing."""
    output_scope = scope.restricted_to(transform.output.partition_columns)
    return {
        name: read_table(
            spark=spark,
            warehouse=warehouse,
            table=spec.table,
            scope=output_scope.looking_back(spec.lookback_days),
            catalogs=catalogs,
        )
        for name, spec in transform.inputs.items()
    }


def describe_error(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    # Py4J puts "An error occurred while calling o123.save." first; the cause follows.
    useful = [line for line in lines if not line.startswith("An error occurred while calling")]
    text = " | ".join((useful or lines)[:3]) or "no message"
    text = f"{type(error).__name__}: {text}"
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 3] + "..."


def _failed(step: PlanStep, wave: int, started: float, error: str, **extra: Any) -> StepResult:
    return StepResult(
        id=step.id,
        transform=step.transform or "",
        wave=wave,
        status=StepStatus.FAILED,
        seconds=round(time.monotonic() - started, 3),
        error=error,
        **extra,
    )


def _blocked(step: PlanStep, wave: int, blocked_by: list[str], *, error: str | None = None) -> StepResult:
    return StepResult(
        id=step.id,
        transform=step.transform or "",
        wave=wave,
        status=StepStatus.BLOCKED,
        seconds=0.0,
        blocked_by=blocked_by,
        error=error,
    )


def run_step(
    *,
    spark: SparkSession,
    step: PlanStep,
    wave: int,
    warehouse: str,
    registry: Registry,
    publishing: PublishSettings | None = None,
) -> StepResult:
    """One step, start to finish; every failure becomes a failed result, never an exception,
    so that siblings on other threads carry on. With `publishing`, the output is staged,
    checked and published (or held) instead of written over the live partitions."""
    started, clock = time.monotonic(), PhaseClock()
    spark.sparkContext.setJobGroup(f"step:{step.id}", f"backfill step {step.id} ({step.transform})")
    frames: Mapping[str, DataFrame] = {}
    catalogs = publishing.catalogs if publishing else None
    try:
        transform = registry[step.transform or ""]
        scope = Scope.of_step(step)
        if publishing is not None:
            done = _published_before(publishing, step)
            if done is not None:
                return _result_of_published(step, wave, started, transform, done)
        # Cached: counting the rows in and computing the result then read the files once.
        with clock.phase("read"):
            frames = {
                name: frame.persist(StorageLevel.MEMORY_AND_DISK)
                for name, frame in input_frames(
                    spark=spark, warehouse=warehouse, transform=transform, scope=scope, catalogs=catalogs
                ).items()
            }
            rows_in = {name: frame.count() for name, frame in frames.items()}
        output = conform(transform.apply(frames), transform.output)
        if publishing is None:
            written = replace_partitions(
                spark=spark,
                frame=output,
                warehouse=warehouse,
                table=transform.output,
                scope=scope,
                clock=clock,
            )
            rows_by_partition, deleted, size = (
                written.rows_by_partition,
                written.deleted,
                written.bytes_written,
            )
            status, extra = StepStatus.SUCCEEDED, {}
        else:
            staged = stage_step(
                spark=spark,
                settings=publishing,
                step_id=step.id,
                transform=transform,
                output=output,
                warehouse=warehouse,
                scope=scope,
                clock=clock,
            )
            with clock.phase("commit"):
                status, extra = _publish_or_hold(publishing, staged)
            rows_by_partition, deleted, size = staged.rows_by_partition, staged.deleted, staged.bytes_staged
            if status is StepStatus.FAILED:
                return _failed(step, wave, started, **extra)  # type: ignore[arg-type]
    except Exception as error:  # a step's failure is data for the report, not a crash of the job
        extra = {}
        if publishing is not None:
            # A cancelled write's tasks end when they notice; once they did, nothing they write
            # comes back after the cleanup.
            wait_for_the_step_tasks(spark, timeout_seconds=TASKS_END_TIMEOUT_SECONDS)
            extra = _clean_up_after_failure(publishing, step)
        return _failed(step, wave, started, describe_error(error), **extra)
    finally:
        for frame in frames.values():
            frame.unpersist()
        spark.sparkContext.setJobGroup("", "")
    return StepResult(
        id=step.id,
        transform=transform.name,
        wave=wave,
        status=status,
        seconds=round(time.monotonic() - started, 3),
        phase_seconds=clock.seconds(),
        rows_in=sum(rows_in.values()),
        rows_in_by_input=rows_in,
        rows_out=sum(rows_by_partition.values()),
        partitions_written=list(rows_by_partition),
        partitions_deleted=deleted,
        bytes_written=size,
        output_table=transform.output.name,
        input_tables={name: spec.table.name for name, spec in transform.inputs.items()},
        **extra,
    )


def _publish_or_hold(publishing: PublishSettings, staged: StagedStep) -> tuple[StepStatus, dict[str, Any]]:
    """The policy's verdict carried out: publish now, hold for a person, or fail and discard."""
    manifest, checks = staged.manifest, staged.checks
    references = {"checks_uri": manifest.checks_uri, "manifest_uri": _manifest_uri(publishing, manifest)}
    if checks.verdict is ChecksVerdict.FAILED:
        publishing.publisher.discard(manifest)
        return StepStatus.FAILED, {
            "error": "checks failed, nothing published: " + "; ".join(checks.reasons[:5]),
            **references,
        }
    if checks.verdict is ChecksVerdict.HOLD:
        return StepStatus.AWAITING_PUBLISH, {"hold_reasons": checks.reasons[:20], **references}
    published = publishing.publisher.publish(manifest, by=AUTO_PUBLISHER, stop=publishing.stop)
    if published.state is not ManifestState.PUBLISHED:
        return StepStatus.FAILED, {
            "error": "publish interrupted (the backfill was cancelled): every partition is old or new; "
            "the next attempt finishes it",
            **references,
        }
    return StepStatus.SUCCEEDED, references


def _manifest_uri(publishing: PublishSettings, manifest: PublishManifest) -> str:
    return publishing.publisher.layout.manifest_uri(manifest.backfill_id, manifest.attempt, manifest.step_id)


def _clean_up_after_failure(publishing: PublishSettings, step: PlanStep) -> dict[str, Any]:
    """After a failure: what was staged goes (a publish under way is rolled back first, so live
    is as before); if even that fails, the manifest stays for the next attempt's recovery."""
    publisher = publishing.publisher
    uri = publisher.layout.manifest_uri(publishing.backfill_id, publishing.attempt, step.id)
    try:
        manifest = publisher.load_manifest(publishing.backfill_id, publishing.attempt, step.id)
    except UnknownStagedAttemptError:
        return {}  # failed before staging began
    except Exception as error:  # noqa: BLE001 - an unreadable manifest: reported, left for a person
        _warn(step, f"its manifest cannot be read ({describe_error(error)})")
        return {"manifest_uri": uri}
    if manifest.state in (ManifestState.STAGING, ManifestState.STAGED, ManifestState.PUBLISHING):
        try:
            publisher.discard(manifest)
        except Exception as error:  # noqa: BLE001 - reported; the next attempt's recovery retries it
            _warn(step, f"staged data not cleaned up ({describe_error(error)}); the next attempt does it")
    return {"manifest_uri": uri}


def _warn(step: PlanStep, message: str) -> None:
    print(f"backfill_job: {step.id}: {message}", file=sys.stderr, flush=True)


def _published_before(publishing: PublishSettings, step: PlanStep) -> PublishManifest | None:
    """This attempt already published the step (the job ran again after a crash): not again."""
    try:
        manifest = publishing.publisher.load_manifest(publishing.backfill_id, publishing.attempt, step.id)
    except UnknownStagedAttemptError:
        return None
    return manifest if manifest.state is ManifestState.PUBLISHED else None


def _result_of_published(
    step: PlanStep, wave: int, started: float, transform: Transform, manifest: PublishManifest
) -> StepResult:
    written = {
        entry.partition: entry.rows
        for entry in manifest.partitions
        if entry.action is not PartitionAction.DELETE
    }
    return StepResult(
        id=step.id,
        transform=transform.name,
        wave=wave,
        status=StepStatus.SUCCEEDED,
        seconds=round(time.monotonic() - started, 3),
        rows_out=sum(written.values()),
        partitions_written=list(written),
        partitions_deleted=[e.partition for e in manifest.partitions if e.action is PartitionAction.DELETE],
        output_table=transform.output.name,
        input_tables={name: spec.table.name for name, spec in transform.inputs.items()},
        checks_uri=manifest.checks_uri,
        manifest_uri=None,
    )


def prepare_publishing(publishing: PublishSettings, plan: Plan) -> None:
    """Before the first step: finish what a crash or cancel of an earlier run left under way
    (a publish is finished, a staging write discarded), and discard what earlier attempts
    staged and held for the steps this run stages again."""
    publisher = publishing.publisher
    try:
        publisher.recover(publishing.backfill_id, finish=True)
        manifests = publisher.manifests(publishing.backfill_id)
    except UnknownStagedAttemptError:
        return
    except PublishError as error:  # the steps restage over it; a person or the lifecycle decides
        print(f"backfill_job: earlier publishes not recovered: {error}", file=sys.stderr, flush=True)
        return
    rerun = {step.id for step in plan.steps if step.kind == "spark"}
    for manifest in manifests:
        if (
            manifest.state is ManifestState.STAGED
            and manifest.step_id in rerun
            and manifest.attempt != publishing.attempt
        ):
            publisher.discard(manifest)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def run_plan(
    *,
    spark: SparkSession,
    plan: Plan,
    warehouse: str,
    registry: Registry,
    max_parallel: int | None = None,
    plan_uri: str = "",
    stop: threading.Event | None = None,
    publishing: PublishSettings | None = None,
) -> RunReport:
    """Run every spark step of `plan`; raises PlanNotRunnableError before touching any data.

    `stop` (set on SIGTERM: the backfill was cancelled) lets no new step start; steps already
    writing are stopped by cancelling their Spark jobs, which aborts their uncommitted output.
    `publishing`: stage, check and publish each step (safe publish); without it each step
    writes its partitions directly (the clean run, benchmarks' baseline)."""
    problems = check_plan(plan, registry)
    if problems:
        raise PlanNotRunnableError(problems)
    if publishing is not None:
        prepare_publishing(publishing, plan)
    started_at, started = _now(), time.monotonic()
    run = partial(run_step, spark=spark, warehouse=warehouse, registry=registry, publishing=publishing)
    results: dict[str, StepResult] = {}
    for wave in plan.waves:
        ready: list[PlanStep] = []
        if stop is not None and stop.is_set():
            for step in (s for s in wave.steps if s.kind == "spark"):
                results[step.id] = _blocked(
                    step, wave.index, ["cancelled"], error="not run: the backfill was cancelled"
                )
            continue
        for step in (s for s in wave.steps if s.kind == "spark"):
            # Upstream steps of other kinds are not in `results`: the DAG ran them before us.
            blocked_by = [
                parent for parent in step.upstream if parent in results and not results[parent].succeeded
            ]
            if blocked_by:
                results[step.id] = _blocked(step, wave.index, blocked_by)
            else:
                ready.append(step)
        if not ready:
            continue
        workers = min(len(ready), max_parallel or len(ready))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"wave{wave.index}") as pool:
            futures = {step.id: pool.submit(run, step=step, wave=wave.index) for step in ready}
            for step_id, future in futures.items():
                results[step_id] = future.result()
    ordered = [results[step.id] for step in plan.steps if step.id in results]
    return RunReport(
        backfill_id=plan.backfill_id,
        plan=plan_uri,
        warehouse=warehouse,
        application_id=spark.sparkContext.applicationId,
        started_at=started_at,
        finished_at=_now(),
        seconds=round(time.monotonic() - started, 3),
        steps=ordered,
        external_steps=[step.id for step in plan.steps if step.kind != "spark"],
    )


def pipeline_order(registry: Registry) -> list[Transform]:
    """Transforms so that each comes after those that write its inputs (a topological sort)."""
    writers = {transform.output.name: transform for transform in registry}
    ordered: list[Transform] = []
    visiting: set[str] = set()

    def visit(transform: Transform) -> None:
        if transform in ordered:
            return
        if transform.name in visiting:
            raise ValueError(f"transforms form a cycle through {transform.name}")
        visiting.add(transform.name)
        for spec in transform.inputs.values():
            if spec.table.name in writers:
                visit(writers[spec.table.name])
        visiting.discard(transform.name)
        ordered.append(transform)

    for transform in sorted(registry, key=lambda t: t.name):
        visit(transform)
    return ordered


def run_everything(*, spark: SparkSession, warehouse: str, registry: Registry) -> dict[str, int]:
    """Every transform over every day, rewriting each output table whole: the reference a
    backfill must reproduce. Returns rows written per table."""
    written: dict[str, int] = {}
    everything = Scope()
    for transform in pipeline_order(registry):
        frames = input_frames(spark=spark, warehouse=warehouse, transform=transform, scope=everything)
        output = conform(transform.apply(frames), transform.output)
        result = replace_partitions(
            spark=spark, frame=output, warehouse=warehouse, table=transform.output, scope=everything
        )
        written[transform.output.name] = result.rows
    return written
