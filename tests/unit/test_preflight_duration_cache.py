"""A warm trigger keeps each job's measured duration for HISTORY_CACHE_SECONDS (bounded, least
recently used out first); upstream freshness always reads current runs."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest

from backfill_local.marquez_double import InProcessMarquez, run_events
from backfill_orchestrator.lineage import MarquezUnavailableError
from backfill_orchestrator.preflight import Reach, run_preflight
from backfill_orchestrator.preflight.duration_cache import RecentDurations
from backfill_orchestrator.preflight.history import measured_seconds_per_date
from backfill_orchestrator.settings.environment import EnvironmentReader
from backfill_orchestrator.settings.preflight import PreflightLimits
from tests.support.preflight import DAY, EXAMPLE_CATALOG, plan_of, seconds_of, store_with
from tests.support.preflight import upstream_config as config

ROOT = "etl_orders_7_days"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class CountingHistory:
    """The Marquez double as RunHistory, counting run reads by (job, limit)."""

    def __init__(self, store, *, fail: bool = False):  # noqa: ANN001 - a LineageStore
        self.marquez = InProcessMarquez(store)
        self.reads: Counter[tuple[str, int]] = Counter()
        self.fail = fail

    def job_runs(self, job, *, limit, offset):  # noqa: ANN001
        self.reads[(job.name, limit)] += 1
        if self.fail:
            raise MarquezUnavailableError("http://marquez", "answered 503 after retries")
        return self.marquez.job_runs(job, limit=limit, offset=offset)

    def producers(self, job):  # noqa: ANN001
        return self.marquez.producers(job)


def timed_store():
    store = store_with(sample=False)
    day = DAY - timedelta(days=10)
    store.ingest_all(
        run_events(
            "food_delivery",
            ROOT,
            nominal=(day, day + timedelta(days=1)),
            event_time=day + timedelta(days=1),
            duration=timedelta(minutes=20),
        )
    )
    return store


def test_entries_expire_after_their_time_and_the_least_recently_used_goes_first():
    clock = Clock()
    cache = RecentDurations(ttl_seconds=600, max_jobs=2, timer=clock)
    cache.store(("ns", "a"), 1.5)
    cache.store(("ns", "b"), None)  # no completed runs: known, and kept too
    assert cache.lookup(("ns", "b")) == (True, None)
    assert cache.lookup(("ns", "a")) == (True, 1.5)  # now the most recently used
    cache.store(("ns", "c"), 3.0)
    assert cache.lookup(("ns", "b")) == (False, None) and len(cache) == 2
    clock.now += 599
    assert cache.lookup(("ns", "a")) == (True, 1.5)
    clock.now += 2
    assert cache.lookup(("ns", "a")) == (False, None) and cache.lookup(("ns", "c")) == (False, None)


def test_a_kept_duration_is_not_read_again_until_it_expires():
    store = timed_store()
    plan = plan_of(config(), store)
    clock = Clock()
    cache = RecentDurations(ttl_seconds=600, timer=clock)
    history = CountingHistory(store)
    first = measured_seconds_per_date(history, plan, max_jobs=50, cache=cache)
    assert first and history.reads[(ROOT, 20)] == 1
    assert measured_seconds_per_date(history, plan, max_jobs=50, cache=cache) == first
    assert history.reads[(ROOT, 20)] == 1
    clock.now += 601
    assert measured_seconds_per_date(history, plan, max_jobs=50, cache=cache) == first
    assert history.reads[(ROOT, 20)] == 2


def test_a_failed_read_keeps_nothing():
    store = timed_store()
    plan = plan_of(config(), store)
    cache = RecentDurations(ttl_seconds=600)
    with pytest.raises(MarquezUnavailableError):
        measured_seconds_per_date(CountingHistory(store, fail=True), plan, max_jobs=50, cache=cache)
    assert len(cache) == 0


def test_the_preflight_keeps_durations_measured_but_reads_upstream_runs_every_time():
    store = timed_store()
    cfg = config()
    plan = plan_of(cfg, store)
    durations = RecentDurations(ttl_seconds=600)
    history = CountingHistory(store)
    found = [
        run_preflight(
            cfg,
            plan=plan,
            reach=Reach(PreflightLimits(), catalog=EXAMPLE_CATALOG, history=history, durations=durations),
        )
        for _ in range(2)
    ]
    assert found[0].estimate == found[1].estimate
    assert seconds_of(found[1], ROOT).basis == "measured"
    assert history.reads[(ROOT, 20)] == 1  # the duration: read once
    producers = [name for name, limit in history.reads if limit != 20]
    assert set(producers) == {"etl_menus", "etl_menu_items", "etl_categories", "etl_orders"}
    assert all(history.reads[(name, 100)] == 2 for name in producers)  # freshness: read each time


@pytest.mark.parametrize(("text", "expected"), [(None, 600), ("0", 0), ("86400", 86400)])
def test_history_cache_seconds_is_a_setting(text, expected):
    env = EnvironmentReader({} if text is None else {"HISTORY_CACHE_SECONDS": text})
    assert PreflightLimits.read(env).history_cache_seconds == expected and env.problems == []


def test_a_bad_history_cache_seconds_is_reported():
    env = EnvironmentReader({"HISTORY_CACHE_SECONDS": "-1"})
    PreflightLimits.read(env)
    assert any("HISTORY_CACHE_SECONDS" in problem for problem in env.problems)
