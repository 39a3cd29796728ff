"""From S3 upload events to backfills: validate, claim idempotently, run the mode, record,
tell people. One upload never stops another; system failures are raised at the end so
Lambda retries the event (and, after its retries, sends it to the on-failure queue).

Per upload:
1. not a config under the incoming prefix -> ignored;
2. read (size limit first) and validate -> invalid: REJECTED record keyed
   `rejected-<upload id>`, result file with the located errors, Slack; no page;
3. claim the backfill id: a new id -> RECEIVED; the same upload again -> duplicate (nothing),
   unless the earlier attempt FAILED retryably or cannot still be running (its lease ran out,
   or it is held by our own Lambda request id: a Lambda retry of a dead attempt) -> it is
   taken over; another upload of the same config -> "already known" (result file + Slack);
4. the mode's runner plans/stores/triggers within the attempt's deadline; the service records
   REJECTED/FAILED, writes the result file and notifies; a system failure -> FAILED
   (retryable), result file, page, raise. An outcome that cannot be recorded (status write or
   result file failing) also raises, so Lambda's retries (then the on-failure queue) follow.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from aws_lambda_powertools import Logger

from backfill_orchestrator.config import (
    BackfillConfig,
    ConfigIssue,
    InvalidConfigError,
    parse_config,
)
from backfill_orchestrator.config import (
    backfill_id as compute_backfill_id,
)
from backfill_orchestrator.contracts import LocatedError, ResultFile, ResultOutcome
from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.deadline import Deadline, deadline_scope
from backfill_orchestrator.errors import ROOT, BackfillError, PolicyRefusal, ServiceError, UserError
from backfill_orchestrator.notify import (
    Notifier,
    already_known_message,
    rejection_message,
    status_message,
)
from backfill_orchestrator.notify.notifier import MetricsSink
from backfill_orchestrator.settings import DeploymentSettings
from backfill_orchestrator.status import (
    BackfillState,
    RecordExistsError,
    StatusRecord,
    StatusStore,
    TransitionRejectedError,
)
from backfill_orchestrator.trigger.approval import submission_attributes
from backfill_orchestrator.trigger.events import (
    MalformedEventError,
    Upload,
    event_records,
    upload_from_record,
)
from backfill_orchestrator.trigger.modes import MODE_RUNNERS
from backfill_orchestrator.trigger.outcomes import (
    OUTCOME_OF,
    Disposition,
    Ending,
    Finished,
    started_message,
)
from backfill_orchestrator.trigger.runs import (
    Announce,
    ModeOutcome,
    ModeRequest,
    ModeServices,
    first_run,
    plan_summary,
    run_plan,
)
from backfill_orchestrator.trigger.storage import ConfigGoneError, ConfigTooLargeError, StoredBackfill

if TYPE_CHECKING:
    from backfill_orchestrator.trigger.read_ahead import ReadAhead

DEFAULT_LEASE_SECONDS = 900  # Lambda's longest timeout: an attempt older than this is dead
MAX_DETAIL = 300  # per upload in TriggerFailedError's message (and so in the log line)


@dataclass(frozen=True)
class UploadResult:
    """What became of one upload: the handler's answer for it, one per record of the event."""

    source_uri: str
    disposition: Disposition
    backfill_id: str | None = None
    state: str | None = None
    detail: str | None = None
    retry: bool = False  # a system failure: Lambda should deliver the event again


class TriggerFailedError(ServiceError, RuntimeError):
    """At least one upload hit a system failure; raised after all uploads of the event were
    handled so that Lambda retries the event (the others are duplicates by then)."""

    def __init__(self, failures: list[UploadResult]):
        self.failures = failures
        lines = "; ".join(f"{f.source_uri}: {(f.detail or '')[:MAX_DETAIL]}" for f in failures[:10])
        more = f"; and {len(failures) - 10} more" if len(failures) > 10 else ""
        super().__init__(f"{len(failures)} upload(s) failed and will be retried: {lines}{more}")


