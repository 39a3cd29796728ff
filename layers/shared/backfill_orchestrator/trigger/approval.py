"""The approval gate (docs/policy.md): who uploaded a config or a control document, whether
the deployment's policy lets a planned backfill start, wait for a second person
(AWAITING_APPROVAL) or not run at all, and the `approve` / `reject` control documents that
end the wait.

With no policy configured (`POLICY_URI` empty) nothing is gated: today's behaviour. A policy
that cannot be read or is invalid fails closed (a ServiceError: the upload is retried and
on-call paged; nothing starts on a policy nobody can read)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from backfill_orchestrator.claims import Admitted, Queued
from backfill_orchestrator.config import BackfillConfig
from backfill_orchestrator.contracts import ControlRequest, ResultFile, ResultOutcome
from backfill_orchestrator.contracts.control_request import is_person_action
from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.identity import (
    Principal,
    principal_from_display,
)
from backfill_orchestrator.interactivity.errors import ApprovalExpiredError
from backfill_orchestrator.interactivity.facts import facts_from_plain
from backfill_orchestrator.policy import (
    ApprovalRefusedError,
    Verdict,
    approval_expires_at,
    check_action,
    decide_submission,
)
from backfill_orchestrator.status import BackfillState, StatusRecord, TransitionRejectedError
from backfill_orchestrator.trigger.events import Upload
from backfill_orchestrator.trigger.outcomes import OUTCOME_OF
from backfill_orchestrator.trigger.runs import (
    ActionCall,
    ModeOutcome,
    ModeRequest,
    ModeServices,
    admit,
    started,
    trigger_run,
)
from backfill_orchestrator.trigger.storage import StoredBackfill

log = logging.getLogger(__name__)


# -- identity of an upload ----------------------------------------------------------------------
def submission_attributes(services: ModeServices, upload: Upload, config: BackfillConfig) -> dict[str, Any]:
    """For a new status record: `submitted_by` (the uploader's Principal.display, when the event
    names one) and `root_jobs` (what control actions' grants are checked against)."""
    gate = services.approval
    principal = gate.uploader(upload) if gate is not None else upload.principal
    attributes: dict[str, Any] = {"root_jobs": [str(job) for job in config.jobs or []]}  # namespace/name
    if principal is not None:
        attributes["submitted_by"] = principal.display
    return attributes


def control_actor(
    services: ModeServices, upload: Upload, request: ControlRequest
) -> tuple[Principal | None, bool]:
    """Who a control document acts for, and whether a delegate already checked their grants.
    Its uploader; for a delegate's document (the Slack interactivity function and the Airflow
    environment's Backfills page, which verified the press and the policy) the `requested_by`
    it names; None when the event names nobody. Only a Slack user's grants are taken as checked
    (they may come through Slack user groups, which the trigger does not look up); an Airflow
    user's are checked here again."""
    gate = services.approval
    uploader = gate.uploader(upload) if gate is not None else upload.principal
    if gate is not None and uploader is not None and gate.is_delegate(uploader):
        principal = principal_from_display(request.requested_by)
        return principal, principal.slack_user is not None
    return uploader, False


# -- after planning: the submission decision ----------------------------------------------------
def gate_submission(
    request: ModeRequest, services: ModeServices, *, plan: Plan, stored: StoredBackfill
) -> ModeOutcome | None:
    """None: the backfill may be admitted now. Otherwise REJECTED (refused by the policy, the
    located reasons naming the rule) or AWAITING_APPROVAL (recorded here)."""
    gate = services.approval
    if gate is None:
        return None
    principal = gate.uploader(request.upload)
    if principal is not None and principal.display != request.record.submitted_by:
        # A rejected config uploaded again by someone else: the record now names them.
        services.status.annotate(request.backfill_id, {"submitted_by": principal.display})
    policy = gate.policy()
    if policy is None:
        return None
    estimate: Mapping[str, Any] = plan.estimate or {}
    decision = decide_submission(
        policy,
        principal=principal,
        plan=plan,
        estimated_cost_usd=_figure(estimate.get("cost")),
        estimated_bytes=_whole(estimate.get("bytes_to_read")),
    )
    if decision.refused:
        reason = f"refused by the policy (rule: {decision.rule}): {'; '.join(decision.reasons)}"
        return ModeOutcome(
            BackfillState.REJECTED,
            plan=plan,
            stored=stored,
            issues=list(decision.issues),
            reason=reason[:2000],
        )
    if decision.outcome is Verdict.ALLOWED:
        return None
    assert principal is not None  # check_submit refuses an unknown uploader
    now = gate.clock()
    expires = approval_expires_at(policy, now)
    owners = f"; approvers: {', '.join(decision.approvers)}" if decision.approvers else ""
    until = f"; expires {expires.isoformat()}" if expires else ""
    reason = f"awaiting approval by another person: {'; '.join(decision.reasons)}{owners}{until}"[:2000]
    services.status.transition(
        request.backfill_id,
        BackfillState.AWAITING_APPROVAL,
        detail=reason,
        by=principal.display,
        attributes={
            "submitted_by": principal.display,
            "approval_requested_at": now.isoformat(),
            "approvers": list(decision.approvers),
            "root_jobs": [f"{root.namespace}/{root.name}" for root in plan.roots],
            "approval_reasons": list(decision.reasons),
            "reason": reason,
            "approval": None,
        },
    )
    return ModeOutcome(
        BackfillState.AWAITING_APPROVAL, plan=plan, stored=stored, issues=list(decision.issues), reason=reason
    )


# -- control documents ------------------------------------------------------------------------
def authorize(
    services: ModeServices, *, upload: Upload, request: ControlRequest, record: StatusRecord, now: datetime
) -> str | None:
    """Check a control document against the policy; returns who acts (Principal.display), or
    None when the event names nobody and no policy asks. Raises ApprovalRefusedError; an
    approval that arrives after its request expired moves the backfill to REJECTED first
    (nobody can approve it any more) and raises ApprovalExpiredError. A resumed action is
    checked against the record as it was when the action began, as of then (`record` with its
    basis state, `now` its start), so it is judged as its first delivery was."""
    principal, granted = control_actor(services, upload, request)
    actor = principal.display if principal is not None else None
    action = request.action
    if not is_person_action(action):  # `start` is the orchestrator's own
        return actor
    gate = services.approval
    policy = gate.policy() if gate is not None else None
    if policy is None and request.action not in ("approve", "reject"):
        return actor  # no policy: cancel and retry as before
    if policy is not None and principal is None:
        raise ApprovalRefusedError(
            "the document's uploader is unknown; the policy allows only named principals", rule="grants"
        )
    facts = facts_from_plain(record.as_dict())
    decision = check_action(
        policy,
        principal=principal or principal_from_display(request.requested_by),
        action=action,
        backfill=facts,
        now=now,
        granted=granted,
    )
    if not decision.refused:
        return actor
    message = "; ".join(decision.reasons)
    if decision.rule == ApprovalExpiredError.RULE:
        by = actor or request.requested_by
        try:
            services.status.transition(
                record.backfill_id,
                BackfillState.REJECTED,
                detail=f"approval by {by} refused: {message}",
                by=by,
                attributes={
                    "reason": f"approval expired: {message}"[:2000],
                    "approval": {"outcome": "expired", "by": by, "at": now.isoformat()},
                },
            )
        except TransitionRejectedError as error:  # recorded by an earlier delivery of this document
            if error.current is None or error.current.state is not BackfillState.REJECTED:
                raise
        report_decision(services, record, BackfillState.REJECTED, f"approval expired: {message}", now=now)
        raise ApprovalExpiredError(f"{message}; the backfill is now REJECTED")
    raise ApprovalRefusedError(message, rule=decision.rule or "policy")


def approve(call: ActionCall) -> str:
    """Approved: the history says who and when, then the backfill is admitted (its claims) and
    its DAG run triggered; an overlap makes it wait (QUEUED) or refuses it (ON_OVERLAP).
    Resumed (an earlier delivery of this approval recorded it and failed or died after), it is
    finished from where that one stopped (admission and the trigger are idempotent)."""
    services, record, by, now = call.services, call.record, call.by, call.now
    reason = call.request.reason
    recorded = call.action.resumed and (record.approval or {}).get("outcome") == "approved"
    if recorded and record.state is not BackfillState.AWAITING_APPROVAL:
        return _approved_earlier(services, record, by=by, now=now)
    _require_awaiting(record, "approve")
    if not (record.plan_uri and record.config_uri):
        raise ApprovalRefusedError(f"backfill {record.backfill_id} has no stored plan", rule="state")
    plan = services.storage.load_plan(record.plan_uri)
    if plan is None:
        raise ApprovalRefusedError(
            f"backfill {record.backfill_id}: its plan {record.plan_uri} is gone", rule="state"
        )
    if not recorded:
        decision = {"outcome": "approved", "by": by, "at": now.isoformat(), "reason": reason[:500]}
        _move(
            services,
            record,
            BackfillState.AWAITING_APPROVAL,
            f"approved by {by}: {reason}",
            by=by,
            attributes={"approval": decision},
        )
    admission = admit(services, backfill_id=record.backfill_id, plan=plan, submitted_at=record.created_at)
    if isinstance(admission, Queued):
        why = f"approved by {by}; waiting for {', '.join(admission.blocking)} (overlapping steps and dates)"
        _move(services, record, BackfillState.QUEUED, why, attributes={"reason": why})
        report_decision(services, record, BackfillState.QUEUED, why, now=now)
        return why
    if not isinstance(admission, Admitted):
        why = f"approved by {by}, but refused: {admission.describe()}; resubmit when it has ended"
        _move(services, record, BackfillState.REJECTED, why, attributes={"reason": why})
        report_decision(services, record, BackfillState.REJECTED, why, now=now)
        return why
    try:
        run, _ = trigger_run(
            services,
            backfill_id=record.backfill_id,
            config_uri=record.config_uri,
            plan_uri=record.plan_uri,
            result_uri=original_result_uri(services, record),
        )
    except TransitionRejectedError as error:  # another approval got there first; its run is the one
        raise ApprovalRefusedError(f"the backfill changed state meanwhile: {error}", rule="state") from None
    return _triggered(
        services,
        record,
        plan,
        by=by,
        now=now,
        dag_id=services.settings.backfill_dag_id,
        run_id=run.run.run_id,
    )


def _approved_earlier(services: ModeServices, record: StatusRecord, *, by: str, now: datetime) -> str:
    """An approval an earlier delivery carried past AWAITING_APPROVAL: where it stands. The
    submitter's result file is written again (it may not have been) and a run it triggered
    gets its lineage START (at least once: the backfill's run id makes a second one harmless)."""
    state = record.state
    if state is BackfillState.QUEUED or state is BackfillState.REJECTED:
        why = record.reason or f"approved by {by}; {state}"
        report_decision(services, record, state, why, now=now)
        return why
    if not record.dag_run_id:
        raise ApprovalRefusedError(
            f"cannot approve {record.backfill_id}: it is {record.state}, and nothing awaits approval",
            rule="state",
        )
    plan = services.storage.load_plan(record.plan_uri) if record.plan_uri else None
    return _triggered(services, record, plan, by=by, now=now, dag_id=record.dag_id, run_id=record.dag_run_id)


def _triggered(
    services: ModeServices,
    record: StatusRecord,
    plan: Plan | None,
    *,
    by: str,
    now: datetime,
    dag_id: str | None,
    run_id: str,
) -> str:
    """An approval's DAG run: the submitter's result file says so, and the run gets its lineage
    START (the plan and config it ran with are needed for it)."""
    report_decision(
        services,
        record,
        BackfillState.TRIGGERED,
        f"approved by {by}",
        now=now,
        dag_id=dag_id,
        dag_run_id=run_id,
    )
    if plan is not None and record.config_uri:
        started(
            services,
            backfill_id=record.backfill_id,
            plan=plan,
            config_uri=record.config_uri,
            submitter=record.submitted_by or record.owner,
        )
    return f"approved by {by}: DAG run {run_id} triggered"


def reject(call: ActionCall) -> str:
    """Rejected by an approver: REJECTED (terminal; the identical config uploaded again is
    evaluated again), with who and why. Nothing was admitted, so no claim is held.
    Resumed (an earlier delivery recorded it), the submitter's result file is written again."""
    services, record, by, now = call.services, call.record, call.by, call.now
    reason = call.request.reason
    why = f"rejected by {by}: {reason}"
    if (
        call.action.resumed
        and record.state is BackfillState.REJECTED
        and (record.approval or {}).get("outcome") == "rejected"
    ):
        report_decision(services, record, BackfillState.REJECTED, record.reason or why, now=now)
        return record.reason or why
    _require_awaiting(record, "reject")
    _move(
        services,
        record,
        BackfillState.REJECTED,
        why,
        by=by,
        attributes={
            "reason": why[:2000],
            "approval": {"outcome": "rejected", "by": by, "at": now.isoformat(), "reason": reason[:500]},
        },
    )
    report_decision(services, record, BackfillState.REJECTED, why, now=now)
    return why


def original_result_uri(services: ModeServices, record: StatusRecord) -> str | None:
    """The result file of the upload that submitted the backfill (the DAG keeps it current)."""
    upload = original_upload(services, record)
    return services.storage.result_uri(upload) if upload is not None else None


def original_upload(services: ModeServices, record: StatusRecord) -> Upload | None:
    storage = services.storage
    prefix = f"s3://{storage.bucket}/"
    if not record.source_uri or not record.source_uri.startswith(prefix):
        return None
    return Upload(bucket=storage.bucket, key=record.source_uri[len(prefix) :])


def report_decision(
    services: ModeServices,
    record: StatusRecord,
    state: BackfillState,
    reason: str,
    *,
    now: datetime,
    **fields: Any,
) -> None:
    """Rewrite the submitting upload's result file (it said awaiting_approval or
    awaiting_publish), so that someone with only S3 access sees the decision. Best effort: the
    decision is on the record already."""
    upload = original_upload(services, record)
    if upload is None:
        return
    try:
        services.storage.write_result(
            upload,
            ResultFile(
                source=upload.uri,
                outcome=ResultOutcome(OUTCOME_OF[state].disposition),
                backfill_id=record.backfill_id,
                state=state,
                status_id=record.backfill_id,
                reason=reason[:2000],
                config_uri=record.config_uri,
                plan_uri=record.plan_uri,
                status_command=f"backfill status {record.backfill_id}",
                written_at=now,
                **fields,
            ),
        )
    except Exception as error:  # noqa: BLE001 - the record and the control document's result say it too
        log.warning("could not rewrite the result file of %s: %s", upload.uri, str(error)[:300])


def _require_awaiting(record: StatusRecord, action: str) -> None:
    if record.state is not BackfillState.AWAITING_APPROVAL:
        raise ApprovalRefusedError(
            f"cannot {action} {record.backfill_id}: it is {record.state}, and nothing awaits approval",
            rule="state",
        )


def _move(
    services: ModeServices,
    record: StatusRecord,
    target: BackfillState,
    detail: str,
    *,
    by: str | None = None,
    attributes: dict[str, Any] | None = None,
) -> None:
    try:
        services.status.transition(
            record.backfill_id, target, detail=detail[:2000], by=by, attributes=attributes
        )
    except TransitionRejectedError as error:  # a concurrent approve, reject or cancel won
        raise ApprovalRefusedError(f"the backfill changed state meanwhile: {error}", rule="state") from None


def _figure(value: Any) -> float | None:
    """A preflight figure ({"value": ...}) or a bare number."""
    if isinstance(value, Mapping):
        value = value.get("value")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _whole(value: Any) -> int | None:
    number = _figure(value)
    return int(number) if number is not None else None
