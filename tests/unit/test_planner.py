"""build_plan: what reruns, for which dates, in which order, over lineage Marquez would answer."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from backfill_local.marquez_double import InProcessMarquez, LineageStore, food_delivery_events, run_events
from backfill_orchestrator.config import JobRef, backfill_id, parse_config
from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.planner import (
    JobCatalog,
    LineageCycleError,
    NotPlannableError,
    StepConflictError,
    UnknownRootJobError,
    build_plan,
    render_plan_text,
)

EXAMPLE_CATALOG = Path(__file__).resolve().parents[2] / "examples" / "catalog.yaml"
TODAY = date(2021, 6, 30)
NOW = datetime(2021, 6, 30, 12, tzinfo=UTC)
FD = "food_delivery"


def config(jobs, dates=("2021-06-04",), namespace="ns", **extra):
    document = {
        "version": 1,
        "name": "test-backfill",
        "owner": "@jane",
        "mode": "batch",
        "jobs": [{"namespace": namespace, "name": job} if isinstance(job, str) else job for job in jobs],
        "dates": list(dates),
        **extra,
    }
    return parse_config(document)


def plan_for(store, cfg, *, catalog=None, today=TODAY) -> Plan:
    return build_plan(
        cfg,
        backfill_id=backfill_id(cfg),
        lineage=InProcessMarquez(store),
        catalog=catalog,
        today=today,
        now=NOW,
    )


def graph(edges: dict[str, list[str]], namespace: str = "ns") -> LineageStore:
    """Jobs and who reads them: {"a": ["b", "c"]} means b and c read a's output `a.out`."""
    readers_of: dict[str, list[str]] = {}
    jobs = set(edges)
    for job, readers in edges.items():
        jobs.update(readers)
        for reader in readers:
            readers_of.setdefault(reader, []).append(job)
    store = LineageStore()
    for job in sorted(jobs):
        store.ingest_all(
            run_events(
                namespace, job, inputs=[f"{u}.out" for u in readers_of.get(job, [])], outputs=[f"{job}.out"]
            )
        )
    return store


def waves_of(plan: Plan) -> list[list[str]]:
    return [[step.id for step in wave.steps] for wave in plan.waves]


def days(start: str, end: str) -> list[date]:
    first, last = date.fromisoformat(start), date.fromisoformat(end)
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


def food_delivery() -> LineageStore:
    store = LineageStore()
    store.ingest_all(food_delivery_events())
    return store


# -- the food delivery sample -------------------------------------------------------------------
def test_food_delivery_etl_orders_waves():
    plan = plan_for(food_delivery(), config(["etl_orders"], namespace=FD))
    assert waves_of(plan) == [
        ["etl_orders"],
        ["etl_orders_7_days"],
        ["etl_delivery_7_days"],
        ["delivery_times_7_days"],
        ["email_discounts", "orders_popular_day_of_week"],
    ]
    assert not [
        step
        for step in plan.steps
        if step.id.startswith("etl_")
        and step.id not in ("etl_orders", "etl_orders_7_days", "etl_delivery_7_days")
    ]
    assert all(step.dates == [date(2021, 6, 4)] for step in plan.steps)  # no catalog: window 1
    assert all(step.kind == "airflow_dag" and step.dag_id == step.id for step in plan.steps)
    assert plan.step("etl_orders").reason == "root" and plan.step("etl_orders").upstream == []
    assert plan.step("email_discounts").upstream == ["delivery_times_7_days"]
    assert plan.warnings == [] and plan.exclusions == []


# The case: a catalog that gives every *_7_days job a 7-day window (each reads seven
# days of its input). The sample transforms are leaner (examples/catalog.yaml, next test).
SEVEN_DAY_WINDOWS = JobCatalog.parse(
    "version: 1\njobs:\n"
    + "".join(
        f"  - {{namespace: food_delivery, name: {name}, kind: spark, window_days: {window}}}\n"
        for name, window in (
            ("etl_orders", 1),
            ("etl_orders_7_days", 7),
            ("etl_delivery_7_days", 7),
            ("delivery_times_7_days", 7),
        )
    )
    + "  - {namespace: food_delivery, name: orders_popular_day_of_week, kind: airflow_dag}\n"
    + "  - {namespace: food_delivery, name: email_discounts, kind: airflow_dag}\n"
)