@dataclass(frozen=True)
class Attempt:
    """One invocation's claim on the uploads it handles."""

    lease_seconds: int = DEFAULT_LEASE_SECONDS
    # Lambda's aws_request_id: the same for Lambda's retries of one event, which start only
    # after the previous attempt ended; None (tests, scripts) takes over by lease only.
    request_id: str | None = None
    deadline: Deadline | None = None  # for Marquez/Airflow calls; None: no budget

    def claim(
        self, status: StatusStore, record_id: str, upload: Upload, attributes: Mapping[str, Any]
    ) -> StatusRecord:
        """A new record for the upload, leased to this attempt; RecordExistsError when one exists."""
        return status.create(
            record_id,
            upload_id=upload.upload_id,
            lease_seconds=self.lease_seconds,
            lease_holder=self.request_id,
            detail=f"from {upload.uri}",
            attributes=attributes,
        )

    def take_over(
        self, status: StatusStore, existing: StatusRecord, detail: str, *, reopen: bool = False
    ) -> StatusRecord | None:
        """The existing record leased to this attempt, when that is safe (StatusStore.reclaim)."""
        return status.reclaim(
            existing.backfill_id,
            lease_seconds=self.lease_seconds,
            holder=self.request_id,
            current=existing,
            detail=detail,
            reopen=reopen,
        )

    def holds(self, record: StatusRecord) -> bool:
        """The record's lease is this invocation's: Lambda's retry of an attempt that died."""
        return bool(self.request_id) and record.lease_holder == self.request_id


