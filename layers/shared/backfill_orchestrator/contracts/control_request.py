"""Control documents: a request to act on a backfill (cancel, retry, approve, reject, and the
safe publish's publish, discard, undo; `start`
is the orchestrator's own: a queued backfill whose blocking backfill ended). Dropped or sent by people, so every problem is reported with its
location, like a config."""

from __future__ import annotations

from typing import Literal, TypeGuard, get_args

from pydantic import AwareDatetime, Field, field_validator

from backfill_orchestrator.contracts.base import Contract
from backfill_orchestrator.contracts.fields import BackfillId

# What a person may ask (the policy checks it; Slack and the CLI offer it), and the
# orchestrator's own `start`.
PersonAction = Literal["cancel", "retry", "approve", "reject", "publish", "discard", "undo"]
ControlAction = Literal[PersonAction, "start"]
PERSON_ACTIONS: tuple[PersonAction, ...] = get_args(PersonAction)


def is_person_action(action: str) -> TypeGuard[PersonAction]:
    return action in PERSON_ACTIONS


# Who asked: an email, a Slack handle (@name) or user (slack:U0123), an AWS principal as the
# trigger records it (role/<name>/<session>), or the orchestrator itself (system:<component>).
REQUESTER_PATTERN = r"^[^\s\x00-\x1f]{1,200}$"


class ControlRequest(
    Contract, document_name="control document", version_field="control_version", max_bytes=64 * 1024
):
    control_version: Literal[1] = 1
    action: ControlAction
    backfill_id: BackfillId
    reason: str = Field(min_length=1, max_length=500, description="Why; shown in the record and in Slack")
    requested_by: str = Field(
        pattern=REQUESTER_PATTERN,
        description="Who asked: email, @handle, slack:<user id>, an AWS principal, or system:<component>",
    )
    requested_at: AwareDatetime = Field(description="ISO 8601 with a time zone")

    @field_validator("reason")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value.strip()
