"""What the mode runners (modes.py), the approval gate (approval.py) and control documents
(control_documents.py, control_actions.py) share: the services and request a runner is
given, the outcome it returns, what a control action is given (`ActionCall`), and a
backfill's DAG runs: admission through the claims, one run per attempt (`trigger_run`,
recording TRIGGERED), the first run read back, the OpenLineage START."""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from backfill_orchestrator.airflow_api import AirflowClient, DagRun, TriggerResult
from backfill_orchestrator.claims import Admission, Admitted, ClaimRegistry, ClaimSet
from backfill_orchestrator.claims.registry import keep_claim_set
from backfill_orchestrator.config import BackfillConfig, ConfigIssue
from backfill_orchestrator.contracts import AttemptDone, ControlRequest, RunConf
from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.lineage import LineageWithHistory
from backfill_orchestrator.lineage_events import LineageEmitter, backfill_started
from backfill_orchestrator.planner import JobCatalog
from backfill_orchestrator.preflight import estimate_totals
from backfill_orchestrator.preflight.history import DurationCache
from backfill_orchestrator.publish import Publisher
from backfill_orchestrator.settings import DeploymentSettings
from backfill_orchestrator.status import (
    TRIGGER_FROM,
    BackfillState,
    StatusItemTooLargeError,
    StatusRecord,
    StatusStore,
    TransitionRejectedError,
)
from backfill_orchestrator.status.actions import ActionRecord
from backfill_orchestrator.tracing import current_trace_id
from backfill_orchestrator.trigger.approval_gate import ApprovalGate
from backfill_orchestrator.trigger.events import Upload
from backfill_orchestrator.trigger.storage import StoredBackfill, TriggerStorage

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModeServices:
    """What runners may use; the factories are called only when needed, so an invalid
    config never costs a secret lookup or a connection."""

    settings: DeploymentSettings
    storage: TriggerStorage
    status: StatusStore
    airflow: Callable[[], AirflowClient]
    lineage: Callable[[], LineageWithHistory]
    catalog: Callable[[], JobCatalog]
    sqs: Callable[[], Any] | None = None  # replay mode: the client that queues replay tasks
    claims: Callable[[], ClaimRegistry] | None = None  # overlap protection; None: not held back
    lineage_events: LineageEmitter | None = None  # OpenLineage events of the backfill (None: off)
    approval: ApprovalGate | None = None  # uploaders' identities and the policy (None: nothing gated)
    durations: DurationCache | None = None  # run durations the warm container keeps (None: read every time)
    # Safe publish's controls: the Publisher over a publish root (None: publish, discard and
    # undo are refused; trigger/publish_actions.py)
    publisher: Callable[[str], Publisher] | None = None


# Posts the message that opens the backfill's Slack thread for a run this attempt created
# (plan, where it is stored, the run's link) and returns the thread (channel, ts) to record
# with TRIGGERED, or None (no thread to store, or nothing sent). Never raises.
Announce = Callable[[Plan, "StoredBackfill", "str | None"], "tuple[str, str] | None"]
# Writes the result file of an outcome the runner reached, as the service would after it
# returns (one home for the document); False when it could not be written. Raises only what
# a crash raises. A runner sends it beside its last status write (`ModeOutcome.reported`).
Report = Callable[["ModeOutcome"], bool]


@dataclass(frozen=True)
class ModeRequest:
    config: BackfillConfig
    record: StatusRecord  # as claimed: RECEIVED, or PLANNED when a dead attempt is taken over; may carry a plan_uri
    body: bytes
    upload: Upload
    announce: Announce | None = None  # batch: Slack between the run's creation and TRIGGERED
    report: Report | None = None  # batch: the result file, sent beside TRIGGERED

    @property
    def backfill_id(self) -> str:
        return self.record.backfill_id


@dataclass(frozen=True)
class ActionCall:
    """What an action is given."""

    services: ModeServices
    request: ControlRequest
    record: StatusRecord  # as it is now
    action: ActionRecord  # its item: the basis it began from, when, and whether resumed
    by: str  # who acts: the principal the policy checked, else the document's requested_by
    sleep: Callable[[float], None]

    @property
    def now(self) -> datetime:
        """When the action began: a resumed action is judged as of its first delivery."""
        return self.action.started_at


