"""What becomes of an upload: the enum of its outcomes and one table from the state its
backfill ends in to what the trigger writes, posts and returns (`TriggerService._finish`,
a retry reporting a recorded state, the approval gate rewriting a result file); and, for a
control document, the enum of what became of it and its upload's outcome (`DISPOSITION_OF`).

A new state is one row of `OUTCOME_OF` (a test checks every `BackfillState` has one), plus its
message when a mode can end an upload in it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, cast

from slack_sdk.models.blocks import Block

from backfill_orchestrator._compat import StrEnum
from backfill_orchestrator.config import BackfillConfig
from backfill_orchestrator.contracts.control_request import PersonAction
from backfill_orchestrator.interactivity.blocks import control_buttons
from backfill_orchestrator.notify import backfill_message, rejection_message
from backfill_orchestrator.notify.slack import SlackMessage
from backfill_orchestrator.status import BackfillState, StatusRecord
from backfill_orchestrator.trigger.events import Upload
from backfill_orchestrator.trigger.runs import ModeOutcome

AWAITING_BUTTONS: tuple[PersonAction, ...] = (
    "approve",
    "reject",
    "cancel",
)  # the approval request's buttons (interactivity.blocks)


class Disposition(StrEnum):
    """What became of one upload (the `outcome` of its result file and of the handler's answer)."""

    ACCEPTED = "accepted"  # triggered
    DRY_RUN = "dry_run"  # planned and stored, nothing triggered
    REJECTED = "rejected"  # invalid config or refused plan
    ALREADY_KNOWN = "already_known"  # identical re-upload
    DUPLICATE = "duplicate"  # the same event again: nothing done, nothing written
    QUEUED = "queued"  # waits for an overlapping backfill to end
    AWAITING_APPROVAL = "awaiting_approval"  # waits for a second person's approval (trigger/approval.py)
    AWAITING_PUBLISH = "awaiting_publish"  # ran; a staged step waits for a person's publish or discard
    FAILED = "failed"
    IGNORED = "ignored"  # not a config under the incoming prefix, or deleted meanwhile


class ControlResult(StrEnum):
    """What became of one control document (its result file's `outcome`, but for duplicate and ignored)."""

    DONE = "done"  # acted on
    REFUSED = "refused"  # not allowed for this backfill now (its state, the policy)
    REJECTED = "rejected"  # not a valid control document
    DUPLICATE = "duplicate"  # acted on already, or being acted on by another delivery: nothing done
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

    @property
    def disposition(self) -> Disposition:
        return DISPOSITION_OF[self.result]


@dataclass(frozen=True)
class Finished:
    """A mode's end, as a message sees it."""

    upload: Upload
    config: BackfillConfig
    record: StatusRecord  # as claimed
    outcome: ModeOutcome
    lineage_url: str | None  # where people look at the first job's lineage

    @property
    def backfill_id(self) -> str:
        return self.record.backfill_id


EndingMessage = Callable[[Finished], SlackMessage]
# What a result file carries besides its outcome and state: the located errors, the reason,
# the plan (its summary, config_uri, plan_uri) and the DAG run (dag_id, dag_run_id, dag_run_url).
ResultPart = Literal["errors", "reason", "plan", "run"]


@dataclass(frozen=True)
class Ending:
    """One row: an upload whose backfill is in this state. `disposition` is its outcome
    wherever it is reported; the rest is what the service does when a mode ends there."""

    disposition: Disposition
    metric: str | None = None  # counted (EMF) when a mode ends here; None: no mode ends here
    message: EndingMessage | None = None  # Slack, in the backfill's thread (unless the runner announced it)
    # The service records the state with the reason and these attributes; None: the runner did.
    records: Mapping[str, Any] | None = None
    fallback: BackfillState | None = None  # recorded instead when the state cannot follow the current one
    reports: frozenset[ResultPart] = field(default_factory=frozenset)
    resolves_page: bool = False  # an incident an earlier attempt opened is resolved


# -- the messages ---------------------------------------------------------------------------------
def rejected_message(end: Finished) -> SlackMessage:
    return rejection_message(source_uri=end.upload.uri, issues=end.outcome.issues, name=end.config.name)


def failed_message(end: Finished) -> SlackMessage:
    """A refusal by the mode (not an outage: no page)."""
    return backfill_message(
        config=end.config,
        backfill_id=end.backfill_id,
        plan=None,
        state=str(BackfillState.FAILED),
        note=end.outcome.reason,
    )


def queued_message(end: Finished) -> SlackMessage:
    return _thread_message(end, note=end.outcome.reason)


def awaiting_approval_message(end: Finished) -> SlackMessage:
    """The thread's first message for a backfill awaiting approval: what it is, why it waits,
    and the Approve / Reject / Cancel buttons (interactivity.blocks; the Slack interactivity
    function receives the presses)."""
    message = _thread_message(end, note=end.outcome.reason, plan_uri=_plan_uri(end.outcome))
    buttons = cast(Block, Block.parse(control_buttons(end.backfill_id, AWAITING_BUTTONS)))
    return replace(message, blocks=(*message.blocks[:49], buttons))  # Slack takes at most 50 blocks


def planned_message(end: Finished) -> SlackMessage:
    return started_message(end, note="Dry run: planned and stored, nothing triggered.")


def triggered_message(end: Finished) -> SlackMessage:
    return started_message(end, note=None)


def started_message(end: Finished, *, note: str | None, picture_pending: bool = False) -> SlackMessage:
    """A planned or triggered backfill: also its run, its lineage and its stored plan (the
    plan's picture named without a link while `picture_pending`)."""
    outcome = end.outcome
    return _thread_message(
        end,
        note=note,
        run_url=outcome.run_url,
        lineage_url=end.lineage_url,
        plan_uri=_plan_uri(outcome),
        picture_pending=picture_pending,
    )


def _thread_message(
    end: Finished,
    *,
    note: str | None,
    run_url: str | None = None,
    lineage_url: str | None = None,
    plan_uri: str | None = None,
    picture_pending: bool = False,
) -> SlackMessage:
    """The backfill's message in its thread as the mode left it: its plan and state, who
    submitted it, a note, and the links the ending shows."""
    outcome = end.outcome
    return backfill_message(
        config=end.config,
        backfill_id=end.backfill_id,
        plan=outcome.plan,
        state=str(outcome.state),
        note=note,
        submitted_by=end.record.submitted_by,
        run_url=run_url,
        lineage_url=lineage_url,
        plan_uri=plan_uri,
        picture_pending=picture_pending,
    )


def _plan_uri(outcome: ModeOutcome) -> str | None:
    return outcome.stored.plan_uri if outcome.stored else None


# -- the table ------------------------------------------------------------------------------------
S, D = BackfillState, Disposition
OUTCOME_OF: dict[BackfillState, Ending] = {
    S.REJECTED: Ending(
        D.REJECTED, "Rejected", rejected_message, records={}, fallback=S.FAILED, reports=frozenset({"errors"})
    ),
    S.FAILED: Ending(
        D.FAILED, "Failed", failed_message, records={"retryable": False}, reports=frozenset({"reason"})
    ),
    S.AWAITING_APPROVAL: Ending(
        D.AWAITING_APPROVAL,
        "AwaitingApproval",
        awaiting_approval_message,
        reports=frozenset({"reason", "plan"}),
    ),
    S.QUEUED: Ending(D.QUEUED, "Queued", queued_message, reports=frozenset({"reason", "plan"})),
    S.PLANNED: Ending(
        D.DRY_RUN, "DryRuns", planned_message, reports=frozenset({"plan", "run"}), resolves_page=True
    ),
    S.TRIGGERED: Ending(
        D.ACCEPTED, "Triggered", triggered_message, reports=frozenset({"plan", "run"}), resolves_page=True
    ),
    # No mode ends an upload in these; a retry that finds the record there reports it accepted.
    S.RECEIVED: Ending(D.ACCEPTED),
    S.RUNNING: Ending(D.ACCEPTED),
    S.SUCCEEDED: Ending(D.ACCEPTED),
    S.CANCELLED: Ending(D.ACCEPTED),
    # The DAG's finish records it (the result file says awaiting_publish: it ran and a staged
    # step waits for a person); publish, discard and undo (control documents) move on from it.
    S.AWAITING_PUBLISH: Ending(D.AWAITING_PUBLISH),
    S.DISCARDED: Ending(D.ACCEPTED),
    S.UNDONE: Ending(D.ACCEPTED),
}
