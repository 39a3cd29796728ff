"""What each control action does: one entry of `ACTIONS` per action (control_documents.py
reads, checks and resumes the documents; this module acts).

- `cancel`: not yet triggered (RECEIVED, PLANNED, AWAITING_APPROVAL, QUEUED) -> CANCELLED, never
  triggered; triggered or running -> the DAG run is failed through the API (Airflow stops its
  running tasks: the Spark job gets SIGTERM and stops at a partition boundary, running DAG
  reruns are failed, queued ones never start) -> CANCELLED. A replay backfill -> CANCELLED; its
  tasks stop at their next batch. Cancelling a CANCELLED backfill is a no-op; a finished one
  (SUCCEEDED, FAILED, REJECTED) is refused.
- `retry`: FAILED or CANCELLED -> a new DAG run attempt that skips every step and (DAG, date)
  that succeeded in earlier attempts. Running, queued or succeeded -> refused.
- `start` (the orchestrator's own): a QUEUED backfill whose blocking backfills ended.
- `approve` / `reject`: a backfill AWAITING_APPROVAL (trigger/approval.py).
- `publish` / `discard`: a backfill AWAITING_PUBLISH (a Spark step staged and held by the
  publish policy). publish: every held step is published (by the person), then attempt n+1
  runs the steps and DAG reruns that waited for it (TRIGGERED), or SUCCEEDED when none did.
  discard: everything staged is removed, the warehouse unchanged by it -> DISCARDED, claims
  released.
- `undo`: a SUCCEEDED backfill -> every partition it published back to what it was (UNDONE),
  unless a later backfill republished one of them or the backups expired (refused, located).

Every action is resumable. It is given the record as it is now and its action item
(status/actions.py): the record's state and run attempt when the action began, when that was,
and whether an earlier delivery began it (`resumed`). Run again after an earlier delivery
failed or died at any point, it brings the backfill to the action's end from wherever that
delivery left it, doing nothing twice: Airflow's PATCH of a run is idempotent; attempt n's run
id is fixed (`<id>__attempt<n>`), so its POST meets a 409 and reads the run back; every
transition is conditional on the state it leaves; releasing claims and admitting are
idempotent; a state the action already reached is recognised from the basis (a cancel that
recorded CANCELLED releases the claims; a retry whose attempt exists reports it). A new action
is a function with that contract and one row of ACTIONS."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from datetime import UTC, date, datetime, time
from typing import Any

from backfill_orchestrator.claims import Admitted, Queued, Refused
from backfill_orchestrator.claims.release import release_and_start_queued
from backfill_orchestrator.contracts import AttemptDone, BackfillReport
from backfill_orchestrator.contracts.control_request import ControlAction
from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.contracts.publish import ManifestState
from backfill_orchestrator.contracts.run_conf import MAX_ATTEMPTS
from backfill_orchestrator.contracts.steps import StepStatus
from backfill_orchestrator.errors import ServiceError, UserError
from backfill_orchestrator.lineage_events import backfill_aborted, backfill_undone
from backfill_orchestrator.publish import Publisher, PublishError
from backfill_orchestrator.status import BackfillState, StatusRecord, TransitionRejectedError
from backfill_orchestrator.trigger import approval, publishing
from backfill_orchestrator.trigger.approval import original_result_uri, report_decision
from backfill_orchestrator.trigger.events import Upload
from backfill_orchestrator.trigger.runs import ActionCall, ModeServices, admit, dag_run_id, trigger_run

log = logging.getLogger(__name__)
NOT_STARTED = frozenset(
    {BackfillState.RECEIVED, BackfillState.PLANNED, BackfillState.AWAITING_APPROVAL, BackfillState.QUEUED}
)
RUNNING = frozenset({BackfillState.TRIGGERED, BackfillState.RUNNING})
RETRYABLE = frozenset(
    {BackfillState.FAILED, BackfillState.CANCELLED, BackfillState.DISCARDED, BackfillState.UNDONE}
)
RERUN_STATES = ("queued", "running")


class ControlRefusedError(UserError):
    """The action is not allowed for this backfill now; says why."""


Action = Callable[[ActionCall], str]  # returns the detail; raises ControlRefusedError (or the gate's refusal)


# -- cancel -------------------------------------------------------------------------------------
def cancel(call: ActionCall) -> str:
    record, began = call.record, call.action
    reason = call.request.reason
    if record.run_attempt > began.basis_attempt:
        # A retry started a later attempt after this cancel had recorded CANCELLED: not this cancel's.
        return (
            f"cancelled attempt {began.basis_attempt}; attempt {record.run_attempt} has started since "
            "and is not cancelled"
        )
    state = record.state
    if state is BackfillState.CANCELLED:
        if began.resumed and began.basis_state is not BackfillState.CANCELLED:
            # An earlier delivery recorded CANCELLED, then failed or died before the rest.
            _ended(call, record, reason=reason, ran=began.basis_state in RUNNING)
            return "cancelled; the claims are released"
        return "already cancelled; nothing to do"
    if state in NOT_STARTED:
        _transition(
            call,
            record,
            BackfillState.CANCELLED,
            f"cancelled by {call.by} before it was triggered: {reason}",
            by=call.by,
        )
        release_claims(call.services, record.backfill_id, now=call.now)
        return "cancelled before it was triggered; nothing ran"
    if state is BackfillState.AWAITING_PUBLISH:
        raise ControlRefusedError(
            f"cannot cancel {record.backfill_id}: it awaits publish and runs nothing; publish or discard it"
        )
    if state not in RUNNING:
        raise ControlRefusedError(f"cannot cancel: backfill {record.backfill_id} has already ended ({state})")
    stopped = []
    if record.mode == "batch" and record.dag_run_id:
        stopped = _stop_dag_runs(call, record)
    _transition(
        call,
        record,
        BackfillState.CANCELLED,
        f"cancelled by {call.by}: {reason}",
        by=call.by,
        attributes={"reason": f"cancelled: {reason}"[:2000], "progress": record.progress},
    )
    _ended(call, record, reason=reason, ran=True)
    if record.mode == "replay":
        return "cancelled: replay tasks stop at their next batch; unsent ones are skipped"
    return f"cancelled: stopped {', '.join(stopped) or 'nothing still running'}{_finished_steps(record)}"


def _ended(call: ActionCall, record: StatusRecord, *, reason: str, ran: bool) -> None:
    """What follows CANCELLED: the claims released (what waited starts) and, for a backfill
    that was triggered (`ran`), its lineage run ended with ABORT."""
    services = call.services
    release_claims(services, record.backfill_id, now=call.now)
    if ran and services.lineage_events is not None:
        backfill_aborted(
            services.lineage_events,
            services.lineage_events.facts(
                backfill_id=record.backfill_id, attempt=record.run_attempt, config_uri=record.config_uri
            ),
            reason=reason,
        )


def _stop_dag_runs(call: ActionCall, record: StatusRecord) -> list[str]:
    """Fail the backfill's DAG run, then the reruns of its DAG steps still queued or running."""
    services = call.services
    airflow = services.airflow()
    dag_id = record.dag_id or services.settings.backfill_dag_id
    stopped = []
    run_id = record.dag_run_id or dag_run_id(record.backfill_id, record.run_attempt)
    if airflow.fail_dag_run(dag_id, run_id):
        stopped.append(f"DAG run {dag_id}/{run_id}")
        keep_failed(
            airflow, dag_id, run_id, seconds=services.settings.cancel_confirm_seconds, sleep=call.sleep
        )
    plan = _plan(services, record)
    for step in plan.steps:
        if step.kind != "airflow_dag" or not step.dates:
            continue
        wanted = {_midnight(day) for day in step.dates}
        runs = airflow.list_dag_runs(
            step.dag_id, logical_date_gte=min(wanted), logical_date_lte=max(wanted), states=RERUN_STATES
        )
        for run in runs:
            airflow.fail_dag_run(step.dag_id, run.run_id)
            stopped.append(f"{step.dag_id}/{run.run_id}")
    return stopped


