"""Cut a plan into rounds: the DAG's static slots that run a dynamic plan.

A round is one Spark submission (its `spark` steps, in wave order, run by the generic Spark
job) side by side with one batch of DAG reruns (its `airflow_dag` steps). Round k starts when
round k-1 has finished. A step's round follows its `upstream` edges:

- a spark step after a spark parent stays in the parent's round (the Spark job orders them),
- any other edge (spark -> airflow_dag, airflow_dag -> anything) moves to the next round.

So the Spark job is submitted once per contiguous spark segment: a plan with no spark step
after an airflow_dag step needs one submission, and each spark -> DAG -> spark interleaving
adds one round."""

from __future__ import annotations

from backfill_orchestrator.plan import Plan, PlanStep, Wave


class PlanTooDeepError(ValueError):
    """The plan needs more rounds than the DAG has slots."""

    def __init__(self, needed: int, available: int):
        self.needed = needed
        self.available = available
        super().__init__(
            f"the plan needs {needed} rounds (spark/DAG interleavings) but the DAG has {available} slots; "
            f"raise [backfill] max_rounds (AIRFLOW__BACKFILL__MAX_ROUNDS) and redeploy"
        )


def assign_rounds(plan: Plan) -> dict[str, int]:
    """step id -> round index (0-based). Waves list parents before children, so one pass does."""
    by_id = {step.id: step for step in plan.steps}
    rounds: dict[str, int] = {}
    for step in plan.steps:
        current = 0
        for parent_id in step.upstream:
            parent = by_id[parent_id]
            same_submission = parent.kind == "spark" and step.kind == "spark"
            current = max(current, rounds[parent_id] + (0 if same_submission else 1))
        rounds[step.id] = current
    return rounds


def round_count(plan: Plan) -> int:
    rounds = assign_rounds(plan)
    return max(rounds.values()) + 1 if rounds else 0


def check_fits(plan: Plan, *, max_rounds: int) -> int:
    needed = round_count(plan)
    if needed > max_rounds:
        raise PlanTooDeepError(needed, max_rounds)
    return needed


def steps_in_round(plan: Plan, index: int, *, kind: str) -> list[PlanStep]:
    rounds = assign_rounds(plan)
    return [step for step in plan.steps if step.kind == kind and rounds[step.id] == index]


def sub_plan(plan: Plan, step_ids: set[str]) -> Plan:
    """The plan restricted to `step_ids` (what one Spark submission runs).

    Waves keep their index and order; empty waves are dropped; `upstream` keeps only edges
    inside the selection (the DAG has already checked the others have succeeded)."""
    waves: list[Wave] = []
    for wave in plan.waves:
        steps = [
            step.model_copy(update={"upstream": [p for p in step.upstream if p in step_ids]})
            for step in wave.steps
            if step.id in step_ids
        ]
        if steps:
            waves.append(Wave(index=wave.index, steps=steps))
    # Validated again: this document is what the Spark job reads.
    return Plan.model_validate({**plan.model_dump(), "waves": [w.model_dump() for w in waves]})