def test_food_delivery_with_the_catalog_expands_seven_day_windows():
    plan = plan_for(food_delivery(), config(["etl_orders"], namespace=FD), catalog=SEVEN_DAY_WINDOWS)
    expected = {
        "etl_orders": [date(2021, 6, 4)],
        "etl_orders_7_days": days("2021-06-04", "2021-06-10"),  # 06-04 feeds d..d+6
        "etl_delivery_7_days": days("2021-06-04", "2021-06-16"),  # each of those, 7 days again
        "delivery_times_7_days": days("2021-06-04", "2021-06-22"),
        "orders_popular_day_of_week": days("2021-06-04", "2021-06-22"),  # window 1: same days as its input
        "email_discounts": days("2021-06-04", "2021-06-22"),
    }
    assert {step.id: step.dates for step in plan.steps} == expected
    spark = {step.id: step.transform for step in plan.steps if step.kind == "spark"}
    assert spark == {
        name: name
        for name in ("etl_orders", "etl_orders_7_days", "etl_delivery_7_days", "delivery_times_7_days")
    }
    assert plan.step("etl_delivery_7_days").window_days == 7


def test_example_catalog_has_the_sample_transforms_windows():
    """Only etl_orders_7_days rolls over 7 days; the jobs after it read one day of their input."""
    plan = plan_for(
        food_delivery(), config(["etl_orders"], namespace=FD), catalog=JobCatalog.load(str(EXAMPLE_CATALOG))
    )
    week = days("2021-06-04", "2021-06-10")
    assert {step.id: step.dates for step in plan.steps} == {
        "etl_orders": [date(2021, 6, 4)],
        "etl_orders_7_days": week,
        "etl_delivery_7_days": week,
        "delivery_times_7_days": week,
        "orders_popular_day_of_week": week,
        "email_discounts": week,
    }


def test_expanded_dates_never_pass_today():
    plan = plan_for(
        food_delivery(),
        config(["etl_orders"], namespace=FD),
        catalog=SEVEN_DAY_WINDOWS,
        today=date(2021, 6, 8),
    )
    assert max(day for step in plan.steps for day in step.dates) == date(2021, 6, 8)
    assert plan.step("delivery_times_7_days").dates == days("2021-06-04", "2021-06-08")


def test_plan_document_round_trips_and_carries_the_config():
    cfg = config(["etl_orders"], namespace=FD, hours=[0, 13], feeds=["orders"], spark={"profile": "large"})
    plan = plan_for(food_delivery(), cfg)
    assert Plan.from_json(plan.to_json()) == plan
    assert (plan.plan_version, plan.backfill_id, plan.name, plan.owner) == (
        1,
        backfill_id(cfg),
        "test-backfill",
        "@jane",
    )
    assert plan.created_at == NOW and plan.spark_profile == "large"
    assert all(step.hours == [0, 13] and step.feeds == ["orders"] for step in plan.steps)


# -- graph shapes ------------------------------------------------------------------------------
def test_a_diamond_plans_its_bottom_once_after_both_sides():
    plan = plan_for(graph({"a": ["b", "c"], "b": ["d"], "c": ["d"]}), config(["a"]))
    assert waves_of(plan) == [["a"], ["b", "c"], ["d"]]
    assert plan.step("d").upstream == ["b", "c"]


def test_uneven_paths_put_a_step_after_its_longest_path():
    plan = plan_for(graph({"a": ["b", "d"], "b": ["c"], "c": ["d"]}), config(["a"]))
    assert waves_of(plan) == [["a"], ["b"], ["c"], ["d"]]
    assert plan.step("d").upstream == ["a", "c"]


def test_a_cycle_refuses_the_plan_naming_its_jobs():
    with pytest.raises(LineageCycleError) as caught:
        plan_for(graph({"a": ["b"], "b": ["c"], "c": ["b", "d"]}), config(["a"]))
    assert {job.name for job in caught.value.jobs} == {"b", "c"}
    assert "lineage cycle: ns/b -> ns/c -> ns/b" in str(caught.value)