def keep_failed(
    airflow: Any, dag_id: str, run_id: str, *, seconds: int, sleep: Callable[[float], None]
) -> None:
    """Watch a failed run for `seconds` (CANCEL_CONFIRM_SECONDS): a scheduler that loaded it
    before the PATCH (its last tasks just skipped) may still write "success" over it (seen with
    Airflow 3 on SQLite, where nothing locks the run's row). Such a run is failed again, so
    that a cancelled backfill never shows a successful run. Best effort: the record is
    CANCELLED either way."""
    for _ in range(seconds):
        sleep(1.0)
        try:
            run = airflow.get_dag_run(dag_id, run_id)
            if run is not None and run.state == "success":
                log.warning(
                    "DAG run %s/%s was marked successful after the cancel: failing it again", dag_id, run_id
                )
                airflow.fail_dag_run(dag_id, run_id)
        except Exception as error:  # noqa: BLE001 - the cancel itself is done
            log.warning("could not check that DAG run %s/%s stayed failed: %s", dag_id, run_id, error)
            return


# -- retry --------------------------------------------------------------------------------------
def retry(call: ActionCall) -> str:
    services, record = call.services, call.record
    attempt = call.action.basis_attempt + 1
    if record.run_attempt >= attempt:
        # An earlier delivery triggered and recorded this attempt, then failed or died.
        return f"attempt {attempt} triggered by {call.by} (DAG run {record.dag_run_id})"
    state = record.state
    if state not in RETRYABLE:
        why = {
            BackfillState.SUCCEEDED: "it succeeded; nothing failed",
            BackfillState.REJECTED: "it was rejected; upload the (fixed) config again",
        }.get(state, f"it is {state}; cancel it first or wait for it to end")
        raise ControlRefusedError(f"cannot retry {record.backfill_id}: {why}")
    if record.mode != "batch" or record.dry_run or not (record.plan_uri and record.config_uri):
        raise ControlRefusedError(
            f"cannot retry {record.backfill_id}: only a planned batch backfill can be retried"
        )
    if attempt > MAX_ATTEMPTS:
        raise ControlRefusedError(
            f"cannot retry {record.backfill_id}: it has had {MAX_ATTEMPTS} attempts, the most one backfill "
            "may; upload its config again under a new name"
        )
    plan = _plan(services, record)
    done = (
        AttemptDone(backfill_id=record.backfill_id, attempt=attempt)  # undone: everything runs again
        if call.action.basis_state is BackfillState.UNDONE
        else _done_so_far(services, record, plan, attempt)
    )
    remaining = [step for step in plan.steps if step.id not in done.steps_done]
    if not remaining:
        raise ControlRefusedError(f"cannot retry {record.backfill_id}: every step already succeeded")
    done_uri = services.storage.store_document(
        record.backfill_id, f"attempts/{attempt}/done.json", done.to_json().encode()
    )
    admission = admit(
        services, backfill_id=record.backfill_id, plan=plan, submitted_at=call.now.isoformat(), skip=done
    )
    if not isinstance(admission, Admitted):
        raise ControlRefusedError(
            f"cannot retry {record.backfill_id} now: it overlaps {_blocking(admission)}; retry when it ends"
        )
    trigger_run(
        services,
        backfill_id=record.backfill_id,
        config_uri=record.config_uri,
        plan_uri=record.plan_uri,
        result_uri=None,
        attempt=attempt,
        done_uri=done_uri,
    )
    return (
        f"attempt {attempt} triggered by {call.by}: reruns {len(remaining)} of {len(plan.steps)} steps "
        f"({len(done.steps_done)} succeeded earlier)"
    )


