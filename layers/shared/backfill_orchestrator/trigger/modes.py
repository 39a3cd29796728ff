"""One runner per config mode. The service claims the backfill (status RECEIVED), then calls
`MODE_RUNNERS[config.mode]`; a runner records the states it reaches on the way (PLANNED,
TRIGGERED) and returns how it ended. Final REJECTED/FAILED records and all notifications
are the service's job. A runner raises for system failures (Marquez, Airflow, S3, ...).

Replay (issue 7) plugs in by replacing MODE_RUNNERS["replay"]."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from backfill_orchestrator.airflow_api import AirflowClient, TriggerResult
from backfill_orchestrator.config import BackfillConfig, ConfigIssue
from backfill_orchestrator.lineage import LineageSource
from backfill_orchestrator.plan import Plan
from backfill_orchestrator.planner import JobCatalog, PlanRefusedError, build_plan
from backfill_orchestrator.settings import DeploymentSettings
from backfill_orchestrator.status import BackfillState, StatusRecord, StatusStore
from backfill_orchestrator.trigger.events import Upload
from backfill_orchestrator.trigger.storage import StoredBackfill, TriggerStorage

REPLAY_NOT_ENABLED = "replay mode is not enabled in this deployment"


@dataclass(frozen=True)
class ModeServices:
    """What runners may use; the factories are called only when needed, so an invalid
    config never costs a secret lookup or a connection."""

    settings: DeploymentSettings
    storage: TriggerStorage
    status: StatusStore
    airflow: Callable[[], AirflowClient]
    lineage: Callable[[], LineageSource]
    catalog: Callable[[], JobCatalog]


@dataclass(frozen=True)
class ModeRequest:
    config: BackfillConfig
    backfill_id: str
    record: StatusRecord  # as claimed (RECEIVED); may carry a plan_uri from an earlier attempt
    body: bytes
    upload: Upload


@dataclass(frozen=True)
class ModeOutcome:
    state: BackfillState  # PLANNED (dry run), TRIGGERED, REJECTED or FAILED
    plan: Plan | None = None
    stored: StoredBackfill | None = None
    run: TriggerResult | None = None
    run_url: str | None = None
    issues: list[ConfigIssue] = field(default_factory=list)
    reason: str | None = None


ModeRunner = Callable[[ModeRequest, ModeServices], ModeOutcome]


def plan_summary(plan: Plan) -> dict[str, Any]:
    """The compact plan kept on the status record and in the result file."""
    return {
        "waves": [[step.id for step in wave.steps] for wave in plan.waves],
        "steps": len(plan.steps),
        "warnings": [warning.message for warning in plan.warnings],
    }


def refusal_issues(config: BackfillConfig, error: PlanRefusedError) -> list[ConfigIssue]:
    """A refused plan as located issues: `jobs[i]` for each named root job when possible."""
    jobs = getattr(error, "jobs", None) or []
    keys = [job.key for job in (config.jobs or [])]
    located = [f"jobs[{keys.index(job.key)}]" for job in jobs if job.key in keys]
    return [ConfigIssue(", ".join(dict.fromkeys(located)) or "jobs", str(error))]


def run_batch(request: ModeRequest, services: ModeServices) -> ModeOutcome:
    config, backfill_id = request.config, request.backfill_id
    plan = None
    if request.record.plan_uri:
        # A retry: a run may already point at this plan, so keep it rather than re-plan.
        plan = services.storage.load_plan(request.record.plan_uri)
    if plan is None:
        try:
            plan = build_plan(config, backfill_id=backfill_id, lineage=services.lineage(), catalog=services.catalog())
        except PlanRefusedError as error:
            return ModeOutcome(BackfillState.REJECTED, issues=refusal_issues(config, error), reason=str(error))
    stored = services.storage.store_backfill(
        backfill_id, config_body=request.body, extension=request.upload.extension, plan=plan
    )
    services.status.transition(
        backfill_id,
        BackfillState.PLANNED,
        detail=f"{len(plan.waves)} waves, {len(plan.steps)} steps" + (" (dry run)" if config.dry_run else ""),
        attributes={"config_uri": stored.config_uri, "plan_uri": stored.plan_uri, "plan_summary": plan_summary(plan)},
    )
    if config.dry_run:
        return ModeOutcome(BackfillState.PLANNED, plan=plan, stored=stored)

    airflow = services.airflow()
    dag_id = services.settings.backfill_dag_id
    conf = {"backfill_id": backfill_id, "config_uri": stored.config_uri, "plan_uri": stored.plan_uri}
    run = airflow.trigger_dag_run(dag_id, run_id=backfill_id, conf=conf)
    run_url = airflow.run_url(dag_id, run.run.run_id)
    services.status.transition(
        backfill_id,
        BackfillState.TRIGGERED,
        detail=f"DAG run {dag_id}/{run.run.run_id}" + ("" if run.created else " (existed already)"),
        attributes={"dag_id": dag_id, "dag_run_id": run.run.run_id, "dag_run_url": run_url},
    )
    return ModeOutcome(BackfillState.TRIGGERED, plan=plan, stored=stored, run=run, run_url=run_url)


def run_replay_not_enabled(request: ModeRequest, services: ModeServices) -> ModeOutcome:
    """Placeholder until the replay issue wires the replay function in."""
    return ModeOutcome(BackfillState.FAILED, reason=REPLAY_NOT_ENABLED)


MODE_RUNNERS: dict[str, ModeRunner] = {"batch": run_batch, "replay": run_replay_not_enabled}
