"""The trigger's outcomes are enums with one table: every state has its row, every outcome a
result file may carry is in the result file's contract, and every state a mode can end an
upload in has what the service needs to finish it (a metric and a message)."""

from __future__ import annotations

import pytest

from backfill_orchestrator.config import ConfigIssue, parse_config
from backfill_orchestrator.contracts.result_file import ResultOutcome
from backfill_orchestrator.notify.slack import SlackMessage
from backfill_orchestrator.status import BackfillState, StatusRecord
from backfill_orchestrator.trigger.events import Upload
from backfill_orchestrator.trigger.outcomes import (
    DISPOSITION_OF,
    OUTCOME_OF,
    ControlOutcome,
    ControlResult,
    Disposition,
    Finished,
)
from backfill_orchestrator.trigger.runs import ModeOutcome
from tests.support.configs import EXAMPLES

# The states a mode runner returns (trigger/modes.py, trigger/approval.py).
MODE_ENDINGS = {
    BackfillState.PLANNED,
    BackfillState.AWAITING_APPROVAL,
    BackfillState.QUEUED,
    BackfillState.TRIGGERED,
    BackfillState.REJECTED,
    BackfillState.FAILED,
}
NEVER_WRITTEN = {Disposition.DUPLICATE, Disposition.IGNORED}  # nothing is written for these


def test_every_state_has_one_row() -> None:
    assert set(OUTCOME_OF) == set(BackfillState)


def test_every_outcome_written_is_one_the_result_file_knows() -> None:
    known = {outcome.value for outcome in ResultOutcome}
    assert {str(d) for d in Disposition if d not in NEVER_WRITTEN} <= known
    assert {
        str(r) for r in ControlResult if r not in (ControlResult.DUPLICATE, ControlResult.IGNORED)
    } <= known
    assert {str(row.disposition) for row in OUTCOME_OF.values()} <= known


def test_every_control_result_has_the_uploads_outcome() -> None:
    assert set(DISPOSITION_OF) == set(ControlResult)
    assert ControlOutcome(ControlResult.REFUSED, "b", None, "no").disposition is Disposition.REJECTED


def test_the_states_a_mode_ends_in_have_a_metric_and_a_message() -> None:
    finishing = {state for state, row in OUTCOME_OF.items() if row.metric is not None}
    assert finishing == MODE_ENDINGS
    assert all(OUTCOME_OF[state].message is not None for state in MODE_ENDINGS)
    for row in OUTCOME_OF.values():  # a fallback is a state the service can record itself
        assert row.fallback is None or OUTCOME_OF[row.fallback].records is not None


@pytest.mark.parametrize("state", sorted(MODE_ENDINGS))
def test_each_ending_message_is_a_slack_message_naming_the_backfill(state: BackfillState) -> None:
    config = parse_config((EXAMPLES / "minimal-batch.yaml").read_bytes(), source="minimal-batch.yaml")
    record = StatusRecord(
        backfill_id="orders-fix-1a2b3c4d",
        state=BackfillState.RECEIVED,
        version=1,
        created_at="2021-06-14T09:00:00Z",
        updated_at="2021-06-14T09:00:00Z",
        submitted_by="jane",
    )
    outcome = ModeOutcome(
        state, issues=[ConfigIssue("dates", "2021-06-31 is not a date")], reason="why it ended so"
    )
    end = Finished(
        upload=Upload(bucket="configs", key="incoming/minimal-batch.yaml"),
        config=config,
        record=record,
        outcome=outcome,
        lineage_url=None,
    )

    message = OUTCOME_OF[state].message(end)  # type: ignore[misc]

    assert isinstance(message, SlackMessage)
    text = message.text + str(message.blocks)
    assert record.backfill_id in text or "minimal-batch.yaml" in text
