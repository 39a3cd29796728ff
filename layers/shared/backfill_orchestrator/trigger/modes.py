"""One runner per config mode. The service claims the backfill (status RECEIVED), then calls
`MODE_RUNNERS[config.mode]` with the services and request of runs.py; a runner records the
states it reaches on the way (PLANNED, TRIGGERED) and returns how it ended. Final
REJECTED/FAILED records and all notifications are the service's job. A runner raises for system failures (Marquez, Airflow, S3, ...).

Replay (docs/replay.md) queues one task per feed, day and hour for the replay function."""

from __future__ import annotations

from backfill_orchestrator.airflow_api import TriggerResult
from backfill_orchestrator.claims import Queued, Refused
from backfill_orchestrator.config import BackfillConfig, ConfigIssue, InvalidConfigError
from backfill_orchestrator.contracts.publish import PublishPolicy
from backfill_orchestrator.lineage import ProducersSeen
from backfill_orchestrator.planner import PlanRefusedError, build_plan
from backfill_orchestrator.policy import Policy, publish_policy_for
from backfill_orchestrator.preflight import PreflightRefusedError, Reach, checked_plan
from backfill_orchestrator.status import BackfillState
from backfill_orchestrator.trigger.approval import gate_submission
from backfill_orchestrator.trigger.runs import (
    ModeOutcome,
    ModeRequest,
    ModeRunner,
    ModeServices,
    admit,
    first_run,
    plan_summary,
    record_triggered,
    run_plan,
    started,
    trigger_run,
)
from backfill_orchestrator.trigger.storage import StoredBackfill

REPLAY_NOT_ENABLED = "replay mode is not enabled in this deployment"


def refusal_issues(config: BackfillConfig, error: PlanRefusedError) -> list[ConfigIssue]:
    """A refused plan as located issues (`PlanRefusedError.issues`: `jobs[i]` for named root jobs)."""
    return error.issues(config)


def run_batch(request: ModeRequest, services: ModeServices) -> ModeOutcome:
    config, backfill_id, record = request.config, request.backfill_id, request.record
    if record.state is BackfillState.RECEIVED and record.attempts > 1 and not config.dry_run:
        # Taking over a dead attempt that recorded nothing past RECEIVED: Airflow may have
        # accepted its run before it died. That run reads the plan at its fixed key: keep it.
        found = found_run(request, services)
        if found is not None:
            return found
    # A dry run, or one a policy may hold back, may stop at PLANNED (AWAITING_APPROVAL moves on
    # from it): PLANNED is recorded and the picture written here, where no run may follow soon.
    may_stop = config.dry_run or policy_may_hold_back(services)
    plan = None
    if record.plan_uri:
        # A retry: a run may already point at this plan, so keep it rather than re-plan.
        plan = services.storage.load_plan(record.plan_uri)
    if plan is not None and record.state is BackfillState.PLANNED and record.config_uri and record.plan_uri:
        # Taking over a dead attempt that got as far as PLANNED: config and plan are stored.
        stored = StoredBackfill(record.config_uri, record.plan_uri)
    else:
        # The picture: written here for a backfill that may stop (a queued one gets it when it
        # queues, below); a run writes it when it starts.
        if plan is None:
            # The config's `publish:` may only narrow the deployment's: checked before anything is planned.
            publish_policy, issues = publish_policy_for(deployment_policy(services), config.publish)
            if issues:
                reason = f"publish: looser than the deployment's publish policy ({len(issues)} fields)"
                return ModeOutcome(BackfillState.REJECTED, issues=issues, reason=reason)
            try:
                catalog = services.catalog()
                marquez = services.lineage()  # the plan's lineage, and the run history of its jobs
                lineage = ProducersSeen(marquez)  # freshness reuses the roots' answers
                plan = build_plan(config, backfill_id=backfill_id, lineage=lineage, catalog=catalog)
                reach = Reach(
                    services.settings.preflight,
                    catalog=catalog,
                    history=marquez,
                    durations=services.durations,
                )
                plan = checked_plan(config, plan, reach, known_producers=lineage.producers)
                if publish_policy != PublishPolicy():  # the defaults need not be written down
                    plan = plan.model_copy(update={"publish_policy": publish_policy})
            except PreflightRefusedError as error:
                return ModeOutcome(BackfillState.REJECTED, issues=error.issues, reason=str(error))
            except PlanRefusedError as error:
                return ModeOutcome(
                    BackfillState.REJECTED, issues=refusal_issues(config, error), reason=str(error)
                )
        stored = services.storage.store_backfill(
            backfill_id, upload=request.upload, config_body=request.body, plan=plan, picture=may_stop
        )
    # The store keeps the first steps of the summary; the plan document has them all.
    planned = {
        "config_uri": stored.config_uri,
        "plan_uri": stored.plan_uri,
        "plan_summary": plan_summary(plan),
    }
    # PLANNED is recorded when the backfill may stop there: a dry run, or one a policy may hold
    # back (AWAITING_APPROVAL moves on from PLANNED). Otherwise the state that follows carries
    # the plan: TRIGGERED, or QUEUED when the claims hold it back.
    if record.state is not BackfillState.PLANNED and may_stop:
        record = services.status.transition(
            backfill_id,
            BackfillState.PLANNED,
            detail=f"{len(plan.waves)} waves, {len(plan.steps)} steps"
            + (" (dry run)" if config.dry_run else ""),
            attributes=planned,
        )
    if config.dry_run:
        return ModeOutcome(BackfillState.PLANNED, plan=plan, stored=stored)
    gated = gate_submission(request, services, plan=plan, stored=stored)
    if gated is not None:  # refused by the policy, or awaiting a second person's approval
        return gated

    admission = admit(services, backfill_id=backfill_id, plan=plan, submitted_at=record.created_at)
    if isinstance(admission, Refused):
        reason = f"refused: {admission.describe()}; resubmit when it has ended, or cancel it"
        return ModeOutcome(
            BackfillState.REJECTED,
            plan=plan,
            stored=stored,
            issues=[ConfigIssue("dates", reason)],
            reason=reason,
        )
    if isinstance(admission, Queued):
        reason = f"waiting for {', '.join(admission.blocking)} (overlapping steps and dates); it starts when they end"
        services.storage.store_picture(backfill_id, plan)  # people look at it while it waits
        services.status.transition(
            backfill_id, BackfillState.QUEUED, detail=reason, attributes={"reason": reason, **planned}
        )
        return ModeOutcome(BackfillState.QUEUED, plan=plan, stored=stored, reason=reason)
    announce, report = request.announce, request.report
    reported: list[bool] = []  # the result file, sent beside TRIGGERED when the service gave `report`

    def triggered(run: TriggerResult, run_url: str | None) -> ModeOutcome:
        return ModeOutcome(
            BackfillState.TRIGGERED,
            plan=plan,
            stored=stored,
            run=run,
            run_url=run_url,
            announced=announce is not None,
            reported=reported[0] if reported else None,
        )

    run, run_url = trigger_run(
        services,
        backfill_id=backfill_id,
        config_uri=stored.config_uri,
        plan_uri=stored.plan_uri,
        result_uri=services.storage.result_uri(request.upload),
        planned=planned,
        announce=(lambda url: announce(plan, stored, url)) if announce else None,
        held=record,  # as claimed, or as PLANNED left it: the TRIGGERED write replaces it
        beside=(lambda run, url: reported.append(report(triggered(run, url)))) if report else None,
    )
    started(
        services, backfill_id=backfill_id, plan=plan, config_uri=stored.config_uri, submitter=config.owner
    )
    return triggered(run, run_url)


