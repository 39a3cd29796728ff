"""Plans deeper than one DAG run: a run executes at most `[backfill] max_rounds` rounds (its
static slots); when rounds remain it triggers a continuation run of the same DAG and stops
there, and the last run of the chain does the terminal reporting.

The continuation's conf is the run's conf plus `first_round` (the next plan round) and
`ledger_uri`: the carried state (`Carried`: the ledger, when the backfill started), written
beside the plan before the trigger. Its run id is the first run's id plus `__cont<k>`, so a
crashed and retried `next_run` task triggers the same id again and Airflow's 409 means "already
continued". The status record's `dag_run_id` follows the chain, which is how a cancel finds the
run that is live now."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, ClassVar

from pydantic import Field

from backfill_orchestrator.contracts.base import Contract
from backfill_orchestrator.contracts.fields import BackfillId

_CONTINUATION_SUFFIX = re.compile(r"__cont\d+$")
MAX_CARRIED_BYTES = 4 * 1024 * 1024


class Carried(Contract):
    """What a run hands to its continuation (one JSON document beside the plan)."""

    document_name: ClassVar[str] = "carried backfill state"
    max_bytes: ClassVar[int] = MAX_CARRIED_BYTES

    backfill_id: BackfillId
    first_round: int = Field(ge=1, description="the plan round the continuation starts with")
    started_at: datetime | None = Field(default=None, description="when the chain's first run started")
    ledger: dict[str, dict[str, Any]] = Field(
        description="step id -> StepOutcome after the rounds before first_round"
    )


def first_run_id(run_id: str) -> str:
    """The chain's first run id (a continuation's id without its `__cont<k>`)."""
    return _CONTINUATION_SUFFIX.sub("", run_id)


def continuation_run_id(run_id: str, *, first_round: int, slots: int) -> str:
    """`<first run id>__cont<k>`, k = the continuation's place in the chain (1, 2, ...). The
    same run asking twice gets the same id: the trigger is idempotent."""
    return f"{first_run_id(run_id)}__cont{first_round // slots}"


def carried_uri(plan_uri: str, run_id: str) -> str:
    from backfill_orchestrator.documents import sibling

    return sibling(plan_uri, f"continuations/{run_id}.json")


def needs_continuation(*, first_round: int, slots: int, total: int) -> bool:
    return first_round + slots < total
