"""A job's runs over HTTP: the double answers `GET /api/v1/namespaces/{ns}/jobs/{job}/runs` as
Marquez does (paged with limit/offset, newest first by startedAt, totalCount, nominal times from
the nominalTime facet), and MarquezClient reads them and a job's upstream producers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import requests

from backfill_local.marquez_double import MarquezDouble, run_events
from backfill_orchestrator.config import JobRef
from backfill_orchestrator.http import retrying_session
from backfill_orchestrator.lineage import (
    MarquezClient,
    MarquezResponseError,
    MarquezUnavailableError,
    UnknownJobError,
)

FD = "food_delivery"
DAY = datetime(2021, 6, 4, tzinfo=UTC)
URI_NAMESPACE = "postgres://db:5432"


def day_runs(count: int) -> list[dict]:
    events = []
    for back in range(count):
        day = DAY - timedelta(days=back)
        events += run_events(
            FD,
            "etl_orders",
            nominal=(day, day + timedelta(days=1)),
            outcome="FAIL" if back == 1 else "COMPLETE",
            event_time=day + timedelta(days=1, hours=3),
            duration=timedelta(minutes=back + 1),
        )
    events += run_events(URI_NAMESPACE, "load/orders", nominal=(DAY, DAY), event_time=DAY)
    return events


@pytest.fixture(scope="module")
def marquez():
    with MarquezDouble(seed="food_delivery", events=day_runs(7)) as double:
        yield double


def client(double: MarquezDouble) -> MarquezClient:
    return MarquezClient(
        double.url, session=retrying_session(retries=1, backoff_factor=0.01, backoff_max=0.02)
    )


def test_runs_are_newest_first_and_paged(marquez):
    answer = requests.get(
        f"{marquez.url}/api/v1/namespaces/{FD}/jobs/etl_orders/runs",
        params={"limit": 3, "offset": 1},
        timeout=10,
    ).json()
    assert answer["totalCount"] == 8  # the sample's run and 7 daily runs
    # By startedAt, not by nominal time: the sample's run started 2021-06-04T02:00.
    assert [run["nominalStartTime"] for run in answer["runs"]] == [
        "2021-06-03T00:00:00Z",
        "2020-02-22T22:00:00Z",
        "2021-06-02T00:00:00Z",
    ]
    run = answer["runs"][0]
    assert set(run) >= {
        "id",
        "createdAt",
        "updatedAt",
        "nominalStartTime",
        "nominalEndTime",
        "state",
        "startedAt",
        "endedAt",
        "durationMs",
        "args",
        "facets",
    }
    assert (run["state"], run["durationMs"], run["nominalEndTime"]) == (
        "FAILED",
        120_000,
        "2021-06-04T00:00:00Z",
    )


def test_limit_and_offset_are_checked_as_marquez_checks_them(marquez):
    url = f"{marquez.url}/api/v1/namespaces/{FD}/jobs/etl_orders/runs"
    assert requests.get(url, params={"limit": -1}, timeout=10).json() == {
        "errors": ["query param limit must be greater than or equal to 0"]
    }
    assert requests.get(url, params={"offset": "x"}, timeout=10).status_code == 404
    assert len(requests.get(url, timeout=10).json()["runs"]) == 8  # default limit 100
    missing = requests.get(f"{marquez.url}/api/v1/namespaces/{FD}/jobs/nope/runs", timeout=10)
    assert (missing.status_code, missing.json()["message"]) == (404, "Job 'nope' not found.")


def test_the_client_reads_pages_of_runs(marquez):
    page = client(marquez).job_runs(JobRef(namespace=FD, name="etl_orders"), limit=2, offset=0)
    assert page.total_count == 8
    assert [(run.state, run.nominal_start) for run in page.runs] == [
        ("COMPLETED", DAY),
        ("FAILED", DAY - timedelta(days=1)),
    ]
    assert page.runs[0].window_days == 1.0 and page.runs[0].duration_ms == 60_000


def test_the_client_encodes_uri_namespaces_and_job_names(marquez):
    page = client(marquez).job_runs(JobRef(namespace=URI_NAMESPACE, name="load/orders"), limit=10, offset=0)
    assert [run.state for run in page.runs] == ["COMPLETED"]
    assert (
        marquez.runs_requests()[-1]["path"]
        == "/api/v1/namespaces/postgres%3A%2F%2Fdb%3A5432/jobs/load%2Forders/runs"
    )


def test_the_client_refuses_pages_marquez_would_not_serve(marquez):
    with pytest.raises(ValueError, match="limit must be 1..100"):
        client(marquez).job_runs(JobRef(namespace=FD, name="etl_orders"), limit=101, offset=0)


def test_an_unknown_job_and_a_failing_marquez_are_named_errors(marquez):
    with pytest.raises(UnknownJobError):
        client(marquez).job_runs(JobRef(namespace=FD, name="nope"), limit=10, offset=0)
    marquez.fail_next(503, times=3, on="runs")
    with pytest.raises(MarquezUnavailableError):
        client(marquez).job_runs(JobRef(namespace=FD, name="etl_orders"), limit=10, offset=0)
    marquez.fail_next(403, on="runs")
    with pytest.raises(MarquezResponseError, match="403"):
        client(marquez).job_runs(JobRef(namespace=FD, name="etl_orders"), limit=10, offset=0)


def test_the_producers_are_the_writers_of_what_a_job_reads(marquez):
    producers = client(marquez).producers(JobRef(namespace=FD, name="etl_orders_7_days"))
    assert sorted(job.name for job in producers) == [
        "etl_categories",
        "etl_menu_items",
        "etl_menus",
        "etl_orders",
    ]
    assert client(marquez).producers(JobRef(namespace=FD, name="etl_orders")) == []  # reads nothing
    assert marquez.lineage_requests()[-1]["params"]["depth"] == "1"
