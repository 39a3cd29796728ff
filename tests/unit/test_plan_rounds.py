"""`plan_rounds`: how the DAG cuts a plan into rounds, the one cut the preflight counts and a
plan's pages draw."""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from datetime import UTC, date, datetime, timedelta

import pytest

from backfill_orchestrator.contracts import Plan
from backfill_orchestrator.planner import Round, plan_rounds


def step(step_id: str, kind: str, *, upstream: tuple[str, ...] = (), days: int = 1) -> dict:
    return {
        "id": step_id,
        "job": {"namespace": "ns", "name": step_id},
        "dag_id": step_id,
        "kind": kind,
        "transform": step_id if kind == "spark" else None,
        "dates": [(date(2021, 6, 1) + timedelta(days=n)).isoformat() for n in range(days)],
        "reason": "downstream" if upstream else "root",
        "upstream": list(upstream),
    }


def plan(*waves: list[dict]) -> Plan:
    return Plan.model_validate(
        {
            "backfill_id": "rounds-0123abcd",
            "name": "rounds",
            "owner": "@jane",
            "created_at": datetime(2021, 6, 14, tzinfo=UTC),
            "roots": [],
            "dates": ["2021-06-01"],
            "waves": [{"index": i, "steps": list(w)} for i, w in enumerate(waves)],
        }
    )


def cut(rounds: list[Round]) -> list[tuple[list[str], list[str]]]:
    return [(list(r.spark_step_ids), list(r.dag_step_ids)) for r in rounds]


def test_an_empty_plan_has_no_rounds() -> None:
    assert plan_rounds(plan()) == []


def test_a_spark_chain_is_one_round_in_wave_order() -> None:
    rounds = plan_rounds(
        plan(
            [step("a", "spark")], [step("b", "spark", upstream=("a",))], [step("c", "spark", upstream=("b",))]
        )
    )
    assert rounds == [Round(index=0, spark_step_ids=("a", "b", "c"), dag_step_ids=(), dag_reruns=0)]
    assert rounds[0].step_ids == ("a", "b", "c")


def test_a_dag_step_after_spark_moves_to_the_next_round_and_counts_its_dates() -> None:
    rounds = plan_rounds(
        plan([step("a", "spark", days=3)], [step("d", "airflow_dag", upstream=("a",), days=3)])
    )
    assert cut(rounds) == [(["a"], []), ([], ["d"])]
    assert [r.dag_reruns for r in rounds] == [0, 3]


def test_anything_after_a_dag_step_moves_on() -> None:
    rounds = plan_rounds(
        plan(
            [step("d1", "airflow_dag")],
            [step("d2", "airflow_dag", upstream=("d1",)), step("s", "spark", upstream=("d1",))],
        )
    )
    assert cut(rounds) == [([], ["d1"]), (["s"], ["d2"])]


def test_independent_roots_share_round_0_whatever_their_kind() -> None:
    rounds = plan_rounds(plan([step("a", "spark"), step("d", "airflow_dag", days=2), step("b", "spark")]))
    assert cut(rounds) == [(["a", "b"], ["d"])] and rounds[0].dag_reruns == 2


def test_each_spark_dag_spark_interleaving_adds_a_round_and_a_step_takes_its_latest_parent() -> None:
    rounds = plan_rounds(
        plan(
            [step("a", "spark"), step("x", "spark")],
            [step("b", "spark", upstream=("a",)), step("d1", "airflow_dag", upstream=("x",), days=2)],
            [step("d2", "airflow_dag", upstream=("b",)), step("c", "spark", upstream=("d1",))],
            [step("e", "spark", upstream=("c", "b")), step("d3", "airflow_dag", upstream=("d2",))],
        )
    )
    assert cut(rounds) == [(["a", "x", "b"], []), ([], ["d1", "d2"]), (["c", "e"], ["d3"])]
    assert [r.index for r in rounds] == [0, 1, 2] and [r.dag_reruns for r in rounds] == [0, 3, 1]


def test_a_chain_of_dag_steps_is_a_round_each() -> None:
    waves = [[step("d0", "airflow_dag")]] + [
        [step(f"d{i}", "airflow_dag", upstream=(f"d{i - 1}",))] for i in range(1, 30)
    ]
    rounds = plan_rounds(plan(*waves))
    assert len(rounds) == 30 and all(r.dag_step_ids == (f"d{r.index}",) for r in rounds)


def test_a_round_is_immutable() -> None:
    [only] = plan_rounds(plan([step("a", "spark")]))
    with pytest.raises(FrozenInstanceError):
        only.index = 1  # type: ignore[misc]