def _done_so_far(
    services: ModeServices,
    record: StatusRecord,
    plan: Plan,
    attempt: int,
    *,
    published: Iterable[str] = (),
) -> AttemptDone:
    """What earlier attempts finished: the last backfill report's succeeded steps and
    succeeded (DAG, date) reruns, plus what the attempt before it had found done, plus the
    held steps a person has just `published`."""
    storage = services.storage
    steps_done: set[str] = set(published)
    dates_done: dict[str, set[date]] = {}
    if attempt > 2:
        previous = storage.read_document(
            storage_uri(storage, record.backfill_id, f"attempts/{attempt - 1}/done.json")
        )
        if previous:
            earlier = AttemptDone.from_json(previous)
            steps_done |= set(earlier.steps_done)
            for step_id, days in earlier.dates_done.items():
                dates_done.setdefault(step_id, set()).update(days)
    assert record.plan_uri is not None
    report_body = storage.read_document(record.plan_uri.rsplit("/", 1)[0] + "/backfill_report.json")
    if report_body:
        report = BackfillReport.from_json(report_body)
        for step_id, outcome in report.steps.items():
            if outcome.status is StepStatus.SUCCEEDED:
                steps_done.add(step_id)
            elif outcome.dates:
                dates_done.setdefault(step_id, set()).update(
                    day for day, state in outcome.dates.items() if state == "success"
                )
    known = {step.id for step in plan.steps}
    return AttemptDone(
        backfill_id=record.backfill_id,
        attempt=attempt,
        steps_done=sorted(steps_done & known),
        dates_done={
            k: sorted(v) for k, v in sorted(dates_done.items()) if k in known and k not in steps_done
        },
    )


