"""run_preflight: each refusal and warning, the estimate, strictness, and the plan's pictures."""

from __future__ import annotations

from pathlib import Path

import pytest

from backfill_local.marquez_double import LineageStore, run_events
from backfill_orchestrator.config import backfill_id, parse_config
from backfill_orchestrator.planner import JobCatalog
from backfill_orchestrator.preflight import Reach, preflight_plan, run_preflight, warehouse_lister
from backfill_orchestrator.preflight.render import render
from backfill_orchestrator.settings.environment import EnvironmentReader, SettingsError
from backfill_orchestrator.settings.preflight import PreflightLimits
from tests.support.preflight import EXAMPLE_CATALOG, LIMITS, codes, plan_of


def config(**extra):
    document = {
        "version": 1,
        "name": "pf",
        "owner": "@jane",
        "mode": "batch",
        "jobs": [{"namespace": "food_delivery", "name": "etl_orders"}],
        "dates": ["2021-06-04"],
        **extra,
    }
    return parse_config(document)


def verdict_of(cfg, *, catalog=EXAMPLE_CATALOG, limits=LIMITS, lister=None, strict=False, store=None):
    reach = Reach(limits, catalog=catalog, lister=lister, strict=strict)
    return run_preflight(cfg, plan=plan_of(cfg, store, catalog), reach=reach)


def warehouse(tmp_path: Path, files: dict[str, int]) -> str:
    for relative, size in files.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * size)
    return str(tmp_path)


# -- catalog: feeds, hours, windows ----------------------------------------------------------
def test_an_unknown_feed_is_a_located_refusal_with_a_suggestion():
    verdict = verdict_of(config(feeds=["web", "wbe"]))
    (refusal,) = verdict.refusals
    assert (refusal.code, refusal.location) == ("unknown_feed", "feeds[1]")
    assert "did you mean 'web'?" in refusal.message


def test_a_job_without_declared_feeds_is_a_warning_not_silence():
    document = EXAMPLE_CATALOG.entries
    catalog = JobCatalog(
        [e.model_copy(update={"feeds": None}) if e.name == "email_discounts" else e for e in document]
    )
    verdict = verdict_of(config(feeds=["web"]), catalog=catalog)
    assert verdict.accepted
    assert ("no_declared_feeds", "steps.email_discounts") in codes(verdict.warnings)


def test_hours_on_daily_steps_are_a_warning():
    verdict = verdict_of(config(hours=[3]))
    (warning,) = [w for w in verdict.warnings if w.code == "hours_on_daily_steps"]
    assert (
        warning.location == "hours"
        and "etl_orders_7_days" in warning.message
        and "etl_orders," not in warning.message
    )


def test_without_a_catalog_every_step_warns_that_its_window_is_unknown():
    cfg = config()
    verdict = verdict_of(cfg, catalog=JobCatalog.empty())
    no_catalog = [f for f in verdict.warnings if f.code == "no_catalog"]
    assert len(no_catalog) == len(plan_of(cfg, catalog=JobCatalog.empty()).steps) and verdict.accepted


def test_a_deployment_can_require_a_catalog():
    verdict = verdict_of(config(), catalog=JobCatalog.empty(), limits=PreflightLimits(require_catalog=True))
    assert codes(verdict.refusals) == [("catalog_required", "<catalog>")]


# -- exclusions, strictness -----------------------------------------------------------------------
def test_an_exclusion_that_matches_nothing_is_refused_with_the_job_it_probably_meant():
    # A typo in an exclusion would rerun the job its author meant to skip: never only a warning.
    cfg = config(downstream={"exclude": [{"namespace": "food_delivery", "name": "email_discount"}]})
    verdict = verdict_of(cfg)
    assert ("exclusion_matches_nothing", "downstream.exclude[0]") in codes(verdict.refusals)
    (refusal,) = [f for f in verdict.refusals if f.code == "exclusion_matches_nothing"]
    assert refusal.message == (
        "food_delivery/email_discount matches no job of the plan, so it excludes nothing; "
        "did you mean 'food_delivery/email_discounts'?"
    )
    assert "exclusion_matches_nothing" not in {f.code for f in verdict.warnings}


def test_a_root_without_downstream_jobs_is_a_warning():
    store = LineageStore()
    store.ingest_all(run_events("ns", "lonely", inputs=[], outputs=["lonely.out"]))
    cfg = parse_config(
        {
            "version": 1,
            "name": "pf",
            "owner": "@jane",
            "mode": "batch",
            "jobs": [{"namespace": "ns", "name": "lonely"}],
            "dates": ["2021-06-04"],
        }
    )
    verdict = verdict_of(cfg, store=store, catalog=JobCatalog.empty())
    assert ("nothing_downstream", "jobs") in codes(verdict.warnings)


def test_new_config_fields_at_their_defaults_keep_the_backfill_id():
    assert backfill_id(config()) == backfill_id(config(strict=False))
    assert backfill_id(config()) != backfill_id(config(strict=True))


# -- runtime limits --------------------------------------------------------------------------------
def chain(length: int) -> LineageStore:
    store = LineageStore()
    for index in range(length):
        inputs = [f"j{index - 1}.out"] if index else []
        store.ingest_all(run_events("ns", f"j{index}", inputs=inputs, outputs=[f"j{index}.out"]))
    return store


