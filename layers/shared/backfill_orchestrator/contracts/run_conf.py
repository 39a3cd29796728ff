"""The conf of a `backfill` DAG run: what the trigger function sends and the DAG's `start`
checks before anything is read or written."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, model_validator

from backfill_orchestrator.contracts.base import Contract, InvalidDocumentError, parse_document
from backfill_orchestrator.contracts.fields import BackfillId, DocumentUri, is_backfill_id
from backfill_orchestrator.errors import ROOT, ConfigIssue

TRACE_ID_PATTERN = r"^[A-Za-z0-9._:=/+-]{1,128}$"
MAX_ATTEMPTS = 1000  # DAG run attempts of one backfill: the first, then its retries


class RunConf(
    Contract,
    document_name="DAG run conf",
    version_field="contract_version",
    version_required=False,  # a hand-made conf of the three URIs is version 1
    max_bytes=64 * 1024,
):
    contract_version: Literal[1] = 1
    backfill_id: BackfillId
    config_uri: DocumentUri = Field(description="The config as uploaded, beside its plan")
    plan_uri: DocumentUri = Field(description="The plan document (plan_version 1)")
    result_uri: DocumentUri | None = Field(
        default=None, description="The result file beside the dropped config; the DAG keeps it up to date"
    )
    attempt: int = Field(
        default=1, ge=1, le=MAX_ATTEMPTS, description="1 for the first run of this backfill, then 2, 3, ..."
    )
    done_uri: DocumentUri | None = Field(
        default=None,
        description="A retry attempt: the work earlier attempts finished (AttemptDone), not run again",
    )
    trace_id: str | None = Field(
        default=None, pattern=TRACE_ID_PATTERN, description="Correlates logs across components"
    )
    first_round: int | None = Field(
        default=None,
        ge=1,
        le=100_000,
        description="A continuation run (set by the DAG itself): the plan round it starts with",
    )
    ledger_uri: DocumentUri | None = Field(
        default=None, description="A continuation run: what the runs before it did (the DAG's carried state)"
    )

    @model_validator(mode="after")
    def _continuation_has_its_ledger(self) -> RunConf:
        if (self.first_round is None) != (self.ledger_uri is None):
            raise ValueError("first_round and ledger_uri go together (a continuation run of the DAG)")
        return self

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any] | None, *, source: str | None = None) -> RunConf:
        """A DAG run's conf (a mapping, or None when triggered without one)."""
        if not conf:
            required = ", ".join(name for name, field in cls.model_fields.items() if field.is_required())
            raise InvalidDocumentError(
                document=cls.document_name,
                issues=[
                    ConfigIssue(
                        ROOT, f"conf is empty: trigger with {{{required}}} (the trigger function does this)"
                    )
                ],
                source=source,
            )
        return parse_document(cls, conf, source=source)

    def to_conf(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


def backfill_id_of(conf: object) -> str | None:
    """The conf's backfill id when it is well formed, even if the rest of the conf is not (so
    a refused run can still be reported on the backfill's record)."""
    value = conf.get("backfill_id") if isinstance(conf, Mapping) else None
    return value if is_backfill_id(value) else None
