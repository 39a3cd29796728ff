"""The sweep's reconciliation of the status table with Airflow (the schedule invokes the trigger
with `{"source": "backfill.sweep"}` every 5 minutes; `claims.sweep_queued` does the rest).

A batch backfill's record is finished by its DAG run's `finish` task. When that never happens
(the worker was lost, the run was failed by hand in Airflow, a cancel failed its run and then
ran out of retries), the record stays live (TRIGGERED, RUNNING) and holds its claims, and
everything queued behind it waits. So every sweep reads the live records not updated for
SWEEP_GRACE_SECONDS (the least recently updated first, at most SWEEP_MAX_RECORDS, within the
invocation's deadline), asks Airflow for each one's run, and finishes the record of a run that
ended (success, failed) more than the grace period ago: SUCCEEDED or FAILED from the run's
backfill report when the run wrote one, else from the run's state; then its claims are
released (what waited starts), its Slack thread and the submitter's result file are told. A
FAILED one is paged first, unless its incident is open already (the DAG's failure callback
paged and was lost before it recorded).
Each transition is conditional on the live state it leaves, so a `finish`, a cancel or
another sweep that gets there first wins and this one moves on."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from backfill_orchestrator.airflow_api import AirflowApiError, DagRun
from backfill_orchestrator.contracts import BackfillReport, InvalidDocumentError, StepStatus
from backfill_orchestrator.deadline import Deadline
from backfill_orchestrator.notify import Notifier, status_message
from backfill_orchestrator.status import BackfillState, StatusRecord, TransitionRejectedError
from backfill_orchestrator.status.stale import stale_records
from backfill_orchestrator.trigger.approval import original_upload
from backfill_orchestrator.trigger.control_actions import release_claims
from backfill_orchestrator.trigger.runs import ModeServices

log = logging.getLogger(__name__)
LIVE_RUN_STATES = (BackfillState.TRIGGERED, BackfillState.RUNNING)
ENDED = {"success": BackfillState.SUCCEEDED, "failed": BackfillState.FAILED}
CHECK_RESERVE_SECONDS = 10  # what a sweep keeps for finishing the record it checks last


@dataclass(frozen=True)
class Swept:
    finished: list[str] = field(default_factory=list)  # records finished from their ended run
    started: list[str] = field(default_factory=list)  # queued backfills given a `start` document


def finish_ended_runs(
    services: ModeServices, notifier: Notifier, *, now: datetime, deadline: Deadline | None = None
) -> Swept:
    settings = services.settings
    grace = timedelta(seconds=settings.sweep_grace_seconds)
    records = stale_records(
        dynamodb_client=services.status.client,
        table_name=services.status.table_name,
        states=LIVE_RUN_STATES,
        updated_before=now - grace,
        limit=settings.sweep_max_records,
    )
    finished: list[str] = []
    started: list[str] = []
    for record in records:
        if deadline is not None and deadline.remaining() < CHECK_RESERVE_SECONDS:
            log.info("sweep: out of time; the records not checked are the next sweep's")
            break
        if record.mode != "batch" or not record.dag_run_id:
            continue  # replay backfills end by their tasks; a record without a run has none to ask
        dag_id = record.dag_id or settings.backfill_dag_id
        try:
            run = services.airflow().get_dag_run(dag_id, record.dag_run_id)
        except AirflowApiError as error:  # Airflow is down or refuses: the next sweep asks again
            log.warning("sweep: cannot read DAG run %s/%s: %s", dag_id, record.dag_run_id, str(error)[:300])
            break
        if run is None or run.state not in ENDED:
            continue
        if run.end_date is not None and run.end_date > now - grace:
            continue  # its `finish` may still be recording it
        try:
            started += _finish(services, notifier, record, run, now=now)
        except TransitionRejectedError as error:  # recorded meanwhile (its finish, a cancel)
            log.info("sweep: %s moved on meanwhile: %s", record.backfill_id, error)
            continue
        finished.append(record.backfill_id)
    return Swept(finished=finished, started=started)


def _finish(
    services: ModeServices, notifier: Notifier, record: StatusRecord, run: DagRun, *, now: datetime
) -> list[str]:
    report, report_uri = _report(services, record, run)
    ended = run.end_date.isoformat() if run.end_date else "a moment unknown"
    found = f"the DAG run {run.dag_id}/{run.run_id} ended {run.state} in Airflow at {ended}; its finish did not record it (found by the sweep)"
    if report is not None:
        state = {
            "succeeded": BackfillState.SUCCEEDED,
            "awaiting_publish": BackfillState.AWAITING_PUBLISH,
        }.get(report.status, BackfillState.FAILED)
        summary = report.figures.text(total_steps=len(report.steps))
        if report.succeeded:
            detail = f"{summary}; report {report_uri}; {found}"
        elif report.awaiting_publish:
            waiting = [p.step for p in report.problems if p.status is StepStatus.AWAITING_PUBLISH]
            detail = f"awaiting publish: {', '.join(waiting[:20])}; {summary}; {found}"
        else:
            failed = [problem.step for problem in report.problems]
            detail = f"{len(failed)} step(s) failed or not run: {', '.join(failed[:20])}; {summary}; {found}"
    else:
        state = ENDED[str(run.state)]
        detail = found
    attributes = {"reason": detail[:2000], "retryable": False} if state is BackfillState.FAILED else None
    if state is BackfillState.FAILED and not record.pagerduty_open:
        # Paged before the record ends: a crash in between leaves it live for the next sweep,
        # whose page joins the same incident (dedup key = backfill id). Not again when the
        # DAG's failure callback paged and then could not record it.
        notifier.page(
            record.backfill_id,
            summary=f"Backfill {record.backfill_id} failed: {detail}"[:1000],
            component="sweep",
            details={"dag_run_id": run.run_id, "reason": detail[:500]},
            links=[{"href": record.dag_run_url, "text": "Airflow run"}] if record.dag_run_url else None,
        )
    recorded = services.status.transition(
        record.backfill_id, state, detail=detail[:1000], attributes=attributes, only_from=LIVE_RUN_STATES
    )
    log.warning("sweep: %s recorded %s: %s", record.backfill_id, state, detail[:300])
    # A backfill awaiting publish keeps its claims: what it staged replaces those partitions.
    held = state is BackfillState.AWAITING_PUBLISH
    started = [] if held else release_claims(services, record.backfill_id, now=now)
    notifier.slack(
        record.backfill_id,
        status_message(
            backfill_id=record.backfill_id, state=str(state), detail=detail, run_url=record.dag_run_url
        ),
        record=recorded,
    )
    _follow_result(
        services, record, state=state, reason=detail if state is BackfillState.FAILED else None, now=now
    )
    return started


def _report(services: ModeServices, record: StatusRecord, run: DagRun) -> tuple[BackfillReport | None, str]:
    """The run's backfill report (beside its plan), when this run wrote it."""
    if not record.plan_uri:
        return None, ""
    uri = record.plan_uri.rsplit("/", 1)[0] + "/backfill_report.json"
    body = services.storage.read_document(uri)
    if not body:
        return None, uri
    try:
        report = BackfillReport.from_json(body, source=uri)
    except InvalidDocumentError as error:
        log.warning("sweep: unreadable backfill report %s: %s", uri, str(error)[:300])
        return None, uri
    return (report if report.dag_run_id == run.run_id else None), uri


def _follow_result(
    services: ModeServices, record: StatusRecord, *, state: BackfillState, reason: str | None, now: datetime
) -> None:
    """The submitter's result file follows the backfill to its end, as the DAG's finish would
    have kept it. Best effort: the record says it already."""
    upload = original_upload(services, record)
    if upload is None:
        return
    storage = services.storage
    try:
        current = storage.read_result(upload)
        if current is None:
            return
        update = {"state": state, "reason": reason, "written_at": now}
        storage.write_result(upload, current.model_copy(update=update))
    except Exception as error:  # noqa: BLE001 - the record and the thread say it
        log.warning("sweep: result file of %s not updated: %s", upload.uri, str(error)[:300])