@dataclass(frozen=True)
class ModeOutcome:
    state: BackfillState  # PLANNED (dry run), AWAITING_APPROVAL, QUEUED, TRIGGERED, REJECTED or FAILED
    plan: Plan | None = None
    stored: StoredBackfill | None = None
    run: TriggerResult | None = None
    run_url: str | None = None
    issues: list[ConfigIssue] = field(default_factory=list)
    reason: str | None = None
    announced: bool = (
        False  # the runner dealt with Slack for TRIGGERED (posted, or left it to the DAG's start)
    )
    # The result file, written by the runner beside its last status write (ModeRequest.report):
    # whether it was written; None: the service writes it.
    reported: bool | None = None


ModeRunner = Callable[[ModeRequest, ModeServices], ModeOutcome]


def plan_summary(plan: Plan) -> dict[str, Any]:
    """The compact plan kept on the status record and in the result file."""
    return {
        "waves": [[step.id for step in wave.steps] for wave in plan.waves],
        "steps": len(plan.steps),
        "warnings": [warning.message for warning in plan.warnings],
        **({"estimate": estimate_totals(plan.estimate)} if plan.estimate else {}),
    }


def first_run(services: ModeServices, backfill_id: str) -> DagRun | None:
    """The backfill's first DAG run as Airflow has it (run id = backfill id), when its conf is
    this backfill's; None otherwise."""
    run = services.airflow().get_dag_run(services.settings.backfill_dag_id, dag_run_id(backfill_id))
    return run if run is not None and run.conf.get("backfill_id") == backfill_id else None


def run_plan(services: ModeServices, conf: Mapping[str, Any]) -> tuple[Plan | None, dict[str, Any]]:
    """The plan a run's conf points at, and the record's attributes naming it and its config."""
    run_conf = RunConf.from_conf(conf)
    plan = services.storage.load_plan(run_conf.plan_uri)
    planned: dict[str, Any] = {"config_uri": run_conf.config_uri, "plan_uri": run_conf.plan_uri}
    if plan is not None:
        planned["plan_summary"] = plan_summary(plan)
    return plan, planned


def started(
    services: ModeServices, *, backfill_id: str, plan: Plan, config_uri: str, submitter: str | None
) -> None:
    """The backfill's OpenLineage START (never raises: lineage must not fail a backfill)."""
    if services.lineage_events is not None:
        backfill_started(
            services.lineage_events,
            services.lineage_events.facts(
                backfill_id=backfill_id,
                attempt=1,
                config_uri=config_uri,
                dates=[day.isoformat() for day in plan.dates],
                hours=plan.hours,
                feeds=plan.feeds,
                submitter=submitter,
                trace_id=current_trace_id(),
            ),
        )


def admit(
    services: ModeServices,
    *,
    backfill_id: str,
    plan: Plan,
    submitted_at: str,
    skip: AttemptDone | None = None,
) -> Admission:
    """Claim the (step, date) pairs the plan rewrites (less what earlier attempts finished);
    Admitted when nothing active overlaps them (or no claims table is configured)."""
    if services.claims is None:
        return Admitted(backfill_id)
    done = {step_id: plan.step(step_id).dates for step_id in (skip.steps_done if skip else [])}
    for step_id, days in (skip.dates_done if skip else {}).items():
        done[step_id] = days
    claims = ClaimSet.from_plan(plan, skip=done)
    # Named by its version: containers keep the claim sets they read (claims.registry_for).
    uri = services.storage.store_document(
        backfill_id, "claims.json", claims.to_json().encode(), versioned=True
    )
    keep_claim_set(uri, claims)
    return services.claims().admit(
        backfill_id=backfill_id,
        claims=claims,
        claims_uri=uri,
        submitted_at=submitted_at,
        on_overlap=services.settings.on_overlap,
    )