def test_a_job_reading_its_own_output_is_not_a_cycle():
    store = LineageStore()
    store.ingest_all(run_events("ns", "merge", inputs=["t"], outputs=["t"]))
    store.ingest_all(run_events("ns", "after", inputs=["t"], outputs=["u"]))
    assert waves_of(plan_for(store, config(["merge"]))) == [["merge"], ["after"]]


def test_unknown_roots_refuse_the_plan_naming_them():
    with pytest.raises(UnknownRootJobError, match="ns/nope") as caught:
        plan_for(graph({"a": ["b"]}), config(["a", "nope"]))
    assert caught.value.jobs == [JobRef(namespace="ns", name="nope")]


def test_colon_namespaces_are_kept_whole():
    pg = "postgres://db:5432"
    store = LineageStore()
    store.ingest_all(run_events(pg, "load", outputs=["public.orders"]))
    store.ingest_all(run_events(pg, "report", inputs=["public.orders"], outputs=["public.report"]))
    plan = plan_for(store, config(["load"], namespace=pg))
    assert [step.job for step in plan.steps] == [
        JobRef(namespace=pg, name="load"),
        JobRef(namespace=pg, name="report"),
    ]


def test_task_jobs_of_one_dag_collapse_into_one_step():
    store = LineageStore()
    store.ingest_all(run_events("ns", "extract", parent="nightly", outputs=["raw"]))
    store.ingest_all(run_events("ns", "transform", parent="nightly", inputs=["raw"], outputs=["clean"]))
    store.ingest_all(run_events("ns", "report", inputs=["clean"], outputs=["rep"]))
    plan = plan_for(store, config(["nightly.extract"]))
    assert waves_of(plan) == [["nightly"], ["report"]]
    step = plan.step("nightly")
    assert step.job == JobRef(namespace="ns", name="nightly") and step.dag_id == "nightly"
    assert plan.step("report").upstream == ["nightly"]


def test_steps_mapping_to_one_id_but_different_kinds_refuse_the_plan():
    catalog = JobCatalog.parse("version: 1\njobs:\n  - {namespace: ns, name: a, kind: spark, transform: b}\n")
    with pytest.raises(StepConflictError, match="ns/a and ns/b both map to step 'b'"):
        plan_for(graph({"a": ["b"]}), config(["a"]), catalog=catalog)


# -- depth -------------------------------------------------------------------------------------
def chain(length: int) -> LineageStore:
    return graph({f"j{i:02d}": [f"j{i + 1:02d}"] for i in range(length - 1)})


def test_a_chain_longer_than_one_marquez_answer_is_planned_whole():
    plan = plan_for(chain(45), config(["j00"]))
    assert waves_of(plan) == [[f"j{i:02d}"] for i in range(45)]
    assert plan.warnings == []


def test_max_depth_cutting_the_walk_warns_where():
    plan = plan_for(chain(30), config(["j00"], downstream={"max_depth": 25}))
    assert len(plan.steps) == 26
    [warning] = plan.warnings
    assert warning.code == "max_depth_reached"
    assert warning.jobs == [JobRef(namespace="ns", name="j25")]
    assert "after ns/j25" in warning.message and "ns/j26" in warning.message


def test_max_depth_that_ends_exactly_at_a_leaf_does_not_warn():
    plan = plan_for(chain(6), config(["j00"], downstream={"max_depth": 5}))
    assert len(plan.steps) == 6 and plan.warnings == []


def test_downstream_disabled_plans_only_the_roots():
    plan = plan_for(graph({"a": ["b"], "c": ["d"]}), config(["a", "c"], downstream={"enabled": False}))
    assert waves_of(plan) == [["a", "c"]]


