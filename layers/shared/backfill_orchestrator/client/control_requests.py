"""Act on a backfill from a notebook or the CLI: cancel, retry, approve, reject, and the safe
publish's publish, discard, undo.

Each writes a control document to `s3://<bucket>/control/<backfill id>/<action>-<UTC time>.json`,
which the trigger acts on under the deployment's policy (it stays the authority), and then,
by default, waits for the trigger's answer: the result file it writes for every control
document, `results/control/<backfill id>/<file>.result.json` (the `ResultFile` contract). The
answer is a typed `ControlOutcome`: done, refused (with the trigger's reason), rejected (an
invalid document), failed, or timed out.

Before writing, what can be checked here is: a backfill the status table (`table=` or
$STATUS_TABLE) does not know, or whose state does not allow the action (the lifecycle's
rules, `policy.ACTION_STATES`), is refused with nothing written.

Every control is one entry of `CONTROLS` (action, what it does, the states it is allowed in,
its function); the CLI makes one subcommand per entry."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import ValidationError
from typing_extensions import TypedDict, Unpack

from backfill_orchestrator import documents
from backfill_orchestrator._compat import UTC, StrEnum
from backfill_orchestrator.client.aws import aws_client
from backfill_orchestrator.client.status import BackfillNotFoundError, backfill_status, optional_table
from backfill_orchestrator.contracts import InvalidDocumentError, ResultFile
from backfill_orchestrator.contracts.control_request import ControlRequest, PersonAction
from backfill_orchestrator.contracts.result_file import ResultOutcome
from backfill_orchestrator.errors import ServiceError, UserError
from backfill_orchestrator.identity import caller_principal
from backfill_orchestrator.parsing import issue_from_pydantic
from backfill_orchestrator.policy.evaluate import ACTION_STATES
from backfill_orchestrator.status.model import BackfillState

CONTROL_PREFIX = "control/"
RESULTS_PREFIX = "results/"
DEFAULT_TIMEOUT = 120.0  # seconds: an S3 event reaches the trigger in seconds; an approval triggers a DAG run
FIRST_POLL, LONGEST_POLL = 0.5, 5.0  # seconds between reads of the result file, growing by half each time


class InvalidControlRequestError(UserError, ValueError):
    """The request is not valid (a bad backfill id, a blank reason, an unknown requester)."""


class ControlWriteError(ServiceError, RuntimeError):
    """The control document could not be written, or its result read (credentials, bucket, network)."""


class ControlStatus(StrEnum):
    """What became of a control request, as far as the caller knows."""

    DONE = "done"  # the trigger acted on it
    REFUSED = "refused"  # not allowed for this backfill now (its state, the policy): nothing changed
    REJECTED = "rejected"  # the trigger found the document invalid
    FAILED = "failed"  # the trigger failed on it and will not retry by itself (on-call is paged)
    SENT = "sent"  # written, not waited for
    TIMED_OUT = "timed_out"  # no answer in time: the trigger may still act on it


@dataclass(frozen=True)
class ControlOutcome:
    """A control request and what became of it. `key` is None when nothing was written (refused
    before writing); `result_key` names the trigger's answer (there or still to come)."""

    request: ControlRequest
    status: ControlStatus
    reason: str
    bucket: str
    key: str | None
    result_key: str | None = None
    state: BackfillState | None = None  # the backfill's state with the answer (or before writing)
    errors: tuple[str, ...] = ()  # rejected: the document's located errors
    unchecked: tuple[str, ...] = ()  # what could not be checked before writing

    @property
    def action(self) -> str:
        return self.request.action

    @property
    def backfill_id(self) -> str:
        return self.request.backfill_id

    @property
    def s3_uri(self) -> str | None:
        return f"s3://{self.bucket}/{self.key}" if self.key else None

    @property
    def result_uri(self) -> str | None:
        return f"s3://{self.bucket}/{self.result_key}" if self.result_key else None

    @property
    def ok(self) -> bool:
        return self.status in (ControlStatus.DONE, ControlStatus.SENT)

    def __str__(self) -> str:
        """One line: `cancel etl-orders-0604-c67a7315: refused: cannot cancel: ...`."""
        state = f" (now {self.state})" if self.state is not None and self.status is ControlStatus.DONE else ""
        return f"{self.action} {self.backfill_id}: {self.status}: {self.reason}{state}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "backfill_id": self.backfill_id,
            "status": str(self.status),
            "reason": self.reason,
            "state": str(self.state) if self.state is not None else None,
            "requested_by": self.request.requested_by,
            "control_uri": self.s3_uri,
            "result_uri": self.result_uri,
            "errors": list(self.errors),
            "unchecked": list(self.unchecked),
        }