def deployment_policy(services: ModeServices) -> Policy | None:
    gate = services.approval
    return gate.policy() if gate is not None else None


def policy_may_hold_back(services: ModeServices) -> bool:
    """Whether a policy may keep a planned backfill waiting for approval (it moves on from
    PLANNED). Raises as the policy's read does."""
    gate = services.approval
    return gate is not None and gate.policy() is not None


def found_run(request: ModeRequest, services: ModeServices) -> ModeOutcome | None:
    """The backfill's first DAG run, if Airflow has it (read by its id, as the dead attempt
    triggered it): recorded TRIGGERED with the config and plan its conf names, nothing
    planned or stored again. None when there is no such run."""
    backfill_id = request.backfill_id
    airflow, dag_id = services.airflow(), services.settings.backfill_dag_id
    run = first_run(services, backfill_id)
    if run is None:
        return None
    plan, planned = run_plan(services, run.conf)
    if plan is None:  # its plan is gone: nothing to record it with; planning again is all that is left
        return None
    stored = StoredBackfill(planned["config_uri"], planned["plan_uri"])
    run_url = airflow.run_url(dag_id, run.run_id)
    record_triggered(
        services,
        backfill_id=backfill_id,
        dag_id=dag_id,
        run=TriggerResult(run, created=False),
        run_url=run_url,
        attempt=1,
        attributes=planned,
    )
    started(
        services,
        backfill_id=backfill_id,
        plan=plan,
        config_uri=stored.config_uri,
        submitter=request.config.owner,
    )
    # No Slack: the dead attempt may have posted between its POST and its TRIGGERED write, and
    # its thread is not known. The DAG's start opens the thread when the record has none.
    return ModeOutcome(
        BackfillState.TRIGGERED,
        plan=plan,
        stored=stored,
        run=TriggerResult(run, created=False),
        run_url=run_url,
        announced=request.announce is not None,
    )


def run_replay(request: ModeRequest, services: ModeServices) -> ModeOutcome:
    """Resolve the target through the allowlist (unknown: REJECTED at `replay.target`), split
    the config into one task per feed, day and hour, and queue them for the replay function.
    A deployment without a replay-tasks queue refuses replay configs (FAILED, no page)."""
    config, backfill_id, settings = request.config, request.backfill_id, services.settings
    if not settings.replay_tasks_queue_url or services.sqs is None:
        return ModeOutcome(BackfillState.FAILED, reason=REPLAY_NOT_ENABLED)
    from backfill_orchestrator.replay.dispatch import plan_replay, queue_tasks  # replay configs only

    try:
        tasks = plan_replay(config, targets=settings.replay_targets)
    except InvalidConfigError as error:
        return ModeOutcome(BackfillState.REJECTED, issues=error.issues, reason=str(error))
    assert config.replay is not None  # plan_replay checked it
    detail = f"{len(tasks)} replay tasks to {config.replay.target}"
    if request.record.state is not BackfillState.PLANNED:  # PLANNED: a dead attempt taken over
        services.status.transition(
            backfill_id, BackfillState.PLANNED, detail=detail + (" (dry run)" if config.dry_run else "")
        )
    if config.dry_run:
        return ModeOutcome(BackfillState.PLANNED)
    # The count is recorded before any task is queued, so whichever task finishes last sees it.
    services.status.transition(
        backfill_id,
        BackfillState.TRIGGERED,
        detail=f"{detail} queued",
        attributes={"tasks_total": len(tasks)},
    )
    queue_tasks(tasks, sqs=services.sqs(), queue_url=settings.replay_tasks_queue_url)
    return ModeOutcome(BackfillState.TRIGGERED)


MODE_RUNNERS: dict[str, ModeRunner] = {"batch": run_batch, "replay": run_replay}
