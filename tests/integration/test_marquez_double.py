"""The Marquez double over HTTP: Marquez's lineage semantics, and the client's retries against it."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime

import pytest
import requests

from backfill_local.marquez_double import MarquezDouble, run_events
from backfill_orchestrator.config import JobRef
from backfill_orchestrator.http import retrying_session
from backfill_orchestrator.lineage import MarquezClient, MarquezUnavailableError, UnknownJobError

FD = "food_delivery"


def get(double: MarquezDouble, node_id: str, depth: int | None = None, **headers) -> requests.Response:
    params = {"nodeId": node_id} if depth is None else {"nodeId": node_id, "depth": depth}
    return requests.get(f"{double.url}/api/v1/lineage", params=params, headers=headers, timeout=10)


def chain_events(length: int) -> list[dict]:
    events = []
    for i in range(length):
        events += run_events("ns", f"j{i}", inputs=[f"d{i - 1}"] if i else [], outputs=[f"d{i}"])
    return events


@pytest.fixture(scope="module")
def food():
    with MarquezDouble(seed="food_delivery") as double:
        yield double


def test_lineage_is_both_directions_sorted(food):
    graph = get(food, f"job:{FD}:etl_orders_7_days").json()["graph"]
    ids = [node["id"] for node in graph]
    assert ids == sorted(ids)
    jobs = {node["data"]["name"] for node in graph if node["type"] == "JOB"}
    # Upstream (etl_menus...), downstream, and everything else within 20 hops: the whole sample.
    assert jobs == {
        "etl_menus",
        "etl_categories",
        "etl_menu_items",
        "etl_orders",
        "etl_customers",
        "etl_order_status",
        "etl_drivers",
        "etl_restaurants",
        "etl_orders_7_days",
        "etl_delivery_7_days",
        "delivery_times_7_days",
        "orders_popular_day_of_week",
        "email_discounts",
    }
    node = next(n for n in graph if n["id"] == f"dataset:{FD}:public.discounts")
    assert node["inEdges"] == [{"origin": f"job:{FD}:delivery_times_7_days", "destination": node["id"]}]
    assert node["outEdges"] == [{"origin": node["id"], "destination": f"job:{FD}:email_discounts"}]
    job = next(n for n in graph if n["id"] == f"job:{FD}:etl_orders_7_days")
    assert [e["origin"] for e in job["inEdges"]] == sorted(e["origin"] for e in job["inEdges"])
    assert job["data"]["latestRun"]["state"] == "COMPLETED"
    assert job["data"]["outputs"] == [{"namespace": FD, "name": "public.orders_7_days"}]


def test_depth_counts_job_hops_and_drops_boundary_edges():
    with MarquezDouble(events=chain_events(6)) as double:
        graph = get(double, "job:ns:j0", 2).json()["graph"]
        assert [n["data"]["name"] for n in graph if n["type"] == "JOB"] == ["j0", "j1", "j2"]
        d2 = next(n for n in graph if n["id"] == "dataset:ns:d2")
        assert d2["outEdges"] == []  # j3 reads it, but j3 is beyond the boundary
        assert len(get(double, "job:ns:j0").json()["graph"]) == 12  # default depth 20: all 6 jobs, 6 datasets
        assert [n["id"] for n in get(double, "job:ns:j0", 0).json()["graph"]] == [
            "dataset:ns:d0",
            "job:ns:j0",
        ]


def test_unknown_nodes_paths_and_bad_ids(food):
    # Marquez's JobNotFoundException names the job only, as it read it from the id.
    answer = get(food, f"job:{FD}:nope")
    assert answer.status_code == 404 and answer.json() == {"code": 404, "message": "Job 'nope' not found."}
    dataset = get(food, f"dataset:{FD}:public.nope")
    assert dataset.status_code == 404 and dataset.json()["message"] == "Dataset 'public.nope' not found."
    wrong_path = requests.get(f"{food.url}/api/v1-beta/lineage", timeout=10)
    assert wrong_path.status_code == 404 and wrong_path.json()["message"] == "HTTP 404 Not Found"
    # Jersey answers a query parameter it cannot convert (NodeId, int) with 404, like a wrong path.
    for bad in (get(food, "nonsense"), get(food, f"job:{FD}:etl_orders", "deep")):
        assert bad.status_code == 404 and bad.json() == {"code": 404, "message": "HTTP 404 Not Found"}
    missing = requests.get(f"{food.url}/api/v1/lineage", timeout=10)
    assert missing.status_code == 400 and missing.json() == {
        "errors": ["query param nodeId must not be null"]
    }
    assert get(food, "job:x").status_code == 500  # Marquez cannot split it into three parts


def test_node_ids_are_read_as_marquez_reads_them():
    """`NodeId.parts`: the first colons not followed by `//` or a digit; a plain colon in a
    namespace cuts it, so the job cannot be reached by its node id."""
    arn = "arn:aws:glue:us-east-1:123456789012"
    events = run_events(arn, "etl", outputs=["raw"]) + run_events(
        "arn", "aws:glue:us-east-1:123456789012:etl"
    )
    with MarquezDouble(events=run_events(arn, "load", outputs=["x"])) as double:
        answer = get(double, f"job:{arn}:load")
        assert answer.status_code == 404
        assert answer.json()["message"] == "Job 'aws:glue:us-east-1:123456789012:load' not found."
    with MarquezDouble(events=events) as double:  # the id names the *other* job, as in Marquez
        [job] = [n for n in get(double, f"job:{arn}:etl").json()["graph"] if n["type"] == "JOB"]
        assert job["data"]["id"] == {"namespace": "arn", "name": "aws:glue:us-east-1:123456789012:etl"}


def test_versioned_ids_skip_the_existence_check():
    # BaseResource.throwIfNotExists skips ids with '#'; LineageService then reads an unknown job
    # as an orphan dataset of that name, and throws when there is none. A known one resolves.
    with MarquezDouble(events=run_events("ns", "load#2", outputs=["x"])) as double:
        assert get(double, "job:ns:ghost#1").status_code == 500
        assert get(double, "job:ns:load#2").json()["graph"][1]["data"]["name"] == "load#2"


def test_a_dataset_no_job_uses_any_more_is_an_orphan_graph():
    later = datetime(2021, 6, 2, tzinfo=UTC)
    events = run_events("ns", "a", outputs=["x"]) + run_events("ns", "a", outputs=["y"], event_time=later)
    with MarquezDouble(events=events) as double:
        [node] = get(double, "dataset:ns:x").json()["graph"]
        assert node["type"] == "DATASET" and node["inEdges"] == node["outEdges"] == []


def test_a_dataset_node_starts_at_its_writer(food):
    graph = get(food, f"dataset:{FD}:public.delivery_7_days", 1).json()["graph"]
    assert {n["data"]["name"] for n in graph if n["type"] == "JOB"} == {
        "etl_delivery_7_days",
        "etl_orders_7_days",
        "etl_customers",
        "etl_order_status",
        "etl_drivers",
        "etl_restaurants",
        "delivery_times_7_days",
        "orders_popular_day_of_week",
        "email_discounts",
    }


def test_colon_namespaces_resolve():
    pg = "postgres://db:5432"
    with MarquezDouble(events=run_events(pg, "load", outputs=["public.orders"])) as double:
        graph = get(double, f"job:{pg}:load").json()["graph"]
        assert [n["data"]["id"] for n in graph] == [
            {"namespace": pg, "name": "public.orders"},
            {"namespace": pg, "name": "load"},
        ]


def test_events_posted_over_http_join_the_graph():
    with MarquezDouble() as double:
        for event in run_events("ns", "a", outputs=["x"]) + run_events("ns", "b", inputs=["x"]):
            assert requests.post(f"{double.url}/api/v1/lineage", json=event, timeout=10).status_code == 201
        bad = requests.post(f"{double.url}/api/v1/lineage", json={"eventType": "START"}, timeout=10)
        assert bad.status_code == 422 and "eventTime" in bad.json()["message"]
        graph = MarquezClient(double.url).lineage(JobRef(namespace="ns", name="a"), depth=5)
        assert graph.consumers[("ns", "a")] == (("ns", "b"),)


def test_task_jobs_get_their_parent():
    with MarquezDouble(events=run_events("ns", "extract", parent="nightly", outputs=["raw"])) as double:
        [job] = [n for n in get(double, "job:ns:nightly.extract").json()["graph"] if n["type"] == "JOB"]
        assert (job["data"]["name"], job["data"]["simpleName"], job["data"]["parentJobName"]) == (
            "nightly.extract",
            "extract",
            "nightly",
        )


def test_api_key_is_required_when_set():
    with MarquezDouble(seed="food_delivery", api_key="k1") as double:
        assert get(double, f"job:{FD}:etl_orders").status_code == 401
        assert get(double, f"job:{FD}:etl_orders", Authorization="Bearer k1").status_code == 200
        client = MarquezClient(double.url, api_key="k1")
        assert (FD, "etl_orders") in client.lineage(JobRef(namespace=FD, name="etl_orders"), depth=1).jobs


# -- the client against it -------------------------------------------------------------------------
def fast_client(double: MarquezDouble, retries: int = 3) -> MarquezClient:
    return MarquezClient(double.url, session=retrying_session(retries=retries, backoff_factor=0))


def test_client_retries_5xx_and_429_then_succeeds(food):
    food.fail_next(503, times=2)
    food.fail_next(429, retry_after="0")
    before = len(food.lineage_requests())
    graph = fast_client(food).lineage(JobRef(namespace=FD, name="etl_orders"), depth=3)
    assert (FD, "etl_orders_7_days") in graph.consumers[(FD, "etl_orders")]
    assert len(food.lineage_requests()) - before == 4


def test_client_gives_up_after_retries(food):
    food.fail_next(502, times=4)
    with pytest.raises(MarquezUnavailableError, match="502"):
        fast_client(food, retries=3).lineage(JobRef(namespace=FD, name="etl_orders"), depth=3)


def test_client_names_unknown_jobs_and_unreachable_servers(food):
    with pytest.raises(UnknownJobError, match="'ghost' in namespace 'food_delivery'"):
        fast_client(food).lineage(JobRef(namespace=FD, name="ghost"), depth=3)
    with MarquezDouble() as gone:
        url = gone.url
    client = MarquezClient(url, session=retrying_session(retries=2, backoff_factor=0))
    with pytest.raises(MarquezUnavailableError, match="Connection refused"):
        client.lineage(JobRef(namespace=FD, name="etl_orders"), depth=3)


def test_runs_as_a_module_for_the_demo():
    process = subprocess.Popen(
        [sys.executable, "-m", "backfill_local.marquez_double", "--port", "0", "--seed", "food_delivery"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        banner = process.stdout.readline()
        assert banner.startswith("marquez double: 13 jobs, serving http://127.0.0.1:")
        url = banner.split("serving ")[1].strip()
        answer = requests.get(url, params={"nodeId": f"job:{FD}:etl_orders", "depth": 1}, timeout=10)
        assert answer.status_code == 200
        assert json.loads(answer.text)["graph"]
    finally:
        process.terminate()
        process.wait(timeout=10)
