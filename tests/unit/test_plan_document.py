"""The planner builds its Plan without validating each step (planner/document.py): the model
it makes must be the one pydantic's validation makes, field for field, on any graph."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from backfill_local.marquez_double import InProcessMarquez, LineageStore, run_events
from backfill_orchestrator.config import JobRef, backfill_id, parse_config
from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.lineage import InMemoryLineage
from backfill_orchestrator.planner import JobCatalog, PlanRefusedError, build_plan, document

TODAY = date(2021, 6, 30)
NOW = datetime(2021, 6, 30, 12, tzinfo=UTC)


def random_case(seed: int) -> tuple[LineageStore, JobCatalog, Any]:
    """Random layered lineage: DAG task jobs, spark transforms with windows, several roots,
    exclusions, hours and feeds, a max_depth that may cut the walk."""
    rng = random.Random(seed)
    store = LineageStore()
    entries, names, previous = [], [], ["root.out"]
    store.ingest_all(run_events("gen", "root", outputs=["root.out"]))
    for layer in range(rng.randint(2, 12)):
        current = []
        for index in range(rng.randint(1, 12)):
            name = f"j{layer}_{index}"
            parent = f"dag{layer}_{rng.randint(0, 2)}" if rng.random() < 0.2 else None
            inputs = rng.sample(previous, k=rng.randint(1, min(3, len(previous))))
            store.ingest_all(run_events("gen", name, inputs=inputs, outputs=[f"{name}.out"], parent=parent))
            if parent is None and rng.random() < 0.5:
                entries.append(
                    {
                        "namespace": "gen",
                        "name": name,
                        "kind": "spark",
                        "window_days": rng.choice((1, 2, 3, 7)),
                    }
                )
            elif rng.random() < 0.2:
                entries.append(
                    {
                        "namespace": "gen",
                        "name": parent and f"{parent}.{name}" or name,
                        "window_days": rng.randint(1, 4),
                    }
                )
            names.append(parent and f"{parent}.{name}" or name)
            current.append(f"{name}.out")
        previous = current
    extra: dict[str, Any] = {
        "downstream": {
            "max_depth": rng.randint(1, 15),
            "exclude": [
                {"namespace": "gen", "name": name}
                for name in rng.sample(names, k=min(len(names), rng.randint(0, 3)))
            ],
        }
    }
    if rng.random() < 0.5:
        extra["hours"] = sorted(rng.sample(range(24), k=3))
    if rng.random() < 0.5:
        extra["feeds"] = ["web", "app"]
    roots = ["root", *rng.sample(names, k=rng.randint(0, 2))]
    config = parse_config(
        {
            "version": 1,
            "name": "random",
            "owner": "@jane",
            "mode": "batch",
            "jobs": [{"namespace": "gen", "name": name} for name in roots],
            "dates": ["2021-06-04", {"start": "2021-06-20", "end": "2021-06-22"}],
            **extra,
        }
    )
    return store, JobCatalog.parse({"version": 1, "jobs": entries}), config


def anatomy(value: Any) -> Any:
    """Everything that tells two models apart: classes, fields set, extras, values and their types."""
    if isinstance(value, BaseModel):
        return (
            type(value).__name__,
            sorted(value.model_fields_set),
            value.__pydantic_extra__,
            value.__pydantic_private__,
            list(value.__dict__),
            {key: anatomy(field) for key, field in value.__dict__.items()},
        )
    if isinstance(value, list | tuple | set | dict):
        items = value.items() if isinstance(value, dict) else value
        return (type(value).__name__, [anatomy(item) for item in items])
    return (type(value).__name__, value)


def plans(
    store: LineageStore, catalog: JobCatalog, config: Any, monkeypatch, *, in_memory: bool
) -> tuple[Plan, Plan]:
    def plan() -> Plan:
        lineage = (
            InMemoryLineage.from_response(store.lineage("job:gen:root", 100))
            if in_memory
            else InProcessMarquez(store)
        )
        return build_plan(
            config, backfill_id=backfill_id(config), lineage=lineage, catalog=catalog, today=TODAY, now=NOW
        )

    trusted = plan()
    with monkeypatch.context() as patched:
        patched.setattr(document, "_job_names_valid", lambda jobs: False)  # the validating path
        validated = plan()
    return trusted, validated


@pytest.mark.parametrize("seed", range(40))
def test_the_trusted_plan_is_the_validated_plan(seed, monkeypatch):
    store, catalog, config = random_case(seed)
    try:
        trusted, validated = plans(store, catalog, config, monkeypatch, in_memory=seed % 2 == 0)
    except PlanRefusedError:
        return  # a step cycle or conflict: refused before any document is made
    assert anatomy(trusted) == anatomy(validated)
    assert trusted == validated
    assert trusted.to_json() == validated.to_json()
    assert Plan.from_json(trusted.to_json()) == trusted


def test_random_cases_reach_what_they_are_meant_to():
    """The random cases must exercise spark and DAG steps, windows, exclusions and cuts."""
    kinds, windows, dropped, cut = set(), set(), 0, 0
    for seed in range(40):
        store, catalog, config = random_case(seed)
        try:
            plan = build_plan(
                config,
                backfill_id="x",
                lineage=InProcessMarquez(store),
                catalog=catalog,
                today=TODAY,
                now=NOW,
            )
        except PlanRefusedError:
            continue
        kinds |= {step.kind for step in plan.steps}
        windows |= {step.window_days for step in plan.steps}
        dropped += any("excluded jobs" in exclusion.reason for exclusion in plan.exclusions)
        cut += any(warning.code == "max_depth_reached" for warning in plan.warnings)
    assert kinds == {"spark", "airflow_dag"} and {1, 2, 3, 7} <= windows and dropped and cut


@pytest.mark.parametrize(
    "name",
    [
        "a",
        "a b",
        "ns:x/y",
        "é",
        "x" * 1024,
        "x" * 1025,
        "",
        " a",
        "a ",
        "a\nb",
        "a\n",
        "\ta",
        "a\u00a0",
        "a\u2003b",
        "a\x1cb",
        "a\x00",
    ],
)
def test_the_bulk_name_check_is_job_refs_rule(name):
    try:
        JobRef(namespace="ns", name=name)
        valid = True
    except ValidationError:
        valid = False
    assert document._job_names_valid([{"namespace": "ns", "name": name}]) is valid
    assert document._job_names_valid([{"namespace": name, "name": "ok"}]) is valid


def test_a_lineage_name_job_ref_refuses_takes_the_validating_path():
    store = LineageStore()
    store.ingest_all(run_events("ns", "a", outputs=["a.out"]))
    store.ingest_all(run_events("ns", "b ", inputs=["a.out"]))  # a trailing space: not a JobRef name
    config = parse_config(
        {
            "version": 1,
            "name": "x",
            "owner": "@jane",
            "mode": "batch",
            "jobs": [{"namespace": "ns", "name": "a"}],
            "dates": ["2021-06-04"],
        }
    )
    with pytest.raises(ValidationError, match=r"waves\.1\.steps\.0\.job\.name"):
        build_plan(config, backfill_id="x", lineage=InProcessMarquez(store), today=TODAY, now=NOW)