# -- exclusions --------------------------------------------------------------------------------
def test_excluding_a_middle_job_keeps_what_another_path_reaches():
    store = graph({"a": ["x", "b"], "x": ["y", "z"], "b": ["y"]})
    plan = plan_for(store, config(["a"], downstream={"exclude": [{"namespace": "ns", "name": "x"}]}))
    assert waves_of(plan) == [["a"], ["b"], ["y"]]
    assert plan.step("y").upstream == ["a", "b"]  # a through the excluded x: order kept
    assert [(str(e.job), e.reason) for e in plan.exclusions] == [
        ("ns/x", "downstream.exclude: downstream of the roots, not rerun"),
        ("ns/z", "downstream only through excluded jobs, not rerun"),
    ]


def test_dates_do_not_flow_through_an_excluded_job():
    store = graph({"a": ["x", "b"], "x": ["y"], "b": ["y"]})
    catalog = JobCatalog.parse("version: 1\njobs:\n  - {namespace: ns, name: b, window_days: 3}\n")
    plan = plan_for(
        store, config(["a"], downstream={"exclude": [{"namespace": "ns", "name": "x"}]}), catalog=catalog
    )
    assert plan.step("y").dates == days("2021-06-04", "2021-06-06")  # only b's days


def test_an_exclusion_off_the_graph_says_it_had_no_effect():
    plan = plan_for(
        graph({"a": ["b"]}), config(["a"], downstream={"exclude": [{"namespace": "ns", "name": "zzz"}]})
    )
    assert plan.exclusions[0].reason.endswith("no effect")
    assert waves_of(plan) == [["a"], ["b"]]


def test_an_excluded_root_is_still_planned_with_a_warning():
    plan = plan_for(
        graph({"a": ["b"]}), config(["a"], downstream={"exclude": [{"namespace": "ns", "name": "a"}]})
    )
    assert waves_of(plan) == [["a"], ["b"]]
    assert [w.code for w in plan.warnings] == ["root_excluded"]


# -- dates and roots ---------------------------------------------------------------------------
def test_windows_cascade_down_a_chain():
    catalog = JobCatalog.parse(
        "version: 1\njobs:\n  - {namespace: ns, name: b, window_days: 2}\n  - {namespace: ns, name: c, window_days: 3}\n"
    )
    plan = plan_for(
        graph({"a": ["b"], "b": ["c"], "c": ["d"]}),
        config(["a"], dates=["2021-06-04", "2021-06-10"]),
        catalog=catalog,
    )
    assert compact(plan, "b") == "2021-06-04..06-05, 06-10..06-11"
    assert compact(plan, "c") == "2021-06-04..06-07, 06-10..06-13"
    assert compact(plan, "d") == "2021-06-04..06-07, 06-10..06-13"


def compact(plan: Plan, step_id: str) -> str:
    from backfill_orchestrator.dates import compact_dates

    return compact_dates(plan.step(step_id).dates)


def test_a_root_downstream_of_another_root_waits_and_takes_both_dates():
    catalog = JobCatalog.parse("version: 1\njobs:\n  - {namespace: ns, name: b, window_days: 2}\n")
    plan = plan_for(graph({"a": ["b"]}), config(["a", "b"], dates=["2021-06-04"]), catalog=catalog)
    step = plan.step("b")
    assert (step.reason, step.upstream) == ("root", ["a"])
    assert step.dates == days("2021-06-04", "2021-06-05")


def test_replay_configs_have_no_plan():
    cfg = parse_config(
        {
            "version": 1,
            "name": "r",
            "owner": "@a",
            "mode": "replay",
            "dates": ["2021-06-04"],
            "feeds": ["orders"],
            "replay": {"target": "orders-queue"},
        }
    )
    with pytest.raises(NotPlannableError, match="mode replay"):
        build_plan(cfg, backfill_id="r-1", lineage=InProcessMarquez(LineageStore()))


def test_readable_text_compacts_dates():
    plan = plan_for(
        food_delivery(), config(["etl_orders"], namespace=FD), catalog=JobCatalog.load(str(EXAMPLE_CATALOG))
    )
    text = render_plan_text(plan)
    assert "6 steps in 5 waves" in text
    assert "wave 2:\n  etl_orders_7_days: spark transform etl_orders_7_days (DAG etl_orders_7_days)" in text
    assert "dates 2021-06-04..06-10 (7); after etl_orders" in text
    assert "wave 5:\n  email_discounts: DAG email_discounts for food_delivery/email_discounts" in text