# -- start --------------------------------------------------------------------------------------
def start(call: ActionCall) -> str:
    """A queued backfill: admitted now (its blockers ended) -> triggered; still blocked ->
    stays queued (a later release starts it)."""
    services, record = call.services, call.record
    if record.state is not BackfillState.QUEUED:
        if call.action.resumed and call.action.basis_state is BackfillState.QUEUED and record.dag_run_id:
            return f"started: the backfills it waited for have ended (DAG run {record.dag_run_id})"
        raise ControlRefusedError(
            f"nothing to start: backfill {record.backfill_id} is {record.state}, not QUEUED"
        )
    plan = _plan(services, record)
    admission = admit(services, backfill_id=record.backfill_id, plan=plan, submitted_at=record.created_at)
    if not isinstance(admission, Admitted):
        return f"still waiting for {_blocking(admission)}"
    storage = services.storage
    result_uri = None
    if record.source_uri and record.source_uri.startswith(f"s3://{storage.bucket}/"):
        key = record.source_uri[len(f"s3://{storage.bucket}/") :]
        result_uri = storage.result_uri(Upload(bucket=storage.bucket, key=key))
    run, _ = trigger_run(
        services,
        backfill_id=record.backfill_id,
        config_uri=record.config_uri or "",
        plan_uri=record.plan_uri or "",
        result_uri=result_uri,
    )
    return f"started: the backfills it waited for have ended (DAG run {run.run.run_id})"


# -- publish, discard, undo (safe publish; trigger/publishing.py) -----------------------------
def publish(call: ActionCall) -> str:
    """Every held step published by `call.by` (each checked before the first is published),
    then attempt n+1 runs what waited for them, or the backfill SUCCEEDED when nothing did."""
    services, record, began = call.services, call.record, call.action
    attempt = began.basis_attempt + 1
    if record.state is not BackfillState.AWAITING_PUBLISH:
        if (
            began.resumed
            and publishing.decided(record, "publish")
            and record.run_attempt >= began.basis_attempt
        ):
            # An earlier delivery published and moved the backfill on, then failed or died.
            if record.state is BackfillState.SUCCEEDED:
                release_claims(services, record.backfill_id, now=call.now)
            return record.reason or f"published by {call.by}"
        raise ControlRefusedError(
            f"cannot publish {record.backfill_id}: it is {record.state}; only a backfill AWAITING_PUBLISH "
            "has staged steps to publish"
        )
    plan = _plan(services, record)
    steps = publishing.held_steps(publishing.last_report(services, record))
    publisher = _publisher(call, record)
    try:
        manifests = publishing.held_manifests(publisher, record, steps)
        publishing.reachable(publisher, manifests)
        for manifest in manifests:  # refuse before the first partition changes
            if manifest.state is not ManifestState.PUBLISHED:
                publisher.check_publishable(manifest)
        for manifest in manifests:
            publisher.publish(manifest, by=call.by)
    except (PublishError, publishing.PublishUnavailableError) as error:
        raise _refused("publish", record, error) from None
    partitions = sum(len(m.partitions) for m in manifests)
    held = f"{len(steps)} held step{'s' if len(steps) != 1 else ''} ({', '.join(steps)}; {partitions} partitions)"
    decision = _decision(call, record, "publish", steps=steps)
    done = _done_so_far(services, record, plan, attempt, published=steps)
    remaining = [step.id for step in plan.steps if step.id not in done.steps_done]
    if not remaining:
        why = f"published {held} by {call.by}; nothing else was left to run"
        _transition(
            call,
            record,
            BackfillState.SUCCEEDED,
            why,
            by=call.by,
            attributes={"publish": decision, "reason": why},
        )
        release_claims(services, record.backfill_id, now=call.now)
        report_decision(services, record, BackfillState.SUCCEEDED, why, now=call.now)
        return why
    if attempt > MAX_ATTEMPTS:
        raise ControlRefusedError(f"cannot publish {record.backfill_id}: it has had {MAX_ATTEMPTS} attempts")
    services.status.annotate(record.backfill_id, {"publish": decision})
    done_uri = services.storage.store_document(
        record.backfill_id, f"attempts/{attempt}/done.json", done.to_json().encode()
    )
    run, _ = trigger_run(
        services,
        backfill_id=record.backfill_id,
        config_uri=record.config_uri or "",
        plan_uri=record.plan_uri or "",
        result_uri=original_result_uri(services, record),
        attempt=attempt,
        done_uri=done_uri,
    )
    return (
        f"published {held} by {call.by}; attempt {attempt} runs the {len(remaining)} steps that waited "
        f"(DAG run {run.run.run_id})"
    )


