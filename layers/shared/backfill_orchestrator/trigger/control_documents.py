"""Control documents: `control/<backfill id>/<action>-<timestamp>.(json|yaml)` in the config
bucket, picked up by the trigger function like a config: read, validated, checked against the
policy, and acted on exactly once however often they are delivered (what each action does:
control_actions.py, one entry of `ACTIONS` per action).

Each document has an action item in the status table (status/actions.py), keyed by its upload:

1. the first delivery creates it `started`, holding a lease for its invocation, and acts;
2. the action completes: the item is `done` with its outcome; then the result file
   (`results/control/...result.json`) and a reply in the backfill's Slack thread;
3. an action that fails half-way (Airflow answers 5xx, DynamoDB is throttled) gives its lease up
   and raises: the result file says `failed` and that the trigger retries, and it does (Lambda's
   retries, then the on-failure queue). That delivery, like Lambda's retry of an attempt that
   died at any line (same request id), resumes the action: the same entry of ACTIONS runs again
   from the record as it now is, judged as of the action's start, and finishes it;
4. a delivery that finds the action `done` is a duplicate; it only writes the result file and
   the reply when the completed action's tail did not (they go out after `done`, so the reply
   is posted at most once); one that finds another delivery acting under its lease is a
   duplicate too (that one finishes it, or its own retries do).

Each document acts for its uploader (the S3 event's principal), or, when a delegate wrote it
(the Slack interactivity function, CONTROL_DELEGATES), for the `requested_by` it names; that
principal is kept in the history entries the action writes. With a policy, every action but
`start` is checked first (`approval.authorize`: grants, four eyes, expiry)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from time import sleep as wait_seconds

from backfill_orchestrator.config.errors import InvalidConfigError
from backfill_orchestrator.contracts import (
    ControlRequest,
    InvalidDocumentError,
    LocatedError,
    ResultFile,
    ResultOutcome,
)
from backfill_orchestrator.errors import ROOT, ConfigIssue
from backfill_orchestrator.notify import Notifier, status_message
from backfill_orchestrator.notify.notifier import MetricsSink
from backfill_orchestrator.parsing import format_for, load_document
from backfill_orchestrator.policy import ApprovalRefusedError
from backfill_orchestrator.status import StatusRecord
from backfill_orchestrator.status.actions import ActionLedger, ActionRecord, Begun, Finished
from backfill_orchestrator.trigger import approval
from backfill_orchestrator.trigger.control_actions import ACTIONS, ControlRefusedError
from backfill_orchestrator.trigger.events import Upload
from backfill_orchestrator.trigger.outcomes import ControlOutcome, ControlResult
from backfill_orchestrator.trigger.runs import ActionCall, ModeServices
from backfill_orchestrator.trigger.storage import ConfigGoneError, ConfigTooLargeError

log = logging.getLogger(__name__)
DEFAULT_LEASE_SECONDS = 900  # Lambda's longest timeout (the trigger's Attempt gives the real one)


@dataclass(frozen=True)
class Acted:
    """How an action ended: what the result file and the reply say."""

    result: ControlResult  # DONE or REFUSED
    detail: str
    actor: str | None  # who acted, when the policy named someone else than `requested_by`


@dataclass(kw_only=True)
class ControlService:
    services: ModeServices
    notifier: Notifier
    metrics: MetricsSink
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    sleep: Callable[[float], None] = field(default=wait_seconds)

    # -- one document ----------------------------------------------------------------------
    def handle(
        self, upload: Upload, *, lease_seconds: int = DEFAULT_LEASE_SECONDS, holder: str | None = None
    ) -> ControlOutcome:
        """`lease_seconds` and `holder` (the Lambda request id) are the invocation's, as for a
        config upload (trigger/service.py `Attempt`)."""
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
            why = f"unknown backfill {request.backfill_id!r}: no status record"
            self._count("ControlRefused")
            self._report(upload, request, None, Acted(ControlResult.REFUSED, why, None))
            return ControlOutcome(ControlResult.REFUSED, request.backfill_id, None, why)
        if upload.upload_id in record.controls:  # acted on, in a record that kept its documents' ids
            return self._duplicate(request, record, "already acted on")
        ledger = ActionLedger(status)
        start = ledger.begin(
            record, upload.upload_id, action=request.action, lease_seconds=lease_seconds, holder=holder
        )
        if isinstance(start, Finished):
            return self._completed(upload, request, start.action)
        if not isinstance(start, Begun):  # Held: another delivery is acting on it
            return self._duplicate(request, record, "being acted on by another delivery")
        action = start.action
        if action.resumed:
            self._count("ControlResumed")
            log.info(
                "resuming the %s of %s (delivery %d)", request.action, request.backfill_id, action.attempts
            )
        try:
            acted = self._act(upload, request, record, action)
        except Exception:
            # Not finished: the exception propagates (the event is retried) and the retry resumes
            # it at once rather than wait for this delivery's lease.
            try:
                ledger.release(action)
            except Exception as error:  # noqa: BLE001 - the lease runs out by itself
                log.warning("could not release the %s of %s: %s", request.action, request.backfill_id, error)
            raise
        if not ledger.finish(action, outcome=str(acted.result), detail=acted.detail, actor=acted.actor):
            # Taken over under this delivery (its lease ran out): that one reports it.
            return self._duplicate(request, record, "finished by another delivery")
        record = status.get(request.backfill_id) or record
        self._count(
            "ControlRefused"
            if acted.result is ControlResult.REFUSED
            else f"Control{request.action.capitalize()}"
        )
        self._report(upload, request, record, acted)
        return ControlOutcome(acted.result, request.backfill_id, str(record.state), acted.detail)

    def _act(
        self, upload: Upload, request: ControlRequest, record: StatusRecord, action: ActionRecord
    ) -> Acted:
        """Check the document against the policy, as of the action's start and the record as it
        was then, and run its entry of ACTIONS; a refusal is an outcome, anything else raises."""
        try:
            actor = approval.authorize(
                self.services,
                upload=upload,
                request=request,
                record=replace(record, state=action.basis_state),
                now=action.started_at,
            )
            by = actor or request.requested_by
            call = ActionCall(
                services=self.services, request=request, record=record, action=action, by=by, sleep=self.sleep
            )
            detail = ACTIONS[request.action](call)
        except ControlRefusedError as refusal:
            return Acted(ControlResult.REFUSED, str(refusal), None)
        except ApprovalRefusedError as refusal:  # the policy or the gate said no
            self._count("ControlPolicyRefused")
            return Acted(ControlResult.REFUSED, str(refusal), None)
        return Acted(ControlResult.DONE, detail, actor if actor and actor != request.requested_by else None)

    def _completed(self, upload: Upload, request: ControlRequest, action: ActionRecord) -> ControlOutcome:
        """A delivery of a document whose action is done: a duplicate. When the completed
        action's result file is missing or still says `failed` (its delivery died before
        writing it, or could not write it and raised), it is written now, with the reply."""
        record = self.services.status.get(request.backfill_id)
        reported = self.services.storage.read_result(upload)
        if reported is None or reported.outcome != action.outcome or reported.retrying:
            acted = Acted(
                ControlResult(action.outcome or ControlResult.DONE), action.detail or "", action.actor
            )
            log.info("writing the result of the %s of %s, done earlier", request.action, request.backfill_id)
            self._report(upload, request, record, acted)
        return self._duplicate(request, record, f"already acted on ({action.outcome})")

    def _duplicate(self, request: ControlRequest, record: StatusRecord | None, why: str) -> ControlOutcome:
        self._count("Duplicates")
        return ControlOutcome(
            ControlResult.DUPLICATE, request.backfill_id, str(record.state) if record else None, why
        )

    def _parse(self, upload: Upload, body: bytes) -> ControlRequest:
        document = load_document(
            body,
            error=InvalidConfigError,
            max_bytes=ControlRequest.max_bytes,
            fmt=format_for(upload.key),
            source=upload.key,
        )
        return ControlRequest.from_json(document, source=upload.key)

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

    def _report(
        self, upload: Upload, request: ControlRequest, record: StatusRecord | None, acted: Acted
    ) -> None:
        """The result file, then the reply in the backfill's Slack thread (none for a backfill
        without a record). A result file that cannot be written raises: the retry writes it."""
        self._write_document(
            upload,
            ResultFile(
                source=upload.uri,
                outcome=ResultOutcome(acted.result),
                backfill_id=request.backfill_id,
                state=record.state if record else None,
                status_id=request.backfill_id if record else None,
                action=request.action,
                reason=acted.detail[:2000],
                status_command=f"backfill status {request.backfill_id}" if record else None,
                written_at=self.clock(),
            ),
        )
        if record is None:
            return
        who = f"{request.action} by {request.requested_by}"
        if acted.result is ControlResult.REFUSED:
            detail = f"{who} refused: {acted.detail}"
        else:
            detail = f"{who}{f' ({acted.actor})' if acted.actor else ''}: {acted.detail} (reason: {request.reason})"
        self.notifier.slack(
            request.backfill_id,
            status_message(backfill_id=request.backfill_id, state=str(record.state), detail=detail),
        )

    def _write_document(self, upload: Upload, document: ResultFile) -> None:
        self.services.storage.write_result(upload, document)

    def _count(self, name: str) -> None:
        self.metrics.add_metric(name=name, unit="Count", value=1)
