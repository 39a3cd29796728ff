"""The roots' producers come from the planner's own lineage answers (Marquez answers both
directions), so the preflight's freshness check does not ask Marquez about the roots again."""

from __future__ import annotations

import pytest

from backfill_local.marquez_double import InProcessMarquez
from backfill_orchestrator.config.model import JobRef
from backfill_orchestrator.lineage import KnownProducers, ProducersSeen, fetch_downstream, job_node_id
from backfill_orchestrator.lineage.graph import LineageGraph, parse_lineage_response
from backfill_orchestrator.lineage.runs import upstream_producers
from backfill_orchestrator.preflight import Reach, run_preflight
from tests.support.preflight import DAY, EXAMPLE_CATALOG, LIMITS, plan_of, stale, store_with
from tests.support.preflight import upstream_config as config

NAMESPACE = "food_delivery"


def sample_jobs(store) -> list[str]:  # noqa: ANN001 - a LineageStore
    return [job["id"]["name"] for job in store.jobs(NAMESPACE)["jobs"]]


@pytest.mark.parametrize("depth", [1, 2, 20])
def test_an_answer_names_the_same_producers_as_the_one_hop_question(depth):
    store = store_with(sample=True)
    names = sample_jobs(store)
    assert len(names) > 5
    with_producers = 0
    for name in names:
        job = JobRef(namespace=NAMESPACE, name=name)
        graph = parse_lineage_response(
            store.lineage(job_node_id(NAMESPACE, name), depth), start=job.key, depth=depth
        )
        expected = tuple(
            p.key for p in upstream_producers(store.lineage(job_node_id(NAMESPACE, name), 1), job)
        )
        assert graph.producers == {job.key: expected}, name
        with_producers += bool(expected)
    assert with_producers >= 3  # the sample has jobs reading what others write


def test_an_answer_zero_hops_deep_names_no_producers():
    store = store_with(sample=True)
    job = JobRef(namespace=NAMESPACE, name="etl_orders_7_days")
    graph = parse_lineage_response(store.lineage(job_node_id(NAMESPACE, job.name), 0), start=job.key, depth=0)
    assert graph.producers == {}


def test_merging_keeps_each_jobs_first_producers():
    graph = LineageGraph(producers={("a", "x"): (("a", "p"),)})
    graph.merge(LineageGraph(producers={("a", "x"): (), ("a", "y"): (("a", "q"),)}))
    assert graph.producers == {("a", "x"): (("a", "p"),), ("a", "y"): (("a", "q"),)}


class CountingHistory:
    """The Marquez double as RunHistory, counting the producers questions it is asked."""

    def __init__(self, marquez: InProcessMarquez):
        self.marquez = marquez
        self.asked: list[str] = []

    def job_runs(self, job, *, limit, offset):  # noqa: ANN001
        return self.marquez.job_runs(job, limit=limit, offset=offset)

    def producers(self, job):  # noqa: ANN001
        self.asked.append(job.name)
        return self.marquez.producers(job)


def test_the_walk_keeps_the_roots_producers_and_freshness_asks_nothing_more():
    store = store_with(("etl_orders", DAY, "FAIL"), ("etl_menus", DAY, "ABORT"), sample=False)
    cfg = config(require_fresh_upstream=True)
    seen = ProducersSeen(InProcessMarquez(store))
    fetch_downstream(seen, cfg.jobs, max_depth=3)
    root = cfg.jobs[0]
    assert {key[1] for key in seen.producers[root.key]} == {
        "etl_menus",
        "etl_menu_items",
        "etl_categories",
        "etl_orders",
    }

    plan = plan_of(cfg, store)
    plain = CountingHistory(InProcessMarquez(store))
    before = run_preflight(cfg, plan=plan, reach=Reach(LIMITS, catalog=EXAMPLE_CATALOG, history=plain))
    reused = CountingHistory(InProcessMarquez(store))
    after = run_preflight(
        cfg,
        plan=plan,
        reach=Reach(LIMITS, catalog=EXAMPLE_CATALOG, history=KnownProducers(reused, seen.producers)),
    )
    assert plain.asked == ["etl_orders_7_days"] and reused.asked == []
    assert after.findings == before.findings and after.unchecked == before.unchecked
    assert len(stale(after)) == 2 and not after.accepted


def test_a_job_the_answers_did_not_cover_is_still_asked():
    store = store_with(sample=True)
    history = CountingHistory(InProcessMarquez(store))
    known = KnownProducers(history, {(NAMESPACE, "etl_orders"): ()})
    assert known.producers(JobRef(namespace=NAMESPACE, name="etl_orders")) == []
    asked = known.producers(JobRef(namespace=NAMESPACE, name="etl_orders_7_days"))
    assert history.asked == ["etl_orders_7_days"] and "etl_orders" in {job.name for job in asked}