def discard(call: ActionCall) -> str:
    """What the backfill staged removed (a publish under way rolled back first), the warehouse
    unchanged by it: DISCARDED, claims released (what waited starts)."""
    services, record, began = call.services, call.record, call.action
    if (
        record.state is BackfillState.DISCARDED
        and began.resumed
        and began.basis_state is BackfillState.AWAITING_PUBLISH
    ):
        release_claims(
            services, record.backfill_id, now=call.now
        )  # the earlier delivery may have died before it
        return record.reason or f"discarded by {call.by}"
    if record.state is not BackfillState.AWAITING_PUBLISH:
        raise ControlRefusedError(
            f"cannot discard {record.backfill_id}: it is {record.state}; only a backfill AWAITING_PUBLISH "
            "has staged steps to discard"
            + ("; undo it instead" if record.state is BackfillState.SUCCEEDED else "")
        )
    publisher = _publisher(call, record)
    try:
        manifests = publishing.unfinished(publisher, record.backfill_id)
        publishing.reachable(publisher, [m for m in manifests if m.state is ManifestState.PUBLISHING])
        for manifest in manifests:
            publisher.discard(manifest)
    except (PublishError, publishing.PublishUnavailableError) as error:
        raise _refused("discard", record, error) from None
    steps = sorted({m.step_id for m in manifests})
    why = (
        f"discarded by {call.by}: {len(steps)} staged step{'s' if len(steps) != 1 else ''} removed "
        f"({', '.join(steps) or 'nothing was left staged'}); the warehouse is as it was: {call.request.reason}"
    )
    _decided(call, record, BackfillState.DISCARDED, why, "discard", steps=steps)
    release_claims(services, record.backfill_id, now=call.now)
    report_decision(services, record, BackfillState.DISCARDED, why, now=call.now)
    return why


def undo(call: ActionCall) -> str:
    """Every partition the backfill published back to what it was (the newest publish first),
    unless a later backfill republished one (undo that one first), the backups expired, or a
    partition changed outside backfills: each a located refusal before any change. UNDONE,
    an OpenLineage run whose outputs are the restored partitions."""
    services, record, began = call.services, call.record, call.action
    if record.state is BackfillState.UNDONE:
        if began.resumed and began.basis_state is BackfillState.SUCCEEDED:
            return record.reason or f"undone by {call.by}"
        return "already undone; nothing to do"
    if record.state is not BackfillState.SUCCEEDED:
        raise ControlRefusedError(
            f"cannot undo {record.backfill_id}: it is {record.state}; only a SUCCEEDED backfill is undone"
            + ("; discard it instead" if record.state is BackfillState.AWAITING_PUBLISH else "")
        )
    publisher = _publisher(call, record)
    plan = _plan(services, record)
    # The partitions change under nobody else's feet: the backfill claims its steps and dates
    # again for the undo (refused while an overlapping backfill is active).
    admission = admit(services, backfill_id=record.backfill_id, plan=plan, submitted_at=call.now.isoformat())
    try:
        if not isinstance(admission, Admitted):
            raise ControlRefusedError(
                f"cannot undo {record.backfill_id} now: {_blocking(admission)} is active over the same steps "
                "and dates; undo when it ends"
            )
        try:
            manifests = publisher.manifests(record.backfill_id)
            publishing.reachable(publisher, manifests)
            undone = publisher.undo(record.backfill_id, by=call.by)
        except (PublishError, publishing.PublishUnavailableError) as error:
            raise _refused("undo", record, error) from None
        restored = publishing.restored_partitions(undone)
        count = sum(len(partitions) for partitions in restored.values())
        why = (
            f"undone by {call.by}: {count} partitions of {len(restored)} tables are back to what they were "
            f"before the backfill: {call.request.reason}"
        )
        _decided(call, record, BackfillState.UNDONE, why, "undo", partitions=count)
    finally:
        release_claims(services, record.backfill_id, now=call.now)
    if services.lineage_events is not None:
        backfill_undone(
            services.lineage_events,
            services.lineage_events.facts(
                backfill_id=record.backfill_id, attempt=record.run_attempt, config_uri=record.config_uri
            ),
            restored,
            when=call.now,
        )
    report_decision(services, record, BackfillState.UNDONE, why, now=call.now)
    return why


