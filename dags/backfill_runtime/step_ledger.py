"""What happened to each step of the plan, carried from round to round (in the run's
`RunState`) and read at the end for the status record, the notifications and the backfill's
report.

Each entry is the contract's `StepOutcome`: `pending`, then `succeeded`, `failed` (it ran and
failed after its retries), `awaiting_publish` (a Spark step staged and held by the publish
policy: live untouched) or `blocked` (not run because a step it depends on did not succeed,
or waits for a publish). Blocking follows the plan's `upstream` edges, so a failure or a held
step stops its dependants (Spark steps and DAG reruns alike) and nothing else."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from backfill_orchestrator.contracts import AttemptDone, Plan, RunReport, StepOutcome, StepStatus
from backfill_orchestrator.dates import compact_dates
from backfill_orchestrator.planner.rounds import plan_rounds

DONE_TI_STATES = frozenset({"success"})
# What a step's dependants never run after: a failure, a block, and a held step (its output is
# not live until a person publishes it).
NOT_RUN_AFTER = frozenset({StepStatus.FAILED, StepStatus.BLOCKED, StepStatus.AWAITING_PUBLISH})


@dataclass(frozen=True)
class DagRunRequest:
    """One rerun of one DAG for one date (an `airflow_dag` step has one per date)."""

    step_id: str
    dag_id: str
    day: date


@dataclass(frozen=True)
class RoundWork:
    index: int
    spark_step_ids: list[str] = field(default_factory=list)
    dag_runs: list[DagRunRequest] = field(default_factory=list)
    blocked: dict[str, str] = field(default_factory=dict)


class Ledger:
    """step id -> StepOutcome, changed in place while a task works; `RunState.ledger` carries it
    to the next task, `to_dict` / `Ledger(...)` to a continuation run."""

    def __init__(self, entries: Mapping[str, StepOutcome | Mapping[str, Any]]):
        self.entries: dict[str, StepOutcome] = {
            key: value if isinstance(value, StepOutcome) else StepOutcome.model_validate(value)
            for key, value in entries.items()
        }

    @classmethod
    def for_plan(cls, plan: Plan, *, done: AttemptDone | None = None) -> Ledger:
        """Every step pending; for a retry attempt, what earlier attempts finished is taken as
        done (succeeded steps, and the DAG reruns of dates that succeeded) and not run again."""
        rounds = {step_id: round_.index for round_ in plan_rounds(plan) for step_id in round_.step_ids}
        ledger = cls(
            {
                step.id: StepOutcome(
                    status=StepStatus.PENDING, kind=step.kind, round=rounds[step.id], dag_id=step.dag_id
                )
                for step in plan.steps
            }
        )
        if done is not None:
            for step_id in done.steps_done:
                if step_id in ledger.entries:
                    ledger.mark(
                        step_id, StepStatus.SUCCEEDED, detail=f"succeeded in an attempt before {done.attempt}"
                    )
            for step_id, days in done.dates_done.items():
                if step_id in ledger.entries and ledger.status(step_id) is StepStatus.PENDING:
                    ledger.mark(
                        step_id, StepStatus.PENDING, dates={day.isoformat(): "success" for day in days}
                    )
        return ledger

    def to_dict(self) -> dict[str, dict[str, Any]]:
        return {key: value.model_dump(mode="json", exclude_none=True) for key, value in self.entries.items()}

    def status(self, step_id: str) -> StepStatus:
        return self.entries[step_id].status

    def mark(self, step_id: str, status: StepStatus, *, detail: str | None = None, **extra: Any) -> None:
        current = self.entries[step_id].model_dump()
        self.entries[step_id] = StepOutcome.model_validate(
            {**current, "status": status, "detail": detail, **extra}
        )

    def with_status(self, *statuses: StepStatus) -> list[str]:
        return [key for key, value in self.entries.items() if value.status in statuses]

    def counts(self) -> dict[StepStatus, int]:
        counts = dict.fromkeys(StepStatus, 0)
        for value in self.entries.values():
            counts[value.status] += 1
        return counts

    @property
    def succeeded(self) -> bool:
        return all(value.status is StepStatus.SUCCEEDED for value in self.entries.values())

    # -- planning a round ------------------------------------------------------------
    def plan_round(self, plan: Plan, index: int) -> RoundWork:
        """What round `index` runs; marks steps whose upstream did not succeed as blocked.

        Parents in the same round are earlier spark steps of the same submission: they are
        handled in wave order, so a blocked parent blocks its children here too."""
        steps = {step.id: step for step in plan.steps}
        spark_ids: list[str] = []
        dag_runs: list[DagRunRequest] = []
        blocked: dict[str, str] = {}
        for step in (steps[step_id] for step_id in plan_rounds(plan)[index].step_ids):
            if self.status(step.id) is StepStatus.SUCCEEDED:  # an earlier attempt did it
                continue
            blockers = [p for p in step.upstream if self.status(p) in NOT_RUN_AFTER]
            if blockers:
                held = [p for p in blockers if self.status(p) is StepStatus.AWAITING_PUBLISH]
                reason = (
                    f"not run: upstream {', '.join(blockers)} did not succeed"
                    if len(held) < len(blockers)
                    else f"waits for the publish of {', '.join(held)}"
                )
                self.mark(step.id, StepStatus.BLOCKED, detail=reason)
                blocked[step.id] = reason
            elif step.kind == "spark":
                spark_ids.append(step.id)
            else:
                earlier = self.entries[step.id].dates or {}
                dag_runs.extend(
                    DagRunRequest(step.id, step.dag_id, day)
                    for day in step.dates
                    if earlier.get(day) not in DONE_TI_STATES  # succeeded in an earlier attempt
                )
        return RoundWork(index=index, spark_step_ids=spark_ids, dag_runs=dag_runs, blocked=blocked)

    # -- recording a round's results -------------------------------------------------
    def record_spark(
        self,
        step_ids: Iterable[str],
        *,
        report: RunReport | None,
        task_state: str | None,
        unreadable: str | None = None,
    ) -> None:
        """Each submitted step's outcome from the job's run report. `report` is None when no
        report was written (the submission itself failed) or it could not be read
        (`unreadable` says why): every submitted step failed then."""
        results = {step.id: step for step in report.steps} if report is not None else None
        for step_id in step_ids:
            result = (results or {}).get(step_id)
            if result is None:
                if unreadable:
                    why = f"the Spark job's run report is unusable: {unreadable}"
                elif results is None:
                    why = f"the Spark submission ended {task_state or 'without running'} and wrote no run report"
                else:
                    why = "missing from the Spark job's run report"
                self.mark(step_id, StepStatus.FAILED, detail=why)
                continue
            self.mark(step_id, result.status, detail=result.detail, figures=result.figures)

    def record_dag_runs(self, requests: list[DagRunRequest], ti_states: Mapping[int, str | None]) -> None:
        """`ti_states`: map index -> the state of the mapped rerun task for `requests[index]`."""
        by_step: dict[str, dict[str, str]] = {}
        for index, request in enumerate(requests):
            by_step.setdefault(request.step_id, {})[request.day.isoformat()] = (
                ti_states.get(index) or "not run"
            )
        for step_id, dates in by_step.items():
            earlier = {day.isoformat(): state for day, state in (self.entries[step_id].dates or {}).items()}
            dates = {**earlier, **dates}  # dates an earlier attempt finished stay done
            bad = sorted(day for day, state in dates.items() if state not in DONE_TI_STATES)
            if bad:
                detail = f"DAG run failed for {compact_dates(date.fromisoformat(d) for d in bad)}"
                self.mark(step_id, StepStatus.FAILED, detail=detail, dates=dates)
            else:
                self.mark(step_id, StepStatus.SUCCEEDED, dates=dates)
