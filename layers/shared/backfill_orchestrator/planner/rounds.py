"""A plan's rounds: how the `backfill` DAG runs it, derived once for the DAG, the preflight and
the pages that draw a plan.

A round is one Spark submission (its `spark` steps, in wave order, run by the generic Spark
job) side by side with one batch of DAG reruns (its `airflow_dag` steps, one run per step and
date). Round k starts when round k-1 has finished. A step's round follows its `upstream` edges:

- a spark step after a spark parent stays in the parent's round (the Spark job orders them),
- any other edge (spark -> airflow_dag, airflow_dag -> anything) moves to the next round.

So the Spark job is submitted once per contiguous spark segment: a plan with no spark step
after an airflow_dag step needs one submission, and each spark -> DAG -> spark interleaving
adds one round."""

from __future__ import annotations

from dataclasses import dataclass

from backfill_orchestrator.contracts.plan import Plan


@dataclass(frozen=True)
class Round:
    """One round of a plan: what one Spark submission and one batch of DAG reruns run."""

    index: int  # 0-based, in the order the DAG runs them
    spark_step_ids: tuple[str, ...]  # one Spark submission, in wave order
    dag_step_ids: tuple[str, ...]  # airflow_dag steps, in wave order
    dag_reruns: int  # (DAG, date) reruns: the dates of its airflow_dag steps

    @property
    def step_ids(self) -> tuple[str, ...]:
        return self.spark_step_ids + self.dag_step_ids


def plan_rounds(plan: Plan) -> list[Round]:
    """The plan's rounds, in order; none for a plan without steps. Waves list parents before
    children, so one pass assigns every step."""
    kinds = {step.id: step.kind for step in plan.steps}
    index_of: dict[str, int] = {}
    spark: list[list[str]] = []
    dags: list[list[str]] = []
    reruns: list[int] = []
    for step in plan.steps:
        index = max(
            (
                index_of[parent] + (0 if kinds[parent] == "spark" and step.kind == "spark" else 1)
                for parent in step.upstream
            ),
            default=0,
        )
        index_of[step.id] = index
        while len(reruns) <= index:
            spark.append([])
            dags.append([])
            reruns.append(0)
        if step.kind == "spark":
            spark[index].append(step.id)
        else:
            dags[index].append(step.id)
            reruns[index] += len(step.dates)
    return [
        Round(
            index=index,
            spark_step_ids=tuple(spark[index]),
            dag_step_ids=tuple(dags[index]),
            dag_reruns=reruns[index],
        )
        for index in range(len(reruns))
    ]
