"""Control documents: `control/<backfill id>/<action>-<timestamp>.(json|yaml)` in the config
bucket, picked up by the trigger function like a config, acted on once.

- `cancel`: not yet triggered (RECEIVED, PLANNED, AWAITING_APPROVAL, QUEUED) -> CANCELLED, never triggered;
  triggered or running -> the DAG run is failed through the API (Airflow stops its running
  tasks: the Spark job gets SIGTERM and stops at a partition boundary, running DAG reruns are
  failed, queued ones never start) -> CANCELLED. A replay backfill -> CANCELLED; its tasks
  stop at their next batch. Cancelling a CANCELLED backfill is a no-op; a finished one
  (SUCCEEDED, FAILED, REJECTED) is refused.
- `retry`: FAILED or CANCELLED -> a new DAG run attempt that skips every step and (DAG,
  date) that succeeded in earlier attempts. Running, queued or succeeded -> refused.
- `start` (the orchestrator's own): a QUEUED backfill whose blocking backfills ended.
- `approve` / `reject`: a backfill AWAITING_APPROVAL (trigger/approval.py): approve -> admitted
  and triggered (or QUEUED behind an overlap); reject -> REJECTED. With a policy, every action
  but `start` is checked first (`policy.check_action`: grants, four eyes, expiry); an approval
  after the request expired moves the backfill to REJECTED and is refused.

Each document acts for its uploader (the S3 event's principal), or, when a delegate wrote it
(the Slack interactivity function, CONTROL_DELEGATES), for the `requested_by` it names; that
principal is kept in the history entries the action writes.

Every document ends in a result file (`results/control/...result.json`), a reply in the
backfill's Slack thread and, when it changed something, the status history. Claims are
released when a backfill ends here, and the queued backfills that can then run are started
by `start` documents (auditable, and retried by the platform like any upload)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from time import sleep as wait_seconds
from typing import Any

from backfill_orchestrator._compat import StrEnum
from backfill_orchestrator.claims import Admitted, Queued, Refused
from backfill_orchestrator.claims.release import release_and_start_queued
from backfill_orchestrator.config.errors import InvalidConfigError
from backfill_orchestrator.contracts import (
    AttemptDone,
    BackfillReport,
    ControlRequest,
    InvalidDocumentError,
    LocatedError,
    ResultFile,
    ResultOutcome,
)
from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.contracts.steps import StepStatus
from backfill_orchestrator.errors import ROOT, ConfigIssue, UserError
from backfill_orchestrator.lineage_events import backfill_aborted
from backfill_orchestrator.notify import Notifier, status_message
from backfill_orchestrator.notify.notifier import MetricsSink
from backfill_orchestrator.parsing import format_for, load_document
from backfill_orchestrator.policy import ApprovalRefusedError
from backfill_orchestrator.status import BackfillState, StatusRecord, TransitionRejectedError
from backfill_orchestrator.trigger import approval
from backfill_orchestrator.trigger.events import Upload
from backfill_orchestrator.trigger.outcomes import Disposition
from backfill_orchestrator.trigger.runs import ModeServices, admit, dag_run_id, trigger_run
from backfill_orchestrator.trigger.storage import ConfigGoneError, ConfigTooLargeError

log = logging.getLogger(__name__)
NOT_STARTED = frozenset(
    {BackfillState.RECEIVED, BackfillState.PLANNED, BackfillState.AWAITING_APPROVAL, BackfillState.QUEUED}
)
RUNNING = frozenset({BackfillState.TRIGGERED, BackfillState.RUNNING})
RETRYABLE = frozenset({BackfillState.FAILED, BackfillState.CANCELLED})
RERUN_STATES = ("queued", "running")


class ControlRefusedError(UserError):
    """The action is not allowed for this backfill now; says why."""


class ControlResult(StrEnum):
    """What became of one control document (its result file's `outcome`, but for duplicate and ignored)."""

    DONE = "done"  # acted on
    REFUSED = "refused"  # not allowed for this backfill now (its state, the policy)
    REJECTED = "rejected"  # not a valid control document
    DUPLICATE = "duplicate"  # acted on already: nothing done, nothing written
    IGNORED = "ignored"  # deleted before it was read


# The upload's outcome (the handler's answer) for each control result.
DISPOSITION_OF: dict[ControlResult, Disposition] = {
    ControlResult.DONE: Disposition.ACCEPTED,
    ControlResult.REFUSED: Disposition.REJECTED,
    ControlResult.REJECTED: Disposition.REJECTED,
    ControlResult.DUPLICATE: Disposition.DUPLICATE,
    ControlResult.IGNORED: Disposition.IGNORED,
}


@dataclass(frozen=True)
class ControlOutcome:
    result: ControlResult
    backfill_id: str | None
    state: str | None
    detail: str
    retry: bool = False

    @property
    def disposition(self) -> Disposition:
        return DISPOSITION_OF[self.result]


@dataclass(kw_only=True)
class ControlService:
    services: ModeServices
    notifier: Notifier
    metrics: MetricsSink
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    sleep: Callable[[float], None] = field(default=wait_seconds)

    # -- one document ----------------------------------------------------------------------
    def handle(self, upload: Upload) -> ControlOutcome:
        storage, settings = self.services.storage, self.services.settings
        try:
            body = storage.read_upload(upload, max_bytes=ControlRequest.max_bytes)
        except ConfigGoneError as error:
            return ControlOutcome(ControlResult.IGNORED, None, None, str(error))
        except ConfigTooLargeError as error:
            return self._invalid(upload, [ConfigIssue(ROOT, str(error))])
        try:
            request = self._parse(upload, body)
        except (InvalidDocumentError, InvalidConfigError) as error:
            return self._invalid(upload, error.issues)
        folder = upload.key[len(settings.control_prefix) :].split("/", 1)[0]
        if folder != request.backfill_id:
            issue = ConfigIssue(
                "backfill_id", f"{request.backfill_id!r} is not the folder it was dropped in ({folder!r})"
            )
            return self._invalid(upload, [issue])
        status = self.services.status
        record = status.get(request.backfill_id)
        if record is None:
            return self._refused(
                upload, request, None, f"unknown backfill {request.backfill_id!r}: no status record"
            )
        if not status.add_upload(request.backfill_id, upload.upload_id, attribute="controls"):
            if not approval.resumable(self.services, upload, request, record):
                self._count("Duplicates")
                return ControlOutcome(
                    ControlResult.DUPLICATE, request.backfill_id, str(record.state), "already acted on"
                )
            self._count("ControlResumed")  # Lambda's retry of an approval that failed half-way
        try:
            actor = approval.authorize(
                self.services, upload=upload, request=request, record=record, now=self.clock()
            )
            detail = self._act(request, record, by=actor or request.requested_by)
        except ControlRefusedError as refusal:
            return self._refused(upload, request, record, str(refusal))
        except ApprovalRefusedError as refusal:  # the policy or the gate said no
            self._count("ControlPolicyRefused")
            return self._refused(upload, request, status.get(request.backfill_id) or record, str(refusal))
        record = status.get(request.backfill_id) or record
        self._count(f"Control{request.action.capitalize()}")
        self._write(upload, request, ControlResult.DONE, record, detail)
        by = actor if actor and actor != request.requested_by else None
        self.notifier.slack(
            request.backfill_id,
            status_message(
                backfill_id=request.backfill_id,
                state=str(record.state),
                detail=f"{request.action} by {request.requested_by}{f' ({by})' if by else ''}: {detail} "
                f"(reason: {request.reason})",
            ),
        )
        return ControlOutcome(ControlResult.DONE, request.backfill_id, str(record.state), detail)

    def _parse(self, upload: Upload, body: bytes) -> ControlRequest:
        document = load_document(
            body,
            error=InvalidConfigError,
            max_bytes=ControlRequest.max_bytes,
            fmt=format_for(upload.key),
            source=upload.key,
        )
        return ControlRequest.from_json(document, source=upload.key)

    # -- actions ---------------------------------------------------------------------------
    def _act(self, request: ControlRequest, record: StatusRecord, *, by: str) -> str:
        """`by`: who acts (the document's principal, else its requested_by)."""
        action = request.action
        if action == "cancel":
            return self.cancel(record, reason=request.reason, by=by)
        if action == "retry":
            return self.retry(record, by=by)
        if action == "start":
            return self.start(record)
        if action == "approve":
            return approval.approve(self.services, record, by=by, reason=request.reason, now=self.clock())
        return approval.reject(self.services, record, by=by, reason=request.reason, now=self.clock())

    def cancel(self, record: StatusRecord, *, reason: str, by: str) -> str:
        state = record.state
        if state is BackfillState.CANCELLED:
            return "already cancelled; nothing to do"
        if state in NOT_STARTED:
            self._transition(
                record, BackfillState.CANCELLED, f"cancelled by {by} before it was triggered: {reason}", by=by
            )
            self._release(record.backfill_id)
            return "cancelled before it was triggered; nothing ran"
        if state not in RUNNING:
            raise ControlRefusedError(
                f"cannot cancel: backfill {record.backfill_id} has already ended ({state})"
            )
        stopped = []
        if record.mode == "batch" and record.dag_run_id:
            stopped = self._stop_dag_runs(record)
        self._transition(
            record,
            BackfillState.CANCELLED,
            f"cancelled by {by}: {reason}",
            by=by,
            attributes={"reason": f"cancelled: {reason}"[:2000], "progress": record.progress},
        )
        self._release(record.backfill_id)
        if self.services.lineage_events is not None:  # the backfill's run ends ABORT in the lineage graph
            backfill_aborted(
                self.services.lineage_events,
                self.services.lineage_events.facts(
                    backfill_id=record.backfill_id,
                    attempt=record.run_attempt,
                    config_uri=record.config_uri,
                ),
                reason=reason,
            )
        if record.mode == "replay":
            return "cancelled: replay tasks stop at their next batch; unsent ones are skipped"
        finished = _finished_steps(record)
        return f"cancelled: stopped {', '.join(stopped) or 'nothing still running'}{finished}"

    def retry(self, record: StatusRecord, *, by: str) -> str:
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
        plan = self._plan(record)
        attempt = record.run_attempt + 1
        done = self._done_so_far(record, plan, attempt)
        remaining = [step for step in plan.steps if step.id not in done.steps_done]
        if not remaining:
            raise ControlRefusedError(f"cannot retry {record.backfill_id}: every step already succeeded")
        done_uri = self.services.storage.store_document(
            record.backfill_id, f"attempts/{attempt}/done.json", done.to_json().encode()
        )
        admission = admit(
            self.services,
            backfill_id=record.backfill_id,
            plan=plan,
            submitted_at=self.clock().isoformat(),
            skip=done,
        )
        if isinstance(admission, Admitted):
            trigger_run(
                self.services,
                backfill_id=record.backfill_id,
                config_uri=record.config_uri,
                plan_uri=record.plan_uri,
                result_uri=None,
                attempt=attempt,
                done_uri=done_uri,
            )
            return (
                f"attempt {attempt} triggered by {by}: reruns {len(remaining)} of {len(plan.steps)} steps "
                f"({len(done.steps_done)} succeeded earlier)"
            )
        raise ControlRefusedError(
            f"cannot retry {record.backfill_id} now: it overlaps {_blocking(admission)}; retry when it ends"
        )

    def start(self, record: StatusRecord) -> str:
        """A queued backfill: admitted now (its blockers ended) -> triggered; still blocked ->
        stays queued (a later release starts it)."""
        if record.state is not BackfillState.QUEUED:
            raise ControlRefusedError(
                f"nothing to start: backfill {record.backfill_id} is {record.state}, not QUEUED"
            )
        plan = self._plan(record)
        admission = admit(
            self.services, backfill_id=record.backfill_id, plan=plan, submitted_at=record.created_at
        )
        if not isinstance(admission, Admitted):
            return f"still waiting for {_blocking(admission)}"
        source = self.services.storage
        result_uri = None
        if record.source_uri and record.source_uri.startswith(f"s3://{source.bucket}/"):
            key = record.source_uri[len(f"s3://{source.bucket}/") :]
            result_uri = source.result_uri(Upload(bucket=source.bucket, key=key))
        run, _ = trigger_run(
            self.services,
            backfill_id=record.backfill_id,
            config_uri=record.config_uri or "",
            plan_uri=record.plan_uri or "",
            result_uri=result_uri,
        )
        return f"started: the backfills it waited for have ended (DAG run {run.run.run_id})"

    # -- pieces ----------------------------------------------------------------------------
    def _stop_dag_runs(self, record: StatusRecord) -> list[str]:
        """Fail the backfill's DAG run, then the reruns of its DAG steps still queued or running."""
        airflow = self.services.airflow()
        dag_id = record.dag_id or self.services.settings.backfill_dag_id
        stopped = []
        run_id = record.dag_run_id or dag_run_id(record.backfill_id, record.run_attempt)
        if airflow.fail_dag_run(dag_id, run_id):
            stopped.append(f"DAG run {dag_id}/{record.dag_run_id}")
            keep_failed(
                airflow,
                dag_id,
                run_id,
                seconds=self.services.settings.cancel_confirm_seconds,
                sleep=self.sleep,
            )
        plan = self._plan(record)
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

    def _done_so_far(self, record: StatusRecord, plan: Plan, attempt: int) -> AttemptDone:
        """What earlier attempts finished: the last backfill report's succeeded steps and
        succeeded (DAG, date) reruns, plus what the attempt before it had found done."""
        storage = self.services.storage
        steps_done: set[str] = set()
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

    def _plan(self, record: StatusRecord) -> Plan:
        plan = self.services.storage.load_plan(record.plan_uri) if record.plan_uri else None
        if plan is None:
            raise ControlRefusedError(f"backfill {record.backfill_id} has no stored plan")
        return plan

    def _transition(
        self,
        record: StatusRecord,
        target: BackfillState,
        detail: str,
        *,
        attributes: dict[str, Any] | None = None,
        by: str | None = None,
    ) -> None:
        try:
            self.services.status.transition(
                record.backfill_id, target, detail=detail[:2000], attributes=attributes, by=by
            )
        except TransitionRejectedError as error:  # it moved on meanwhile (the DAG finished)
            raise ControlRefusedError(f"the backfill changed state meanwhile: {error}") from None

    def _release(self, backfill_id: str) -> None:
        """Drop the backfill's claims; start (by a `start` document) what waited for it."""
        release_claims(self.services, backfill_id, now=self.clock())

    # -- answers ---------------------------------------------------------------------------
    def _invalid(self, upload: Upload, issues: list[ConfigIssue]) -> ControlOutcome:
        self._count("ControlRejected")
        self._write_document(
            upload,
            ResultFile(
                source=upload.uri,
                outcome=ResultOutcome.REJECTED,
                backfill_id=None,
                state=None,
                status_id=None,
                errors=[LocatedError(location=i.location, message=i.message) for i in issues[:100]],
                written_at=self.clock(),
            ),
        )
        return ControlOutcome(
            ControlResult.REJECTED, None, None, f"{len(issues)} errors: {issues[0] if issues else ''}"
        )

    def _refused(
        self, upload: Upload, request: ControlRequest, record: StatusRecord | None, why: str
    ) -> ControlOutcome:
        self._count("ControlRefused")
        self._write(upload, request, ControlResult.REFUSED, record, why)
        if record is not None:
            self.notifier.slack(
                request.backfill_id,
                status_message(
                    backfill_id=request.backfill_id,
                    state=str(record.state),
                    detail=f"{request.action} by {request.requested_by} refused: {why}",
                ),
            )
        return ControlOutcome(
            ControlResult.REFUSED, request.backfill_id, str(record.state) if record else None, why
        )

    def _write(
        self,
        upload: Upload,
        request: ControlRequest,
        outcome: ControlResult,
        record: StatusRecord | None,
        detail: str,
    ) -> None:
        self._write_document(
            upload,
            ResultFile(
                source=upload.uri,
                outcome=ResultOutcome(outcome),
                backfill_id=request.backfill_id,
                state=record.state if record else None,
                status_id=request.backfill_id if record else None,
                action=request.action,
                reason=detail[:2000],
                status_command=f"backfill status {request.backfill_id}" if record else None,
                written_at=self.clock(),
            ),
        )

    def _write_document(self, upload: Upload, document: ResultFile) -> None:
        self.services.storage.write_result(upload, document)

    def _count(self, name: str) -> None:
        self.metrics.add_metric(name=name, unit="Count", value=1)


def release_claims(services: ModeServices, backfill_id: str, *, now: datetime) -> list[str]:
    """Release the backfill's claims and start the queued backfills that can run now."""
    if services.claims is None:
        return []
    storage = services.storage
    control_uri = f"s3://{storage.bucket}/{services.settings.control_prefix}"
    return release_and_start_queued(
        services.claims(), backfill_id, control_uri=control_uri, now=now, s3_client=storage.s3_client
    )


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
