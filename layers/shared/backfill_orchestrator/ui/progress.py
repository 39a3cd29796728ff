"""What each step of a backfill has done, date by date: the cells of the partition grid and the
colour of each step in the graph.

Sources, most final first: the backfill report (`backfill_report.json`, written by the DAG's
`finish`), else the DAG run's own state (the `run_state` XCom of its latest task: the ledger of
every step's outcome and the round in flight), else nothing (all pending: the backfill has not
run yet). A step's state applies to every hour and feed of its dates: the DAG rewrites a step's
dates together (Spark) or reruns a DAG per date; `cells` holds any finer per-partition state."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date

from backfill_orchestrator.contracts.backfill_report import BackfillReport, StepOutcome
from backfill_orchestrator.contracts.plan import Plan, PlanStep
from backfill_orchestrator.contracts.run_state import RunState
from backfill_orchestrator.contracts.steps import StepStatus
from backfill_orchestrator.ui.states import CELL_OF_RERUN, CELL_OF_STEP, CELL_STATES, CellState

HOURS = tuple(range(24))
ALL_FEEDS = "all feeds"
RUNNING_RUN_STATES = frozenset({"queued", "running"})


@dataclass(frozen=True)
class RunProgress:
    """A live DAG run of the backfill, as Airflow has it."""

    run_id: str
    run_state: str  # Airflow's: queued, running, success, failed
    state: RunState | None  # the latest `run_state` XCom of the run (None before `start` wrote one)

    @property
    def running(self) -> bool:
        return self.run_state in RUNNING_RUN_STATES

    def launched_steps(self) -> frozenset[str]:
        launch = self.state.launched if self.state is not None else None
        if launch is None:
            return frozenset()
        spark = set(launch.spark.step_ids) if launch.spark is not None else set()
        return frozenset(spark | set(launch.reruns))


@dataclass(frozen=True)
class StepGrid:
    """One step's partitions: its dates (columns) by its feeds and hours (rows)."""

    step_id: str
    kind: str
    dag_id: str
    dates: tuple[date, ...]
    hours: tuple[int, ...]
    feeds: tuple[str, ...]
    states: tuple[CellState, ...]  # one per date
    detail: str | None = None  # what went wrong, what blocked it
    # (date index, hour, feed index) -> a state finer than the date's (per-partition outcomes)
    cells: Mapping[tuple[int, int, int], CellState] = field(default_factory=dict)

    @property
    def state(self) -> CellState:
        """The step as one state (its node in the graph): the most telling of its dates'."""
        present = set(self.states) | set(self.cells.values())
        for state in (
            CellState.FAILED,
            CellState.RUNNING,
            CellState.HELD,
            CellState.BLOCKED,
            CellState.PENDING,
            CellState.SUCCEEDED,
        ):
            if state in present:
                return state
        return CellState.PENDING

    @property
    def codes(self) -> str:
        return "".join(CELL_STATES[state].code for state in self.states)


def step_grids(
    plan: Plan,
    *,
    report: BackfillReport | None = None,
    run: RunProgress | None = None,
    finished: bool = False,
) -> list[StepGrid]:
    """One grid per plan step, in wave order. `finished`: the backfill has ended (nothing of it
    still runs, whatever a run's last state says)."""
    if report is not None:
        ledger: Mapping[str, StepOutcome] = report.steps
    elif run is not None and run.state is not None:
        ledger = run.state.ledger
    else:
        ledger = {}
    running = run is not None and run.running and not finished and report is None
    launched = run.launched_steps() if running and run is not None else frozenset()
    return [_grid(step, ledger.get(step.id), in_flight=step.id in launched) for step in plan.steps]


def _grid(step: PlanStep, outcome: StepOutcome | None, *, in_flight: bool) -> StepGrid:
    dates = tuple(step.dates)
    waiting = CellState.RUNNING if in_flight else CellState.PENDING
    detail = outcome.detail if outcome is not None else None
    if outcome is None:
        states = tuple(waiting for _ in dates)
    elif outcome.dates and outcome.status is not StepStatus.SUCCEEDED:
        fallback = CELL_OF_STEP[outcome.status] if outcome.status.done else waiting
        states = tuple(_rerun_cell(outcome.dates.get(day), fallback) for day in dates)
    else:
        state = CELL_OF_STEP[outcome.status]
        states = tuple(waiting if state is CellState.PENDING else state for _ in dates)
    return StepGrid(
        step_id=step.id,
        kind=step.kind,
        dag_id=step.dag_id,
        dates=dates,
        hours=tuple(step.hours) if step.hours else HOURS,
        feeds=tuple(step.feeds) if step.feeds else (ALL_FEEDS,),
        states=states,
        detail=detail,
    )


def _rerun_cell(task_state: str | None, fallback: CellState) -> CellState:
    if task_state is None:
        return fallback
    return CELL_OF_RERUN.get(task_state, CellState.RUNNING)
