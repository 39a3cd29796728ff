"""Control documents: a person's request to act on a running or finished backfill (cancel,
retry, approve, reject). Dropped or sent by people, so every problem is reported with its
location, like a config."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, AwareDatetime, Field, field_validator

from backfill_orchestrator.config.model import _check_owner
from backfill_orchestrator.contracts.base import Contract
from backfill_orchestrator.contracts.fields import BackfillId

ControlAction = Literal["cancel", "retry", "approve", "reject"]


class ControlRequest(Contract):
    document_name: ClassVar[str] = "control document"
    version_field: ClassVar[str] = "control_version"
    max_bytes: ClassVar[int] = 64 * 1024

    control_version: Literal[1] = 1
    action: ControlAction
    backfill_id: BackfillId
    reason: str = Field(min_length=1, max_length=500, description="Why; shown in the record and in Slack")
    requested_by: Annotated[str, AfterValidator(_check_owner)] = Field(
        description="An email address or a Slack handle (@name), like a config's owner"
    )
    requested_at: AwareDatetime = Field(description="ISO 8601 with a time zone")

    @field_validator("reason")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value.strip()