def caller_identity(*, session: Any = None, sts_client: Any = None) -> str:
    """Who is asking, as the trigger will record it (`identity.caller_principal`):
    `role/<role>/<session>` for an assumed role (AWS SSO puts the user name, often an email, in
    the session), `user/<name>` for an IAM user."""
    try:
        found = aws_client("sts", client=sts_client, session=session).get_caller_identity()
    except Exception as error:  # botocore raises many types
        raise ControlWriteError(f"cannot tell who is asking (sts get-caller-identity): {error}") from error
    return caller_principal(found["Arn"], found["UserId"]).display


def control_key(backfill_id: str, action: str, at: datetime, *, prefix: str = CONTROL_PREFIX) -> str:
    stamp = at.astimezone(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return f"{prefix}{backfill_id}/{action}-{stamp}.json"


def result_key(key: str, *, results_prefix: str = RESULTS_PREFIX) -> str:
    """Where the trigger answers the control document at `key` (trigger/storage.py's result_key)."""
    return f"{results_prefix}{key}.result.json"


def _prefix(name: str, default: str) -> str:
    """The deployment's prefix from the variable the trigger reads, with its '/'."""
    value = os.environ.get(name) or default
    return value if value.endswith("/") else value + "/"


@dataclass(frozen=True)
class Waiting:
    """How long to wait for the trigger's answer, and what to tell meanwhile."""

    timeout: float = DEFAULT_TIMEOUT
    on_wait: Callable[[float], None] | None = None  # called with the seconds waited so far, each poll
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic


def request_control(
    action: PersonAction,
    backfill_id: str,
    *,
    reason: str,
    bucket: str,
    requested_by: str | None = None,
    wait: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
    table: str | None = None,
    on_wait: Callable[[float], None] | None = None,
    now: datetime | None = None,
    session: Any = None,
    s3_client: Any = None,
    sts_client: Any = None,
    dynamodb_client: Any = None,
    sleep: Callable[[float], None] = time.sleep,
) -> ControlOutcome:
    """Check, write, and (with `wait`) wait for the trigger's answer. Raises
    InvalidControlRequestError (nothing written) and ControlWriteError (S3 refused); a refusal,
    by the status table here or by the trigger, is an outcome, not an error."""
    requester = requested_by or caller_identity(session=session, sts_client=sts_client)
    at = now or datetime.now(UTC)
    try:
        request = ControlRequest(
            action=action, backfill_id=backfill_id, reason=reason, requested_by=requester, requested_at=at
        )
    except ValidationError as error:
        issues = [issue_from_pydantic(e) for e in error.errors(include_url=False)]
        hint = "" if requested_by else " (pass requested_by='you@example.com')"
        raise InvalidControlRequestError(
            f"{action} {backfill_id}: " + "; ".join(str(issue) for issue in issues) + hint
        ) from None
    refusal, state, unchecked = _check_before_writing(
        request, table=table, session=session, dynamodb_client=dynamodb_client
    )
    if refusal is not None:
        return ControlOutcome(request, ControlStatus.REFUSED, refusal, bucket, None, state=state)
    key = control_key(request.backfill_id, action, at, prefix=_prefix("CONTROL_PREFIX", CONTROL_PREFIX))
    s3 = aws_client("s3", client=s3_client, session=session)
    try:
        s3.put_object(Bucket=bucket, Key=key, Body=request.to_json().encode(), ContentType="application/json")
    except Exception as error:
        raise ControlWriteError(f"could not write s3://{bucket}/{key}: {error}") from error
    answer_key = result_key(key, results_prefix=_prefix("RESULTS_PREFIX", RESULTS_PREFIX))
    sent = ControlOutcome(
        request,
        ControlStatus.SENT,
        "written; the trigger acts on it",
        bucket,
        key,
        answer_key,
        state=state,
        unchecked=unchecked,
    )
    if not wait:
        return sent
    return wait_for_answer(sent, s3_client=s3, waiting=Waiting(timeout=timeout, on_wait=on_wait, sleep=sleep))


def _check_before_writing(
    request: ControlRequest, *, table: str | None, session: Any, dynamodb_client: Any
) -> tuple[str | None, BackfillState | None, tuple[str, ...]]:
    """(why it is refused or None, the state seen, what was not checked). With a status table:
    an unknown backfill, or a state the action is not allowed in (`Control.allowed_states`,
    the lifecycle's rules the trigger applies too), is refused before anything is written."""
    name = optional_table(table)
    if name is None:
        return None, None, ("the backfill's state before writing (no status table: table= or $STATUS_TABLE)",)
    try:
        record = backfill_status(
            request.backfill_id, table=name, session=session, dynamodb_client=dynamodb_client
        )
    except BackfillNotFoundError:
        return (
            f"unknown backfill {request.backfill_id!r}: no status record in {name}; nothing written",
            None,
            (),
        )
    allowed = CONTROLS[request.action].allowed_states
    if str(record.state) not in allowed:
        why = f"cannot {request.action} {request.backfill_id} in state {record.state} (only in {', '.join(sorted(allowed))})"
        return f"{why}; nothing written", record.state, ()
    return None, record.state, ()


# The outcome of each answer the trigger writes for a control document.
STATUS_OF_ANSWER: dict[ResultOutcome, ControlStatus] = {
    ResultOutcome.DONE: ControlStatus.DONE,
    ResultOutcome.REFUSED: ControlStatus.REFUSED,
    ResultOutcome.REJECTED: ControlStatus.REJECTED,
    ResultOutcome.FAILED: ControlStatus.FAILED,
}


def wait_for_answer(sent: ControlOutcome, *, s3_client: Any, waiting: Waiting) -> ControlOutcome:
    """Read the result file until it says how the control ended (a failure the trigger retries
    by itself is waited through), or until `waiting.timeout` seconds have passed."""
    assert sent.result_key is not None
    uri = f"s3://{sent.bucket}/{sent.result_key}"
    began = waiting.clock()
    pause = FIRST_POLL
    while True:
        answer = _read_answer(uri, s3_client)
        if answer is not None and not (answer.outcome is ResultOutcome.FAILED and answer.retrying):
            return _outcome_of(sent, answer)
        waited = waiting.clock() - began
        if waited >= waiting.timeout:
            return ControlOutcome(
                sent.request,
                ControlStatus.TIMED_OUT,
                f"no answer from the trigger within {waiting.timeout:.0f} s; it may still act: see {uri}",
                sent.bucket,
                sent.key,
                sent.result_key,
                state=sent.state,
                unchecked=sent.unchecked,
            )
        if waiting.on_wait is not None:
            waiting.on_wait(waited)
        waiting.sleep(min(pause, max(waiting.timeout - waited, 0.0)))
        pause = min(pause * 1.5, LONGEST_POLL)


def _read_answer(uri: str, s3_client: Any) -> ResultFile | None:
    try:
        body = documents.read_bytes(uri, max_bytes=ResultFile.max_bytes, s3_client=s3_client)
    except documents.DocumentNotFoundError:
        return None
    except documents.DocumentError as error:
        raise ControlWriteError(f"could not read the trigger's answer {uri}: {error}") from None
    try:
        return ResultFile.from_json(body, source=uri)
    except InvalidDocumentError:
        return None  # being rewritten, or not the trigger's: read it again


def _outcome_of(sent: ControlOutcome, answer: ResultFile) -> ControlOutcome:
    status = STATUS_OF_ANSWER.get(answer.outcome, ControlStatus.FAILED)
    errors = tuple(f"{error.location}: {error.message}" for error in answer.errors or ())
    reason = answer.reason or ("; ".join(errors) if errors else str(answer.outcome))
    return ControlOutcome(
        sent.request,
        status,
        reason,
        sent.bucket,
        sent.key,
        sent.result_key,
        state=answer.state,
        errors=errors,
        unchecked=sent.unchecked,
    )


class ControlOptions(TypedDict, total=False):
    """What every control function takes besides its own arguments."""

    on_wait: Callable[[float], None] | None  # called with the seconds waited so far, at each read
    now: datetime | None
    s3_client: Any
    sts_client: Any
    dynamodb_client: Any
    sleep: Callable[[float], None]


# -- the controls --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Control:
    """One control action, callable as the client's function of that name
    (`cancel_backfill(backfill_id, reason=..., bucket=...)`): what it does, the states it is
    allowed in (checked before writing when the status table is known) and its reason when none
    is given (None: a reason is required). Every control takes the same arguments and returns
    the trigger's answer (`wait=False`: what was written)."""

    action: PersonAction
    summary: str
    allowed_states: frozenset[str] = field(default_factory=frozenset)
    default_reason: str | None = None

    def __call__(
        self,
        backfill_id: str,
        *,
        bucket: str,
        reason: str | None = None,
        requested_by: str | None = None,
        wait: bool = True,
        timeout: float = DEFAULT_TIMEOUT,
        table: str | None = None,
        session: Any = None,
        **options: Unpack[ControlOptions],
    ) -> ControlOutcome:
        reason = reason if reason is not None else self.default_reason
        if reason is None:
            raise InvalidControlRequestError(
                f"{self.action} {backfill_id}: a reason is required (reason=...)"
            )
        return request_control(
            self.action,
            backfill_id,
            reason=reason,
            bucket=bucket,
            requested_by=requested_by,
            wait=wait,
            timeout=timeout,
            table=table,
            session=session,
            **options,
        )


CONTROLS: dict[str, Control] = {
    control.action: control
    for control in (
        Control(
            "cancel",
            "ask the trigger to cancel a backfill (stop its DAG run or replay)",
            ACTION_STATES["cancel"],
        ),
        Control(
            "retry", "ask the trigger to run a failed or cancelled backfill again", ACTION_STATES["retry"]
        ),
        Control(
            "approve",
            "approve a backfill awaiting approval (not your own)",
            ACTION_STATES["approve"],
            default_reason="approved",
        ),
        Control("reject", "reject a backfill awaiting approval", ACTION_STATES["reject"]),
        Control(
            "publish",
            "publish the steps a backfill awaiting publish holds (its diff in Slack and `backfill status`)",
            ACTION_STATES["publish"],
            default_reason="published",
        ),
        Control(
            "discard",
            "discard what a backfill awaiting publish staged; the warehouse stays as it was",
            ACTION_STATES["discard"],
        ),
        Control(
            "undo",
            "put every partition a succeeded backfill published back to what it was",
            ACTION_STATES["undo"],
        ),
    )
}

# The client's functions, one per control (the CLI's commands are made from the same table).
cancel_backfill = CONTROLS["cancel"]
retry_backfill = CONTROLS["retry"]
approve_backfill = CONTROLS["approve"]
reject_backfill = CONTROLS["reject"]
publish_backfill = CONTROLS["publish"]
discard_backfill = CONTROLS["discard"]
undo_backfill = CONTROLS["undo"]


def outcome_json(outcome: ControlOutcome) -> str:
    return json.dumps(outcome.as_dict(), indent=2)
