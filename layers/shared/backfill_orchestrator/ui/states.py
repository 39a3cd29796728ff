"""The page's two vocabularies, one table each: what a cell of the partition grid (and a step
of the graph) can be, and what a person can press. A new cell state (staged, published,
undone) or a new action (publish, discard, undo) is one row here; the templates, the CSS and
the script read these tables."""

from __future__ import annotations

from dataclasses import dataclass

from backfill_orchestrator._compat import StrEnum
from backfill_orchestrator.contracts.steps import StepStatus
from backfill_orchestrator.policy import ACTION_STATES


class CellState(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    BLOCKED = "blocked"
    HELD = "held"  # staged and checked, held by the publish policy: live untouched


@dataclass(frozen=True)
class CellStyle:
    code: str  # one character: a step's dates travel as one string of codes
    label: str
    color: str
    meaning: str


CELL_STATES: dict[CellState, CellStyle] = {
    CellState.PENDING: CellStyle("p", "pending", "#d6dbe1", "not run yet"),
    CellState.RUNNING: CellStyle("r", "running", "#4a90d9", "its round is running now"),
    CellState.SUCCEEDED: CellStyle("s", "succeeded", "#2e9e5b", "rewritten"),
    CellState.FAILED: CellStyle("f", "failed", "#d64545", "its step or rerun failed"),
    CellState.BLOCKED: CellStyle("b", "blocked", "#e3a33b", "not run: a step it depends on did not succeed"),
    CellState.HELD: CellStyle(
        "h", "held", "#8e6ccf", "staged and checked; waits for a person to publish or discard"
    ),
}
STATE_OF_CODE: dict[str, CellState] = {style.code: state for state, style in CELL_STATES.items()}

# A step's outcome in the DAG's ledger or the backfill report, as a cell.
CELL_OF_STEP: dict[StepStatus, CellState] = {
    StepStatus.PENDING: CellState.PENDING,
    StepStatus.SUCCEEDED: CellState.SUCCEEDED,
    StepStatus.FAILED: CellState.FAILED,
    StepStatus.BLOCKED: CellState.BLOCKED,
    StepStatus.AWAITING_PUBLISH: CellState.HELD,
}
# A (DAG, date) rerun's Airflow state, as its cell; states not listed are RUNNING.
CELL_OF_RERUN: dict[str, CellState] = {
    "success": CellState.SUCCEEDED,
    "failed": CellState.FAILED,
    "upstream_failed": CellState.BLOCKED,
    "skipped": CellState.BLOCKED,
    "removed": CellState.BLOCKED,
    "not run": CellState.BLOCKED,
}


@dataclass(frozen=True)
class PageAction:
    label: str
    asks_reason: bool  # the page asks why (the control document's `reason`); else a default one
    confirm: str  # what the confirmation dialog says
    style: str  # "primary" or "danger"


# The control actions a press writes (contracts.ControlAction). Where each is allowed is the
# lifecycle's rule (policy.ACTION_STATES), checked here only to show the buttons that can work.
ACTIONS: dict[str, PageAction] = {
    "approve": PageAction("Approve", False, "Approve this backfill? It will be admitted and run.", "primary"),
    "reject": PageAction("Reject", True, "Reject this backfill? It will not run.", "danger"),
    "cancel": PageAction("Cancel", True, "Cancel this backfill? Its DAG run is stopped.", "danger"),
    "retry": PageAction("Retry failed", False, "Run the steps that did not succeed again?", "primary"),
    "publish": PageAction(
        "Publish", False, "Publish the held steps? Their staged partitions replace the live ones.", "primary"
    ),
    "discard": PageAction(
        "Discard", True, "Discard what this backfill staged? The warehouse stays as it was.", "danger"
    ),
    "undo": PageAction(
        "Undo", True, "Undo this backfill? Every partition it published goes back to what it was.", "danger"
    ),
}


_NO_OPS = frozenset({("cancel", "CANCELLED"), ("undo", "UNDONE")})  # allowed, but nothing to do: no button


def actions_allowed_in(state: str) -> list[str]:
    """The actions whose lifecycle rule allows them in `state`, in the table's order."""
    return [
        action
        for action in ACTIONS
        if state in ACTION_STATES.get(action, frozenset()) and (action, state) not in _NO_OPS
    ]
