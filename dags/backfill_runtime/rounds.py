"""Cut a plan's rounds into what one DAG run and one task runs.

A plan's rounds are `backfill_orchestrator.planner.plan_rounds` (the preflight counts the
same ones). A DAG run has `[backfill] max_rounds` round slots; a plan with more rounds
continues in a new run (`rounds_of_run`). A round's DAG reruns are cut into chunks, one mapped
task each (`chunked`), so no round exceeds Airflow's map limit. A round's Spark submission
runs the plan restricted to its runnable spark steps (`sub_plan`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypeVar

from backfill_orchestrator.contracts import Plan, Wave

T = TypeVar("T")


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
