"""Reading Marquez lineage answers: downstream only, names from node data, boundary completeness."""

from __future__ import annotations

import pytest

from backfill_local.marquez_double import LineageStore, run_events
from backfill_orchestrator.lineage import MalformedLineageError, job_node_id, parse_lineage_response

PG = "postgres://db:5432"


def store_of(*event_lists: list[dict]) -> LineageStore:
    store = LineageStore()
    for events in event_lists:
        store.ingest_all(events)
    return store


def chain_store(length: int, namespace: str = "ns") -> LineageStore:
    """j0 -> d0 -> j1 -> d1 -> ... -> j{length-1}."""
    store = LineageStore()
    for index in range(length):
        inputs = [f"d{index - 1}"] if index else []
        store.ingest_all(run_events(namespace, f"j{index}", inputs=inputs, outputs=[f"d{index}"]))
    return store


def test_names_come_from_node_data_even_with_colons_in_namespaces():
    store = store_of(
        run_events(PG, "load:orders", outputs=[(PG, "public.orders")]),
        run_events(PG, "agg", inputs=[(PG, "public.orders")], outputs=[(PG, "public.agg")]),
    )
    payload = store.lineage(job_node_id(PG, "load:orders"), 20)
    graph = parse_lineage_response(payload, start=(PG, "load:orders"), depth=20)
    assert set(graph.jobs) == {(PG, "load:orders"), (PG, "agg")}
    assert graph.consumers[(PG, "load:orders")] == ((PG, "agg"),)


def test_only_downstream_edges_become_consumers():
    # up -> a -> down, and a sibling that reads a's input: Marquez returns all four.
    store = store_of(
        run_events("ns", "up", outputs=["raw"]),
        run_events("ns", "a", inputs=["raw"], outputs=["mid"]),
        run_events("ns", "sibling", inputs=["raw"], outputs=["other"]),
        run_events("ns", "down", inputs=["mid"], outputs=["out"]),
    )
    graph = parse_lineage_response(store.lineage("job:ns:a", 20), start=("ns", "a"), depth=20)
    assert set(graph.jobs) == {("ns", n) for n in ("up", "a", "sibling", "down")}
    assert graph.consumers[("ns", "a")] == (("ns", "down"),)
    assert set(graph.consumers[("ns", "up")]) == {("ns", "a"), ("ns", "sibling")}
    assert graph.consumers[("ns", "down")] == ()


def test_jobs_on_the_depth_boundary_are_not_complete():
    store = chain_store(6)
    graph = parse_lineage_response(store.lineage("job:ns:j0", 3), start=("ns", "j0"), depth=3)
    assert set(graph.jobs) == {("ns", f"j{i}") for i in range(4)}
    # j3 is 3 hops away: Marquez dropped the edge d3 -> j4, so j3 must not look like a leaf.
    assert [graph.is_complete(("ns", f"j{i}")) for i in range(4)] == [True, True, True, False]
    assert graph.consumers[("ns", "j2")] == (("ns", "j3"),)


def test_siblings_make_boundary_jobs_complete_sooner():
    # b reads what a reads: one hop from a although not downstream of it.
    store = store_of(
        run_events("ns", "a", inputs=["shared"], outputs=["x"]),
        run_events("ns", "b", inputs=["shared"], outputs=["y"]),
        run_events("ns", "c", inputs=["y"], outputs=["z"]),
    )
    graph = parse_lineage_response(store.lineage("job:ns:a", 2), start=("ns", "a"), depth=2)
    assert graph.is_complete(("ns", "b")) and graph.consumers[("ns", "b")] == (("ns", "c"),)
    assert not graph.is_complete(("ns", "c"))


def test_whole_graph_mode_marks_every_job_complete():
    store = chain_store(4)
    graph = parse_lineage_response(store.lineage("job:ns:j0", 50), start=None, depth=None)
    assert all(graph.is_complete(key) for key in graph.jobs)


def test_a_start_job_missing_from_the_answer_exists_without_consumers():
    graph = parse_lineage_response({"graph": []}, start=("ns", "lonely"), depth=5)
    assert graph.jobs[("ns", "lonely")].name == "lonely"
    assert graph.consumers[("ns", "lonely")] == ()


def test_parent_and_airflow_facets_are_read():
    store = store_of(
        run_events("ns", "t1", parent="my_dag", outputs=["a"]),
        run_events("ns", "loose", airflow_dag_id="other_dag", inputs=["a"]),
    )
    graph = parse_lineage_response(store.lineage("job:ns:my_dag.t1", 5), start=("ns", "my_dag.t1"), depth=5)
    assert graph.jobs[("ns", "my_dag.t1")].parent_job_name == "my_dag"
    assert graph.jobs[("ns", "loose")].airflow_dag_id == "other_dag"


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ([], "no 'graph' list"),
        ({"graph": [{"type": "JOB"}]}, "graph[0] has no id"),
        ({"graph": [{"id": "job:a:b", "type": "JOB"}]}, "graph[0] (a job) has no data"),
        (
            {"graph": [{"id": "job:a:b", "type": "JOB", "data": {"id": {"namespace": "a"}}}]},
            "namespace and name",
        ),
        (
            {
                "graph": [
                    {"id": "job:a:b", "type": "JOB", "data": {"namespace": "a", "name": "b"}, "outEdges": {}}
                ]
            },
            "graph[0].outEdges is not a list",
        ),
        (
            {
                "graph": [
                    {
                        "id": "job:a:b",
                        "type": "JOB",
                        "data": {"namespace": "a", "name": "b"},
                        "outEdges": [{}],
                    }
                ]
            },
            "without destination",
        ),
    ],
)
def test_malformed_answers_are_located(payload, message):
    with pytest.raises(
        MalformedLineageError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")
    ):
        parse_lineage_response(payload, start=("a", "b"), depth=3)