def test_a_deep_chain_and_a_wide_round_are_no_longer_refused_the_dag_continues_and_chunks():
    """The DAG runs any number of rounds (continuation runs) and any number of reruns per
    round (chunks): preflight counts them for the estimate and refuses neither."""
    cfg = parse_config(
        {
            "version": 1,
            "name": "pf",
            "owner": "@jane",
            "mode": "batch",
            "jobs": [{"namespace": "ns", "name": "j0"}],
            "dates": ["2021-06-04"],
        }
    )
    verdict = verdict_of(cfg, store=chain(30), catalog=JobCatalog.empty())
    assert verdict.refusals == [] and verdict.estimate.rounds.value == 30
    wide = verdict_of(config(dates=[{"start": "2021-01-01", "end": "2021-12-31"}]))
    assert not [f for f in wide.refusals if "round" in f.message or "rerun" in f.message]


def test_limits_come_from_the_deployments_variables():
    env = EnvironmentReader({"REQUIRE_JOB_CATALOG": "true", "PREFLIGHT_STRICT": "true"})
    limits = PreflightLimits.read(env)
    assert (limits.require_catalog, limits.strict) == (True, True)
    bad = EnvironmentReader({"PREFLIGHT_STRICT": "yes"})
    PreflightLimits.read(bad)
    with pytest.raises(SettingsError, match="PREFLIGHT_STRICT: expected true or false"):
        bad.check()


# -- the warehouse and the estimate ---------------------------------------------------------------
def test_no_input_partitions_at_all_is_nothing_to_reprocess(tmp_path):
    root = warehouse(tmp_path, {"raw/orders/day=2021-06-05/hour=0/feed=web/part-0.json": 10})
    verdict = verdict_of(config(), lister=warehouse_lister(root))
    assert ("nothing_to_reprocess", "steps.etl_orders.inputs[0]") in codes(verdict.refusals)


def test_some_missing_input_dates_are_a_warning_listing_them(tmp_path):
    root = warehouse(tmp_path, {"raw/orders/day=2021-06-04/hour=0/feed=web/part-0.json": 10})
    verdict = verdict_of(
        config(dates=[{"start": "2021-06-04", "end": "2021-06-06"}]), lister=warehouse_lister(root)
    )
    (warning,) = [w for w in verdict.warnings if w.code == "missing_inputs" and "raw/orders" in w.message]
    assert (
        warning.location == "steps.etl_orders.inputs[0]"
        and "2 of 3 dates: 2021-06-05..06-06" in warning.message
    )


def test_the_estimate_counts_partitions_by_grain_and_bytes_by_listing(tmp_path):
    root = warehouse(
        tmp_path,
        {
            "raw/orders/day=2021-06-04/hour=3/feed=web/part-0.json": 100,
            "raw/orders/day=2021-06-04/hour=3/feed=app/part-0.json": 1000,  # another feed: not read
            "raw/orders/day=2021-06-04/hour=4/feed=web/part-0.json": 10,  # another hour: not read
            "raw/orders/day=2021-06-04/hour=3/feed=web/_SUCCESS": 7,  # a marker: not data
        },
    )
    verdict = verdict_of(config(feeds=["web"], hours=[3]), lister=warehouse_lister(root))
    steps = {step.step_id: step for step in verdict.estimate.steps}
    assert steps["etl_orders"].partitions.value == 1 and steps["etl_orders"].partitions.basis == "measured"
    assert (
        steps["etl_orders"].bytes_to_read.value == 100
        and steps["etl_orders"].bytes_to_read.basis == "measured"
    )
    assert steps["etl_orders_7_days"].partitions.value == 7  # a 7-day window, grain day, one feed
    assert verdict.estimate.dag_reruns.value == 14 and verdict.estimate.cost.basis == "assumed"


def test_all_hours_of_all_declared_feeds_for_an_hourly_step():
    verdict = verdict_of(config())
    steps = {step.step_id: step for step in verdict.estimate.steps}
    assert steps["etl_orders"].partitions.value == 24 * 3
    assert verdict.estimate.bytes_to_read is None  # nothing listed: not zero
    assert any("no warehouse" in what for what in verdict.unchecked)


# -- the plan carries it, and its pictures ----------------------------------------------------------
@pytest.mark.parametrize("fmt", ["text", "json", "mermaid", "dot", "html"])
def test_every_format_shows_every_step(fmt):
    cfg = config(feeds=["web"])
    _, plan = preflight_plan(cfg, plan_of(cfg), Reach(LIMITS, catalog=EXAMPLE_CATALOG))
    out = render(plan, fmt)
    for step in plan.steps:
        assert step.id in out
    if fmt == "html":
        assert "<script" not in out and "http" not in out  # opens without a network
    if fmt in ("text", "html"):
        assert "partitions to rewrite" in out


def test_the_plan_document_keeps_the_estimate_and_warnings():
    cfg = config(hours=[1, 2])  # hours on daily steps: a warning
    _, plan = preflight_plan(cfg, plan_of(cfg), Reach(LIMITS, catalog=EXAMPLE_CATALOG))
    assert plan.estimate["partitions"] == sum(step["partitions"]["value"] for step in plan.estimate["steps"])
    assert any(w.code == "hours_on_daily_steps" for w in plan.warnings)
    assert type(plan).from_json(plan.to_json()) == plan


def test_the_slack_line_and_the_stored_page_carry_the_estimate():
    from backfill_orchestrator.preflight.render import estimate_line, render_html

    cfg = config(feeds=["web"])
    _, plan = preflight_plan(cfg, plan_of(cfg), Reach(LIMITS, catalog=EXAMPLE_CATALOG))
    line = estimate_line(plan.estimate)
    assert line.startswith(f"{int(plan.estimate['partitions'])} partitions, inputs not listed, 14 DAG reruns")
    assert "(assumed)" in line
    assert "Estimate" in render_html(plan)