def _decision(call: ActionCall, record: StatusRecord, action: str, **extra: Any) -> dict[str, Any]:
    """The record's `publish` attribute with the person's decision (`action`) added."""
    return publishing.with_decision(
        record, action, by=call.by, at=call.now, reason=call.request.reason, **extra
    )


def _decided(
    call: ActionCall, record: StatusRecord, target: BackfillState, why: str, action: str, **extra: Any
) -> None:
    """The person's decision moved the backfill to `target`: the reason and the decision recorded."""
    attributes = {"reason": why[:2000], "publish": _decision(call, record, action, **extra)}
    _transition(call, record, target, why, by=call.by, attributes=attributes)


def _publisher(call: ActionCall, record: StatusRecord) -> Publisher:
    try:
        return publishing.publisher_for(call.services, record)
    except publishing.PublishUnavailableError as error:
        raise ControlRefusedError(str(error)) from None


def _refused(action: str, record: StatusRecord, error: Exception) -> ControlRefusedError:
    """A publish refusal (or a table out of reach) as the control document's located refusal.
    A failing catalog or storage (a ServiceError) is raised as it is: the redelivery resumes
    the action from the manifests."""
    if isinstance(error, ServiceError):
        raise error
    detail = publishing.refusal(error) if isinstance(error, PublishError) else str(error)
    later = getattr(error, "later_backfills", None)
    hint = f" (undo {', '.join(later)} first)" if later else ""
    return ControlRefusedError(f"cannot {action} {record.backfill_id}: {detail}{hint}")


ACTIONS: dict[ControlAction, Action] = {
    "cancel": cancel,
    "retry": retry,
    "start": start,
    "approve": approval.approve,  # the approval gate's
    "reject": approval.reject,
    "publish": publish,
    "discard": discard,
    "undo": undo,
}


# -- pieces ---------------------------------------------------------------------------------------
def release_claims(services: ModeServices, backfill_id: str, *, now: datetime) -> list[str]:
    """Release the backfill's claims and start the queued backfills that can run now."""
    if services.claims is None:
        return []
    storage = services.storage
    control_uri = f"s3://{storage.bucket}/{services.settings.control_prefix}"
    return release_and_start_queued(
        services.claims(), backfill_id, control_uri=control_uri, now=now, s3_client=storage.s3_client
    )


def _plan(services: ModeServices, record: StatusRecord) -> Plan:
    plan = services.storage.load_plan(record.plan_uri) if record.plan_uri else None
    if plan is None:
        raise ControlRefusedError(f"backfill {record.backfill_id} has no stored plan")
    return plan


def _transition(
    call: ActionCall,
    record: StatusRecord,
    target: BackfillState,
    detail: str,
    *,
    attributes: dict[str, Any] | None = None,
    by: str | None = None,
) -> None:
    try:
        call.services.status.transition(
            record.backfill_id, target, detail=detail[:2000], attributes=attributes, by=by
        )
    except TransitionRejectedError as error:  # it moved on meanwhile (the DAG finished)
        raise ControlRefusedError(f"the backfill changed state meanwhile: {error}") from None


def storage_uri(storage: Any, backfill_id: str, name: str) -> str:
    return f"s3://{storage.bucket}/{storage.backfill_key(backfill_id, name)}"


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time(0), tzinfo=UTC)


def _finished_steps(record: StatusRecord) -> str:
    progress = record.progress or {}
    if progress.get("steps_total"):
        return f"; {progress.get('steps_done', 0)} of {progress['steps_total']} steps had finished"
    return ""


def _blocking(admission: Queued | Refused) -> str:
    return ", ".join(admission.blocking) if isinstance(admission, Queued) else admission.blocking
