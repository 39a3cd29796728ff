"""Upstream freshness, durations from run history and the Spark time limit, on the Marquez
double's store (in process: the answers MarquezClient parses)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from backfill_local.marquez_double import InProcessMarquez, LineageStore, food_delivery_events, run_events
from backfill_orchestrator.config import backfill_id
from backfill_orchestrator.config.model import JobRef
from backfill_orchestrator.lineage import MarquezUnavailableError
from backfill_orchestrator.lineage.runs import JobRun, parse_runs_response
from backfill_orchestrator.preflight import Reach, run_preflight
from backfill_orchestrator.preflight.freshness import judge_dates, read_runs
from backfill_orchestrator.settings.environment import EnvironmentReader, SettingsError
from backfill_orchestrator.settings.preflight import PreflightLimits
from tests.support.preflight import (
    DAY,
    EXAMPLE_CATALOG,
    LIMITS,
    codes,
    plan_of,
    seconds_of,
    stale,
    store_with,
)
from tests.support.preflight import upstream_config as config


def verdict(cfg, store, *, limits=LIMITS, history=True, raise_errors=False):
    marquez = InProcessMarquez(store)
    return run_preflight(
        cfg,
        plan=plan_of(cfg, store),
        reach=Reach(limits, catalog=EXAMPLE_CATALOG, history=marquez if history else None),
        marquez_errors_raise=raise_errors,
    )


def test_fresh_producers_give_no_finding():
    found = verdict(config(), store_with(sample=False))
    assert stale(found) == []
    assert not [u for u in found.unchecked if "upstream" in u]


def test_a_failed_upstream_run_is_a_warning_naming_the_job_and_dates():
    found = verdict(config(), store_with(("etl_orders", DAY, "FAIL"), sample=False))
    [finding] = stale(found)
    assert (finding.location, finding.severity) == ("jobs[0]", "warning")
    assert (
        "food_delivery/etl_orders" in finding.message
        and "latest run FAILED for 2021-06-04" in finding.message
    )
    assert found.accepted


def test_a_later_successful_rerun_makes_the_date_fresh():
    store = store_with(("etl_orders", DAY, "FAIL"), sample=False)
    store.ingest_all(
        run_events(
            "food_delivery",
            "etl_orders",
            nominal=(DAY, DAY + timedelta(days=1)),
            event_time=DAY + timedelta(days=2),
        )
    )
    assert stale(verdict(config(), store)) == []


def test_a_missing_or_aborted_run_is_named_and_required_freshness_refuses():
    store = store_with(("etl_menus", DAY, "ABORT"), sample=True)  # the others only ran on 2020-02-22
    found = verdict(config(require_fresh_upstream=True), store)
    by_job = {f.message.split(" ")[1]: f for f in stale(found)}
    assert set(by_job) == {
        "food_delivery/etl_menus",
        "food_delivery/etl_menu_items",
        "food_delivery/etl_categories",
        "food_delivery/etl_orders",
    }
    assert "latest run ABORTED for 2021-06-04" in by_job["food_delivery/etl_menus"].message
    assert "no run for 2021-06-05" in by_job["food_delivery/etl_menus"].message
    assert "no run for 2021-06-04..06-05" in by_job["food_delivery/etl_orders"].message
    assert all(f.severity == "refusal" for f in by_job.values()) and not found.accepted


def test_the_deployment_can_require_fresh_upstream():
    found = verdict(
        config(),
        store_with(("etl_orders", DAY, "FAIL"), sample=False),
        limits=PreflightLimits(require_fresh_upstream=True),
    )
    assert [f.severity for f in stale(found)] == ["refusal"]


def test_producers_are_capped_with_a_warning():
    found = verdict(config(), store_with(sample=False), limits=PreflightLimits(upstream_max_jobs=2))
    assert ("upstream_check_capped", "jobs") in codes(found.findings)
    assert "4 upstream producers; only the first 2" in str(found.findings)


def test_runs_are_paged_and_reading_stops_before_the_earliest_date():
    store = store_with(sample=False)
    for back in range(1, 250):  # a long history before the dates, started before them
        day = DAY - timedelta(days=back)
        store.ingest_all(
            run_events(
                "food_delivery",
                "etl_orders",
                nominal=(day, day + timedelta(days=1)),
                event_time=day + timedelta(hours=1),
            )
        )
    marquez = InProcessMarquez(store)
    calls = []
    original = marquez.job_runs

    def counting(job, *, limit, offset):
        calls.append((limit, offset))
        return original(job, limit=limit, offset=offset)

    marquez.job_runs = counting
    read = read_runs(
        marquez, JobRef(namespace="food_delivery", name="etl_orders"), earliest=DAY.date(), max_runs=500
    )
    assert read.reached_earliest and calls == [(100, 0)]  # the first page already reaches before the dates
    assert judge_dates(read, [DAY.date()]) == ({}, [])


def test_dates_older_than_the_runs_read_are_not_checked_rather_than_stale():
    store = store_with(sample=False)
    for hours in range(1, 30):  # many recent reruns of a later date push the dates out of reach
        later = DAY + timedelta(days=20)
        store.ingest_all(
            run_events(
                "food_delivery",
                "etl_orders",
                nominal=(later, later + timedelta(days=1)),
                event_time=later + timedelta(days=1, hours=hours),
            )
        )
    found = verdict(config(), store, limits=PreflightLimits(upstream_max_runs=10))
    assert stale(found) == []
    assert any(
        "upstream freshness of food_delivery/etl_orders for 2021-06-04..06-05 (older than its last 10 runs)"
        in u
        for u in found.unchecked
    )


def test_runs_without_a_nominal_time_cannot_be_matched_to_dates():
    run = {"id": "r1", "state": "FAILED", "nominalStartTime": None, "nominalEndTime": None}
    page = parse_runs_response({"runs": [run], "totalCount": 1})
    assert page.runs[0].has_window is False


def test_a_zero_length_window_covers_the_day_it_falls_in():
    at = datetime(2021, 6, 4, 22, tzinfo=UTC)
    run = JobRun("r", "COMPLETED", None, None, at, at, None)
    assert run.covers(DAY.date()) and not run.covers((DAY + timedelta(days=1)).date())


def test_without_marquez_freshness_is_not_checked_and_said_so():
    found = verdict(
        config(require_fresh_upstream=True), store_with(("etl_orders", DAY, "FAIL")), history=False
    )
    assert stale(found) == [] and "upstream freshness and run durations (no Marquez)" in found.unchecked


class DownMarquez(InProcessMarquez):
    def producers(self, job):
        raise MarquezUnavailableError("http://marquez", "cannot connect")

    def job_runs(self, job, *, limit, offset):
        raise MarquezUnavailableError("http://marquez", "cannot connect")


@pytest.mark.parametrize(
    ("extra", "raise_errors", "outcome"),
    [
        ({}, False, "unchecked"),
        ({"require_fresh_upstream": True}, False, "unchecked"),
        ({}, True, "warning"),
        ({"require_fresh_upstream": True}, True, "raised"),
        ({"strict": True}, True, "raised"),
    ],
)
def test_marquez_down_while_reading_runs(extra, raise_errors, outcome):
    store = store_with()
    cfg = config(**extra)
    call = lambda: run_preflight(  # noqa: E731
        cfg,
        plan=plan_of(cfg, store),
        reach=Reach(LIMITS, catalog=EXAMPLE_CATALOG, history=DownMarquez(store)),
        marquez_errors_raise=raise_errors,
    )
    if outcome == "raised":
        with pytest.raises(MarquezUnavailableError):
            call()
        return
    found = call()
    if outcome == "unchecked":
        assert any(
            u.startswith("upstream freshness (Marquez at http://marquez is unavailable")
            for u in found.unchecked
        )
        assert "upstream_not_checked" not in str(codes(found.findings))
    else:
        assert ("upstream_not_checked", "jobs") in codes(found.findings) and found.accepted
    assert any(u.startswith("run durations, assumed instead") for u in found.unchecked)


# -- durations ------------------------------------------------------------------------------
def test_durations_are_measured_from_completed_runs_and_scaled_by_dates():
    store = store_with(sample=False)
    for minutes, outcome in ((10, "COMPLETE"), (30, "COMPLETE"), (20, "COMPLETE"), (600, "FAIL")):
        day = DAY - timedelta(days=minutes)
        store.ingest_all(
            run_events(
                "food_delivery",
                "etl_orders_7_days",
                nominal=(day, day + timedelta(days=2)),
                outcome=outcome,
                event_time=day + timedelta(days=2),
                duration=timedelta(minutes=minutes),
            )
        )
    found = verdict(config(), store)
    seconds = seconds_of(found, "etl_orders_7_days")
    # Per date: 300, 600 and 900 s (10, 20, 30 minutes per 2-day run; the failed run left out)
    # and the sample's own run (a zero-length window: one date); the median, times 2 dates.
    [sample] = [
        r
        for r in store.runs("food_delivery", "etl_orders_7_days")["runs"]
        if r["nominalStartTime"] == r["nominalEndTime"]
    ]
    assert 300_000 < sample["durationMs"] < 600_000
    assert (seconds.value, seconds.basis) == ((sample["durationMs"] / 1000 + 600) / 2 * 2, "measured")


def test_durations_without_history_are_assumed():
    store = LineageStore()
    store.ingest_all(food_delivery_events())
    found = verdict(config(), store)
    # The sample's etl_orders_7_days run has no nominal window: it counts as one date.
    assert seconds_of(found, "etl_orders_7_days").basis == "measured"
    found = verdict(config(), store, history=False)
    assert seconds_of(found, "etl_orders_7_days").basis == "assumed"


def test_a_spark_round_over_the_time_limit_is_a_warning_refused_when_strict():
    store = store_with(sample=False)
    store.ingest_all(
        run_events(
            "food_delivery",
            "etl_orders_7_days",
            nominal=(DAY - timedelta(days=1), DAY),
            event_time=DAY,
            duration=timedelta(hours=2),
        )
    )
    found = verdict(config(), store, limits=PreflightLimits(spark_timeout_seconds=3600))
    [finding] = [f for f in found.findings if f.code == "over_runtime_limit"]
    assert (
        finding.severity == "warning"
        and "round 1" in finding.message
        and "over the Spark job's time limit of 1.0 h" in finding.message
    )
    strict = verdict(config(strict=True), store, limits=PreflightLimits(spark_timeout_seconds=3600))
    assert not strict.accepted


def test_the_settings_come_from_the_deployments_variables():
    env = EnvironmentReader(
        {
            "REQUIRE_FRESH_UPSTREAM": "true",
            "SPARK_TIMEOUT_SECONDS": "7200",
            "UPSTREAM_CHECK_MAX_JOBS": "5",
            "UPSTREAM_CHECK_MAX_RUNS": "300",
            "RUN_HISTORY_MAX_JOBS": "0",
        }
    )
    limits = PreflightLimits.read(env)
    assert (
        limits.require_fresh_upstream,
        limits.spark_timeout_seconds,
        limits.upstream_max_jobs,
        limits.upstream_max_runs,
        limits.history_max_jobs,
    ) == (True, 7200, 5, 300, 0)
    bad = EnvironmentReader({"SPARK_TIMEOUT_SECONDS": "10", "REQUIRE_FRESH_UPSTREAM": "yes"})
    PreflightLimits.read(bad)
    with pytest.raises(
        SettingsError, match="SPARK_TIMEOUT_SECONDS: expected a whole number from 60"
    ) as raised:
        bad.check()
    assert "REQUIRE_FRESH_UPSTREAM: expected true or false" in str(raised.value)


def test_require_fresh_upstream_left_false_keeps_the_backfill_id():
    assert backfill_id(config()) == backfill_id(config(require_fresh_upstream=False))
    assert backfill_id(config()) != backfill_id(config(require_fresh_upstream=True))


def test_no_history_is_read_past_the_cap():
    store = store_with(sample=False)
    found = verdict(config(), store, limits=PreflightLimits(history_max_jobs=0))
    assert {step.seconds.basis for step in found.estimate.steps} == {"assumed"}