def trigger_run(
    services: ModeServices,
    *,
    backfill_id: str,
    config_uri: str,
    plan_uri: str,
    result_uri: str | None,
    attempt: int = 1,
    done_uri: str | None = None,
    planned: Mapping[str, Any] | None = None,
    announce: Callable[[str | None], tuple[str, str] | None] | None = None,
    held: StatusRecord | None = None,
    beside: Callable[[TriggerResult, str | None], object] | None = None,
) -> tuple[TriggerResult, str | None]:
    """Trigger the DAG run of `attempt` (run id: the backfill id, then `<id>__attempt<n>`) and
    record TRIGGERED (with `planned`: config_uri, plan_uri and plan_summary, when no PLANNED
    carried them); a retried trigger finds its run (409 read back), never a second one.

    `announce(run_url)`: called only when this call created the run, between the POST and the
    TRIGGERED write, which then carries the Slack thread it returns (one status write, not
    two). A run that existed already is not announced again: whoever created it did, or died
    before it could, and then the DAG's start opens the thread (the record has none).
    `held`: the record as this attempt last wrote it (`StatusStore.transition`).

    `beside(run, run_url)`: sent side by side with the TRIGGERED write (one wait, not two) and
    waited for, however that write ends: the result file, which reports the run. Either may
    land without the other (a crash, a failed write); the run exists by then, so what lands
    is true, and the retry completes the rest (docs/trigger.md, "The guarantee")."""
    airflow = services.airflow()
    dag_id = services.settings.backfill_dag_id
    conf = RunConf(
        backfill_id=backfill_id,
        config_uri=config_uri,
        plan_uri=plan_uri,
        result_uri=result_uri,
        attempt=attempt,
        done_uri=done_uri,
        trace_id=current_trace_id(),
    ).to_conf()
    run = airflow.trigger_dag_run(dag_id, run_id=dag_run_id(backfill_id, attempt), conf=conf)
    run_url = airflow.run_url(dag_id, run.run.run_id)
    thread = announce(run_url) if announce is not None and run.created else None

    def record() -> None:
        record_triggered(
            services,
            backfill_id=backfill_id,
            dag_id=dag_id,
            run=run,
            run_url=run_url,
            attempt=attempt,
            attributes=planned,
            slack_thread=thread,
            held=held,
        )

    if beside is None:
        record()
        return run, run_url
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="beside-triggered") as pool:
        sent = pool.submit(contextvars.copy_context().run, beside, run, run_url)
        record()  # a failure propagates once `beside` has ended (the pool waits for it)
    sent.result()
    return run, run_url


# The DAG's own states: a record it moved on is never taken back to TRIGGERED.
DAG_AHEAD = frozenset({BackfillState.RUNNING, BackfillState.SUCCEEDED, BackfillState.FAILED})


def record_triggered(
    services: ModeServices,
    *,
    backfill_id: str,
    dag_id: str,
    run: TriggerResult,
    run_url: str | None,
    attempt: int,
    attributes: Mapping[str, Any] | None,
    slack_thread: tuple[str, str] | None = None,
    held: StatusRecord | None = None,
) -> None:
    """TRIGGERED, with the run's id and link. A first run is recorded only from what the
    trigger left before it (TRIGGER_FROM): when the DAG already moved the record on (RUNNING,
    SUCCEEDED, FAILED; a run accepted while no TRIGGERED was recorded yet) its state stands
    and only the run's id and link (and `attributes`) are added. A retry attempt (attempt > 1)
    follows FAILED or CANCELLED; its run may get ahead the same way (RUNNING from FAILED)."""
    run_attributes = {
        "dag_id": dag_id,
        "dag_run_id": run.run.run_id,
        "dag_run_url": run_url,
        "run_attempt": attempt,
    }

    def record(extra: Mapping[str, Any]) -> None:
        try:
            services.status.transition(
                backfill_id,
                BackfillState.TRIGGERED,
                detail=f"DAG run {dag_id}/{run.run.run_id}"
                + ("" if run.created else " (existed already)")
                + (f", attempt {attempt}" if attempt > 1 else ""),
                attributes={**extra, **run_attributes},
                only_from=TRIGGER_FROM if attempt == 1 else None,
                slack_thread=slack_thread,
                held=held,
            )
        except TransitionRejectedError as error:
            current = error.current
            if current is None or current.state not in DAG_AHEAD:
                raise
            services.status.annotate(backfill_id, {**extra, **run_attributes}, slack_thread=slack_thread)

    try:
        record(attributes or {})
    except StatusItemTooLargeError:
        # The run exists: the record must say so. Only the plan's summary can be large (plan.json
        # and the result file have the whole plan), so the write goes again without it.
        if not attributes or "plan_summary" not in attributes:
            raise
        log.warning(
            "status of %s too large with the plan summary: TRIGGERED recorded without it", backfill_id
        )
        record({name: value for name, value in attributes.items() if name != "plan_summary"})


def dag_run_id(backfill_id: str, attempt: int = 1) -> str:
    """At most 33 + 10 characters: MWAA's 64-character Path still fits."""
    return backfill_id if attempt == 1 else f"{backfill_id}__attempt{attempt}"
