"""Cut a plan into rounds, and rounds into what one DAG run and one task runs.

A round is one Spark submission (its `spark` steps, in wave order, run by the generic Spark
job) side by side with one batch of DAG reruns (its `airflow_dag` steps). Round k starts when
round k-1 has finished. A step's round follows its `upstream` edges:

- a spark step after a spark parent stays in the parent's round (the Spark job orders them),
- any other edge (spark -> airflow_dag, airflow_dag -> anything) moves to the next round.

So the Spark job is submitted once per contiguous spark segment: a plan with no spark step
after an airflow_dag step needs one submission, and each spark -> DAG -> spark interleaving
adds one round.

A DAG run has `[backfill] max_rounds` round slots; a plan with more rounds continues in a
new run (`rounds_of_run`). A round's DAG reruns are cut into chunks, one mapped task each
(`chunked`), so no round exceeds Airflow's map limit."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypeVar

from backfill_orchestrator.contracts.plan import Plan, PlanStep, Wave

T = TypeVar("T")


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


def rounds_of_run(*, first_round: int, slots: int, total: int) -> range:
    """The plan rounds one DAG run executes: from `first_round`, at most `slots` of them (its
    static round slots); the rest go to a continuation run (backfill_runtime/continuation.py)."""
    return range(first_round, min(first_round + slots, total))


def chunked(items: Sequence[T], *, size: int, max_chunks: int) -> list[list[T]]:
    """`items` in consecutive chunks of `size` (the reruns one mapped task runs). When that
    would give more than `max_chunks` (Airflow's [core] max_map_length), the chunks grow
    instead: a round of any size maps to at most `max_chunks` tasks."""
    if not items:
        return []
    size = max(size, math.ceil(len(items) / max_chunks))
    return [list(items[start : start + size]) for start in range(0, len(items), size)]


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