@dataclass(kw_only=True)
class TriggerService:
    """The trigger's business logic; every client is passed in (wiring.py builds it per invocation)."""

    services: ModeServices
    notifier: Notifier
    metrics: MetricsSink
    logger: Logger | logging.Logger = field(default_factory=lambda: logging.getLogger(__name__))
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    # Starts what a valid config will wait for, side by side with its claim (the wiring's
    # `read_ahead`); None: each read is sent when it is needed.
    read_ahead: Callable[[BackfillConfig], ReadAhead] | None = None

    @property
    def settings(self) -> DeploymentSettings:
        return self.services.settings

    # -- event ---------------------------------------------------------------------------
    def handle_event(
        self,
        event: Any,
        *,
        lease_seconds: int = DEFAULT_LEASE_SECONDS,
        request_id: str | None = None,
        deadline: Deadline | None = None,
    ) -> list[UploadResult]:
        """Handle every record; raise TriggerFailedError afterwards if any failed, or
        MalformedEventError if the event (or a record) announces no upload, so that it lands
        on the on-failure queue rather than vanish. `request_id` and `deadline` come from the
        Lambda context (see handler.py)."""
        attempt = Attempt(lease_seconds=lease_seconds, request_id=request_id, deadline=deadline)
        try:
            records = event_records(event)
        except MalformedEventError as error:
            self.logger.error("the event announces no upload: %s", error)
            self._count("MalformedEvents")
            raise
        results: list[UploadResult] = []
        malformed: list[str] = []
        for index, record in enumerate(records):
            try:
                upload = upload_from_record(record)
            except MalformedEventError as error:
                self.logger.error("record %d announces no upload: %s", index, error)
                self._count("MalformedEvents")
                malformed.append(f"record {index}: {error}")
                continue
            try:
                if self.services.storage.is_control_document(
                    upload, control_prefix=self.settings.control_prefix
                ):
                    results.append(self.handle_control(upload, attempt=attempt))
                    continue
                results.append(self.handle_upload(upload, attempt=attempt))
            except Exception as error:  # a bug, or an outage before the outcome could be recorded
                reason = f"{type(error).__name__}: {error}"[:2000]
                self.logger.error(
                    "upload %s failed before its outcome was recorded: %s",
                    upload.uri,
                    reason,
                    exc_info=not isinstance(error, BackfillError),
                )
                self._count("Failed")
                self._write_result(
                    upload,
                    self._result_document(
                        upload, Disposition.FAILED, None, None, reason=reason, retrying=True
                    ),
                )
                self.notifier.page(
                    f"upload-{upload.upload_id}",
                    summary=f"Backfill trigger could not process {upload.uri}: {type(error).__name__}",
                    details={"source": upload.uri, "error": reason[:1000]},
                )
                results.append(UploadResult(upload.uri, Disposition.FAILED, detail=reason, retry=True))
        failures = [r for r in results if r.retry]
        if failures:
            raise TriggerFailedError(failures)
        if malformed:
            raise MalformedEventError("; ".join(malformed))
        return results

    # -- one control document (trigger/control_documents.py) ---------------------------------------
    def handle_control(self, upload: Upload, *, attempt: Attempt | None = None) -> UploadResult:
        # Imported here: control documents (and the claims they use) are rare next to configs.
        from backfill_orchestrator.trigger.control_documents import ControlService

        attempt = attempt or Attempt()
        control = ControlService(
            services=self.services, notifier=self.notifier, metrics=self.metrics, clock=self.clock
        )
        with deadline_scope(attempt.deadline):
            outcome = control.handle(upload, lease_seconds=attempt.lease_seconds, holder=attempt.request_id)
        self.logger.info("control document %s: %s (%s)", upload.uri, outcome.result, outcome.detail[:500])
        return UploadResult(
            upload.uri, outcome.disposition, outcome.backfill_id, outcome.state, outcome.detail[:2000]
        )

    # -- one upload ----------------------------------------------------------------------
    def handle_upload(self, upload: Upload, *, attempt: Attempt | None = None) -> UploadResult:
        attempt = attempt or Attempt()
        storage = self.services.storage
        if not storage.is_incoming_config(upload):
            self.logger.info(
                "ignoring %s: not a .yaml/.yml/.json under %s", upload.uri, storage.incoming_prefix
            )
            return UploadResult(upload.uri, Disposition.IGNORED, detail="not a config upload")
        policy = self.settings.config_policy()
        try:
            body = storage.read_upload(upload, max_bytes=policy.max_bytes)
        except ConfigGoneError as error:
            self.logger.warning("ignoring %s: %s", upload.uri, error)
            return UploadResult(upload.uri, Disposition.IGNORED, detail=str(error))
        except ConfigTooLargeError as error:
            self._count("Received")
            return self._reject_invalid(upload, [ConfigIssue(ROOT, str(error))], attempt)
        self._count("Received")
        try:
            config = parse_config(body, source=upload.key, policy=policy)
        except InvalidConfigError as error:
            return self._reject_invalid(upload, error.issues, attempt)
        backfill_id = compute_backfill_id(config)
        with self._log_context(backfill_id):
            return self._handle_valid(upload, config, body, backfill_id, attempt)

    def _handle_valid(
        self, upload: Upload, config: BackfillConfig, body: bytes, backfill_id: str, attempt: Attempt
    ) -> UploadResult:
        if self.read_ahead is None:
            return self._claim_and_run(upload, config, body, backfill_id, attempt, self.services)
        with deadline_scope(attempt.deadline):  # the reads draw on the mode's budget
            ahead = self.read_ahead(config)
        try:
            return self._claim_and_run(
                upload, config, body, backfill_id, attempt, ahead.services(self.services)
            )
        finally:
            ahead.settle()

    def _claim_and_run(
        self,
        upload: Upload,
        config: BackfillConfig,
        body: bytes,
        backfill_id: str,
        attempt: Attempt,
        services: ModeServices,
    ) -> UploadResult:
        status = self.services.status
        try:
            record = attempt.claim(
                status,
                backfill_id,
                upload,
                {
                    "name": config.name,
                    "owner": config.owner,
                    "mode": config.mode,
                    "dry_run": config.dry_run,
                    "source_uri": upload.uri,
                    **submission_attributes(self.services, upload, config),
                },
            )
        except RecordExistsError as exists:
            # This very upload again (its record's first, or one remembered by add_upload: a
            # re-upload that reopened a rejected backfill and died), or another upload of it.
            again = upload.upload_id in exists.existing.uploads or not status.add_upload(
                backfill_id, upload.upload_id
            )
            if again:
                reclaimed = attempt.take_over(status, exists.existing, f"retry of {upload.uri}: taking over")
                if reclaimed is None:
                    if attempt.holds(exists.existing):
                        return self._report_again(upload, config, backfill_id, attempt)
                    if self._run_unrecorded(
                        config, exists.existing
                    ):  # another delivery of a dead attempt's event
                        self._record_found_run(exists.existing, attempt)
                    self.logger.info(
                        "duplicate delivery of %s (%s): nothing to do", upload.uri, exists.existing.state
                    )
                    self._count("Duplicates")
                    return UploadResult(
                        upload.uri, Disposition.DUPLICATE, backfill_id, str(exists.existing.state)
                    )
                self.logger.info(
                    "taking over %s (attempt %d, %s)", backfill_id, reclaimed.attempts, reclaimed.state
                )
                record = reclaimed
            else:  # another upload of the identical config: remembered now
                reopened = None
                if exists.existing.state is BackfillState.REJECTED:  # its cause may have been fixed since
                    reopened = attempt.take_over(
                        status, exists.existing, f"resubmitted as {upload.uri}: evaluated again", reopen=True
                    )
                if reopened is None:
                    return self._already_known(upload, exists.existing)
                self.logger.info("re-evaluating %s after its rejection", backfill_id)
                record = reopened

        self.logger.info("processing %s from %s (mode %s)", backfill_id, upload.uri, config.mode)
        request = ModeRequest(
            config=config,
            record=record,
            body=body,
            upload=upload,
            announce=self._announcer(upload, config, record),
            report=lambda reached: self._write_result(
                upload, self._outcome_document(upload, backfill_id, reached)
            ),
        )
        try:
            with deadline_scope(attempt.deadline):
                outcome = MODE_RUNNERS[config.mode](request, services)
        except (
            UserError,
            PolicyRefusal,
        ) as error:  # deterministic (e.g. a record too large): the same input fails again
            location, message = getattr(error, "location", None) or ROOT, str(error)[:2000]
            outcome = ModeOutcome(
                BackfillState.REJECTED, issues=[ConfigIssue(location, message)], reason=message
            )
        except Exception as error:
            return self._system_failure(upload, config, backfill_id, error)
        return self._finish(upload, config, backfill_id, record, outcome)

    # -- endings -------------------------------------------------------------------------
    def _finish(
        self,
        upload: Upload,
        config: BackfillConfig,
        backfill_id: str,
        record: StatusRecord,
        outcome: ModeOutcome,
    ) -> UploadResult:
        """The mode's end, as its row of OUTCOME_OF says: record it (unless the runner did), count
        it, write the result file, post to the thread (unless the runner announced it)."""
        state = outcome.state
        ending = OUTCOME_OF[state]
        if ending.metric is None or ending.message is None:
            raise ValueError(f"no mode ends an upload in {state}")  # a runner's bug: the event is retried
        thread_record = (
            self._record_end(backfill_id, outcome, ending) if ending.records is not None else record
        )
        self._count(ending.metric)
        written = outcome.reported  # sent by the runner beside its last write (ModeRequest.report)
        if written is None:
            written = self._write_result(upload, self._outcome_document(upload, backfill_id, outcome))
        if not outcome.announced:  # a batch run's message went out before TRIGGERED (_announcer)
            end = Finished(upload, config, record, outcome, lineage_url=self._lineage_url(config))
            # The record as this attempt last wrote it, or as claimed: the runner's writes since do not touch the thread.
            self.notifier.slack(
                backfill_id, ending.message(end), channel=config.notify.slack_channel, record=thread_record
            )
        if ending.resolves_page and record.pagerduty_open:  # an earlier attempt paged; this one got through
            self.notifier.resolve(backfill_id, enabled=config.notify.pagerduty)
        self.logger.info("%s: %s", backfill_id, ending.disposition)
        return UploadResult(
            upload.uri, ending.disposition, backfill_id, str(state), outcome.reason, retry=not written
        )

    def _record_end(self, backfill_id: str, outcome: ModeOutcome, ending: Ending) -> StatusRecord:
        attributes = {"reason": outcome.reason, **(ending.records or {})}
        if "errors" in ending.reports:
            attributes["errors"] = [issue.as_dict() for issue in outcome.issues]
        status = self.services.status
        try:
            return status.transition(backfill_id, outcome.state, detail=outcome.reason, attributes=attributes)
        except (
            TransitionRejectedError
        ):  # e.g. refused after PLANNED: REJECTED cannot follow, FAILED (final) can
            if ending.fallback is None:
                raise
            fallback = {**attributes, **(OUTCOME_OF[ending.fallback].records or {})}
            return status.transition(backfill_id, ending.fallback, detail=outcome.reason, attributes=fallback)

    def _outcome_document(self, upload: Upload, backfill_id: str, outcome: ModeOutcome) -> ResultFile:
        """The result file of a mode's outcome, as its row of OUTCOME_OF reports it."""
        ending = OUTCOME_OF[outcome.state]
        return self._result_document(
            upload, ending.disposition, backfill_id, outcome.state, **self._result_fields(ending, outcome)
        )

    def _result_fields(self, ending: Ending, outcome: ModeOutcome) -> dict[str, Any]:
        """The result file's fields the row reports."""
        fields: dict[str, Any] = {}
        if "errors" in ending.reports:
            fields["errors"] = outcome.issues
        if "reason" in ending.reports:
            fields["reason"] = outcome.reason
        if "plan" in ending.reports:
            fields["plan"] = plan_summary(outcome.plan) if outcome.plan else None
            fields["config_uri"] = outcome.stored.config_uri if outcome.stored else None
            fields["plan_uri"] = outcome.stored.plan_uri if outcome.stored else None
        if "run" in ending.reports:
            run_id = outcome.run.run.run_id if outcome.run else None
            fields["dag_id"] = self.settings.backfill_dag_id if run_id else None
            fields["dag_run_id"] = run_id
            fields["dag_run_url"] = outcome.run_url
        return fields

    @staticmethod
    def _recorded_fields(record: StatusRecord) -> dict[str, Any]:
        """The result file's fields a status record holds: its plan and DAG run, as
        `_result_fields` has them from a mode's outcome, and its reason."""
        return {
            "config_uri": record.config_uri,
            "plan_uri": record.plan_uri,
            "plan": record.plan_summary,
            "dag_id": record.dag_id,
            "dag_run_id": record.dag_run_id,
            "dag_run_url": record.dag_run_url,
            "reason": record.reason,
        }

    def _announcer(self, upload: Upload, config: BackfillConfig, record: StatusRecord) -> Announce:
        """The TRIGGERED message of a run this attempt created, posted before TRIGGERED is
        recorded so that the same write stores its thread. A crash between the post and that
        write leaves no thread on the record; the retry that takes over finds the run and
        posts nothing (it cannot know whether the post went out), and the DAG's start opens a
        thread then: never the same message twice, at worst a second top-level message."""

        def announce(plan: Plan, stored: StoredBackfill, run_url: str | None) -> tuple[str, str] | None:
            triggered = ModeOutcome(BackfillState.TRIGGERED, plan=plan, stored=stored, run_url=run_url)
            end = Finished(upload, config, record, triggered, lineage_url=self._lineage_url(config))
            message = started_message(end, note=None, picture_pending=not stored.picture)
            return self.notifier.open_thread(
                record.backfill_id, message, channel=config.notify.slack_channel, record=record
            )

        return announce

    def _system_failure(
        self, upload: Upload, config: BackfillConfig, backfill_id: str, error: Exception
    ) -> UploadResult:
        """Record FAILED (retryable), tell the user (result file), page, tell Slack; the caller
        raises. If even FAILED cannot be written, the record keeps this attempt's lease and
        request id, so Lambda's retry (same request id) takes it over."""
        reason = f"{type(error).__name__}: {error}"[:2000]
        self.logger.error(
            "backfill %s failed: %s", backfill_id, reason, exc_info=not isinstance(error, BackfillError)
        )
        self._count("Failed")
        unrecorded = failed = None
        try:
            failed = self.services.status.transition(
                backfill_id,
                BackfillState.FAILED,
                detail=reason[:500],
                attributes={"reason": reason, "retryable": True},
            )
        except Exception as store_error:  # the table itself may be what failed
            unrecorded = f"{type(store_error).__name__}: {store_error}"[:500]
            self.logger.error("could not record FAILED for %s: %s", backfill_id, unrecorded)
        self._write_result(
            upload,
            self._result_document(
                upload, Disposition.FAILED, backfill_id, BackfillState.FAILED, reason=reason, retrying=True
            ),
        )
        details = {"source": upload.uri, "owner": config.owner, "reason": reason}
        if unrecorded:
            details["status_write_error"] = unrecorded
        self.notifier.page(
            backfill_id,
            summary=f"Backfill {backfill_id} failed to start: {reason}"[:1024],
            enabled=config.notify.pagerduty,
            details=details,
        )
        self.notifier.slack(
            backfill_id,
            status_message(
                backfill_id=backfill_id,
                state="FAILED",
                detail=f"{reason[:500]} (it will be retried automatically)",
            ),
            channel=config.notify.slack_channel,
            record=failed,
        )
        return UploadResult(upload.uri, Disposition.FAILED, backfill_id, "FAILED", reason, retry=True)

    def _report_again(
        self, upload: Upload, config: BackfillConfig, backfill_id: str, attempt: Attempt
    ) -> UploadResult:
        """Lambda's retry of our own attempt (same request id) finds the record past the
        point of takeover: that attempt recorded a state and then died or raised, or the DAG
        run it started (late) moved the record on. Make sure the run is recorded and the user
        has a result file; the record is the source of truth."""
        record = self.services.status.get(backfill_id)
        if record is None:  # cannot happen after RecordExistsError; be explicit anyway
            raise LookupError(f"status record {backfill_id} vanished")
        if config.mode == "batch" and not config.dry_run and record.dag_run_id is None:
            record = self._record_found_run(record, attempt)
        if record.pagerduty_open and record.state is not BackfillState.FAILED:
            self.notifier.resolve(backfill_id, enabled=config.notify.pagerduty)
        reported = self.services.storage.read_result(upload)
        # Reported already: its outcome stands (the DAG's own rewrites of it follow the state),
        # unless it is one of this trigger's that the record has passed: a failure, or the
        # TRIGGERED sent beside a write that never landed while the DAG moved the record on.
        outdated = reported is not None and (
            reported.outcome == Disposition.FAILED or reported.state is BackfillState.TRIGGERED
        )
        if (
            reported is not None
            and reported.backfill_id == backfill_id
            and (not outdated or reported.state == record.state)
        ):
            self._count("Duplicates")
            return UploadResult(upload.uri, Disposition.DUPLICATE, backfill_id, str(record.state))
        disposition = OUTCOME_OF[record.state].disposition
        self.logger.info(
            "retry of %s: writing the result its earlier attempt did not (%s)", upload.uri, record.state
        )
        written = self._write_result(
            upload,
            self._result_document(
                upload,
                disposition,
                backfill_id,
                record.state,
                errors=[ConfigIssue(e.get("location", ROOT), e.get("message", "")) for e in record.errors]
                or None,
                **self._recorded_fields(record),
            ),
        )
        return UploadResult(
            upload.uri,
            disposition,
            backfill_id,
            str(record.state),
            "result written by a retry",
            retry=not written,
        )

    def _record_found_run(self, record: StatusRecord, attempt: Attempt) -> StatusRecord:
        """The DAG moved the record on before TRIGGERED was recorded: read the run back by its
        id (the backfill id) and record its id and link (and its config and plan, when the
        record has none)."""
        airflow, dag_id = self.services.airflow(), self.settings.backfill_dag_id
        with deadline_scope(attempt.deadline):
            run = first_run(self.services, record.backfill_id)
        if run is None:
            return record
        attributes: dict[str, Any] = {
            "dag_id": dag_id,
            "dag_run_id": run.run_id,
            "dag_run_url": airflow.run_url(dag_id, run.run_id),
        }
        if not record.plan_uri:  # no PLANNED was recorded: the run's conf names config and plan
            attributes = {**run_plan(self.services, run.conf)[1], **attributes}
        self.services.status.annotate(record.backfill_id, attributes)
        self.logger.info("recorded DAG run %s/%s found by a retry", dag_id, run.run_id)
        return replace(record, **attributes)

    @staticmethod
    def _run_unrecorded(config: BackfillConfig, record: StatusRecord) -> bool:
        """The DAG moved the record on from RECEIVED before its attempt recorded TRIGGERED."""
        return (
            config.mode == "batch"
            and not config.dry_run
            and record.dag_run_id is None
            and record.state in (BackfillState.RUNNING, BackfillState.SUCCEEDED, BackfillState.FAILED)
            and not record.retryable
        )

    def _reject_invalid(self, upload: Upload, issues: list[ConfigIssue], attempt: Attempt) -> UploadResult:
        """An invalid config has no backfill id: its record is keyed by the upload. The record
        keeps the first errors and their count; the result file has them all."""
        record_id = f"rejected-{upload.upload_id[:16]}"
        with self._log_context(record_id):
            status = self.services.status
            document = self._result_document(
                upload, Disposition.REJECTED, None, BackfillState.REJECTED, errors=issues, status_id=record_id
            )
            try:
                attempt.claim(status, record_id, upload, {"source_uri": upload.uri})
            except RecordExistsError as exists:
                reclaimed = attempt.take_over(status, exists.existing, "retry")
                if reclaimed is None:
                    if (
                        attempt.holds(exists.existing)
                        and exists.existing.state is BackfillState.REJECTED
                        and not self._reported(upload, record_id, "REJECTED")
                    ):
                        written = self._write_result(
                            upload, document
                        )  # our dead attempt recorded REJECTED, not the file
                        return UploadResult(
                            upload.uri,
                            Disposition.REJECTED,
                            None,
                            "REJECTED",
                            "result written by a retry",
                            retry=not written,
                        )
                    self._count("Duplicates")
                    return UploadResult(upload.uri, Disposition.DUPLICATE, None, str(exists.existing.state))
            rejected = status.transition(
                record_id,
                BackfillState.REJECTED,
                detail=f"{len(issues)} errors",
                attributes={"errors": [issue.as_dict() for issue in issues]},
            )
            self._count("Rejected")
            self.logger.info("rejected %s: %d errors", upload.uri, len(issues))
            written = self._write_result(upload, document)
            self.notifier.slack(
                record_id, rejection_message(source_uri=upload.uri, issues=issues), record=rejected
            )
            return UploadResult(
                upload.uri, Disposition.REJECTED, None, "REJECTED", f"{len(issues)} errors", retry=not written
            )

    def _reported(self, upload: Upload, status_id: str, state: str) -> bool:
        reported = self.services.storage.read_result(upload)
        return reported is not None and reported.status_id == status_id and reported.state == state

    def _already_known(self, upload: Upload, existing: StatusRecord) -> UploadResult:
        self._count("AlreadyKnown")
        self.logger.info("%s is already known as %s (%s)", upload.uri, existing.backfill_id, existing.state)
        self._write_result(
            upload,
            self._result_document(
                upload,
                Disposition.ALREADY_KNOWN,
                existing.backfill_id,
                existing.state,
                **self._recorded_fields(existing),
            ),
        )
        self.notifier.slack(
            existing.backfill_id,
            already_known_message(
                backfill_id=existing.backfill_id,
                state=str(existing.state),
                source_uri=upload.uri,
                run_url=existing.dag_run_url,
            ),
        )
        return UploadResult(upload.uri, Disposition.ALREADY_KNOWN, existing.backfill_id, str(existing.state))

    # -- helpers -------------------------------------------------------------------------
    def _result_document(
        self,
        upload: Upload,
        disposition: Disposition,
        backfill_id: str | None,
        state: BackfillState | None,  # None: the failure came before any state was recorded
        *,
        errors: list[ConfigIssue] | None = None,
        status_id: str | None = None,
        retrying: bool = False,
        **fields: Any,
    ) -> ResultFile:
        """The result file, through its contract (the DAG reads and rewrites it)."""
        record_id = status_id or backfill_id
        return ResultFile(
            source=upload.uri,
            outcome=ResultOutcome(disposition),
            backfill_id=backfill_id,
            state=state,
            status_id=record_id,
            errors=[LocatedError(location=i.location, message=i.message) for i in errors] if errors else None,
            retrying="a system failure; the trigger retries automatically and on-call is paged"
            if retrying
            else None,
            status_command=f"backfill status {record_id}" if record_id else None,
            written_at=self.clock(),
            **fields,
        )

    def _write_result(self, upload: Upload, document: ResultFile) -> bool:
        """False when it could not be written: the caller raises (retry=True) so that Lambda's
        retry, which finds the recorded state, writes it (`_report_again`)."""
        try:
            uri = self.services.storage.write_result(upload, document)
            self.logger.info("result written to %s", uri)
        except Exception as error:  # the backfill's own outcome stands; say so loudly
            self.logger.error("could not write the result file for %s: %s", upload.uri, str(error)[:500])
            self._count("ResultWriteFailures")
            return False
        return True

    def _lineage_url(self, config: BackfillConfig) -> str | None:
        if not config.jobs:
            return None
        job = config.jobs[0]
        base = self.settings.lineage_web_url.rstrip("/")
        return f"{base}/lineage/job/{quote(job.namespace, safe='')}/{quote(job.name, safe='')}"

    def _log_context(self, backfill_id: str):  # noqa: ANN202 - a context manager
        if isinstance(self.logger, Logger):
            return self.logger.append_context_keys(backfill_id=backfill_id)
        return nullcontext()

    def _count(self, name: str) -> None:
        self.metrics.add_metric(name=name, unit="Count", value=1)
