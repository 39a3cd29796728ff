"""The downstream walk: re-asking from the frontier, economy of queries, unknown roots."""

from __future__ import annotations

import pytest

from backfill_local.marquez_double import InProcessMarquez, LineageStore, run_events
from backfill_orchestrator.config import JobRef
from backfill_orchestrator.lineage import (
    InMemoryLineage,
    LineageChangedError,
    UnaddressableJobError,
    UnknownJobError,
    UnwalkableLineageError,
    fetch_downstream,
)

ARN = "arn:aws:glue:us-east-1:123456789012"


def ref(name: str, namespace: str = "ns") -> JobRef:
    return JobRef(namespace=namespace, name=name)


def chain(length: int) -> LineageStore:
    store = LineageStore()
    for index in range(length):
        store.ingest_all(
            run_events("ns", f"j{index}", inputs=[f"d{index - 1}"] if index else [], outputs=[f"d{index}"])
        )
    return store


def test_a_chain_longer_than_one_answer_is_followed_from_the_frontier():
    source = InProcessMarquez(chain(45))
    graph = fetch_downstream(source, [ref("j0")], max_depth=50)
    assert all(graph.is_complete(("ns", f"j{i}")) for i in range(45))
    # 20 hops per answer: j0, then j20, then j40 (asked only the 11 hops left to max_depth + 1).
    assert source.queries == [("job:ns:j0", 20), ("job:ns:j20", 20), ("job:ns:j40", 11)]


def test_depth_asked_never_exceeds_what_max_depth_needs():
    source = InProcessMarquez(chain(30))
    graph = fetch_downstream(source, [ref("j0")], max_depth=5)
    assert source.queries == [("job:ns:j0", 6)]
    assert graph.is_complete(("ns", "j5"))  # the cut job's consumers are known: the cut can be named


def test_a_wide_frontier_costs_one_query_per_region_not_per_job():
    store = LineageStore()
    store.ingest_all(run_events("ns", "root", outputs=["r"]))
    for branch in range(50):  # 50 chains of 30 below one root
        for level in range(30):
            inputs = ["r"] if level == 0 else [f"b{branch}_{level - 1}"]
            store.ingest_all(
                run_events("ns", f"b{branch}_{level}", inputs=inputs, outputs=[f"b{branch}_{level}"])
            )
    source = InProcessMarquez(store)
    graph = fetch_downstream(source, [ref("root")], max_depth=40)
    assert all(graph.is_complete(key) for key in graph.jobs)
    assert len(graph.jobs) == 1 + 50 * 30
    # Boundary jobs of each branch need their own answer (branches share nothing below the root).
    assert len(source.queries) <= 1 + 50


def test_every_unknown_root_is_named():
    source = InProcessMarquez(chain(3))
    with pytest.raises(UnknownJobError) as caught:
        fetch_downstream(source, [ref("j0"), ref("nope"), ref("j1", "other")], max_depth=5)
    assert caught.value.jobs == [ref("nope"), ref("j1", "other")]
    assert "'nope' in namespace 'ns'" in str(caught.value)


def test_max_depth_zero_only_checks_the_roots():
    source = InProcessMarquez(chain(5))
    graph = fetch_downstream(source, [ref("j0")], max_depth=0)
    assert source.queries == [("job:ns:j0", 0)]
    assert ("ns", "j0") in graph.jobs


def test_a_job_vanishing_mid_walk_is_reported_as_changed_lineage():
    store = chain(25)

    class Forgetful(InProcessMarquez):
        def lineage(self, job, *, depth):
            if job.name == "j20":
                raise UnknownJobError([job])
            return super().lineage(job, depth=depth)

    with pytest.raises(LineageChangedError, match="j20"):
        fetch_downstream(Forgetful(store), [ref("j0")], max_depth=30)


def test_an_in_memory_whole_graph_is_asked_once():
    store = chain(60)
    source = InMemoryLineage.from_response(store.lineage("job:ns:j0", 100))
    graph = fetch_downstream(source, [ref("j0"), ref("j5")], max_depth=100)
    assert source.queries == 1
    assert len(graph.jobs) == 60


def test_unaddressable_roots_are_all_named_before_unknown_ones():
    store = chain(3)
    store.ingest_all(run_events(ARN, "a") + run_events(ARN, "b"))
    source = InProcessMarquez(store)
    with pytest.raises(UnaddressableJobError) as caught:
        fetch_downstream(source, [ref("a", ARN), ref("nope"), ref("j0"), ref("b", ARN)], max_depth=5)
    assert caught.value.jobs == [ref("a", ARN), ref("b", ARN)]
    assert [node_id for node_id, _ in source.queries] == ["job:ns:nope", "job:ns:j0"]  # never the misread ids


def test_an_unaddressable_job_on_the_frontier_stops_the_walk_by_name():
    store = LineageStore()
    for index in range(6):  # j3 ends the first answer (query_depth 3) and lives in an ARN namespace
        namespace = ARN if index == 3 else "ns"
        store.ingest_all(
            run_events(
                namespace,
                f"j{index}",
                inputs=[("ns", f"d{index - 1}")] if index else [],
                outputs=[("ns", f"d{index}")],
            )
        )
    source = InProcessMarquez(store)
    with pytest.raises(UnwalkableLineageError) as caught:
        fetch_downstream(source, [ref("j0")], max_depth=5, query_depth=3)
    assert (caught.value.job, caught.value.hops) == (ref("j3", ARN), 3)
    assert "3 hops downstream" in str(caught.value)
    # Inside one answer it needs no query of its own: the walk goes through it.
    graph = fetch_downstream(InProcessMarquez(store), [ref("j0")], max_depth=5)
    assert graph.consumers[(ARN, "j3")] == (("ns", "j4"),)
