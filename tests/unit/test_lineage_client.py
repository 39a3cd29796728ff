"""MarquezClient: request shape and the named error of each answer (no network: a fake transport)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from urllib3 import HTTPConnectionPool, HTTPResponse
from urllib3.connection import HTTPConnection
from urllib3.exceptions import MaxRetryError, NewConnectionError, ReadTimeoutError
from urllib3.util.retry import Retry

from backfill_local.marquez_double import LineageStore, run_events
from backfill_orchestrator.config import JobRef
from backfill_orchestrator.http import HttpSession
from backfill_orchestrator.lineage import (
    InvalidMarquezUrlError,
    MarquezClient,
    MarquezResponseError,
    MarquezUnavailableError,
    UnaddressableJobError,
    UnknownJobError,
)

PG = "postgres://db:5432"
MARQUEZ_POOL = HTTPConnectionPool("marquez", 5000)


@dataclass(frozen=True)
class Sent:
    method: str
    url: str
    headers: dict[str, str]


class FakePool:
    """urllib3's pool, answering every request with the next canned (status, body) or raising
    the next urllib3 error; records what was sent."""

    def __init__(self, *answers: tuple[int, object] | Exception):
        self.answers = list(answers)
        self.sent: list[Sent] = []

    def request(self, method, url, *, body=None, headers=None, timeout=None, retries=None):
        self.sent.append(Sent(method, url, dict(headers or {})))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        status, content = answer
        data = content if isinstance(content, bytes) else json.dumps(content).encode()
        return HTTPResponse(body=data, status=status, reason="Reason", preload_content=True)


def client_with(*answers, api_key=None) -> tuple[MarquezClient, FakePool]:
    pool = FakePool(*answers)
    session = HttpSession(retry=Retry(0), timeout=1.0, pool=pool)  # type: ignore[arg-type]
    return MarquezClient("http://marquez:5000/", api_key=api_key, session=session), pool


def test_asks_for_the_job_node_url_encoded_with_depth_and_bearer_key():
    store = LineageStore()
    store.ingest_all(run_events(PG, "load orders", outputs=[(PG, "public.orders")]))
    client, transport = client_with((200, store.lineage(f"job:{PG}:load orders", 7)), api_key="s3cret")
    graph = client.lineage(JobRef(namespace=PG, name="load orders"), depth=7)
    sent = transport.sent[0]
    assert sent.url == (
        "http://marquez:5000/api/v1/lineage?nodeId=job%3Apostgres%3A%2F%2Fdb%3A5432%3Aload+orders&depth=7"
    )
    assert sent.headers["Authorization"] == "Bearer s3cret"
    assert (PG, "load orders") in graph.jobs


@pytest.mark.parametrize(
    ("namespace", "name", "misread"),
    [
        (
            "arn:aws:glue:us-east-1:123456789012",
            "etl",
            "job 'aws:glue:us-east-1:123456789012:etl' in namespace 'arn'",
        ),
        ("team:", "etl", "job ':etl' in namespace 'team'"),
        ("shard:1", "2", "nothing (it fails on the id)"),  # no second ':' that is not before a digit
    ],
)
def test_a_job_marquez_would_misread_is_refused_before_asking(namespace, name, misread):
    client, transport = client_with()
    with pytest.raises(UnaddressableJobError) as caught:
        client.lineage(JobRef(namespace=namespace, name=name), depth=3)
    assert transport.sent == []
    assert f"Marquez reads 'job:{namespace}:{name}' as {misread}" in str(caught.value)
    assert caught.value.jobs == [JobRef(namespace=namespace, name=name)]
    assert caught.value.category == "refused"


def test_no_authorization_header_without_a_key():
    client, transport = client_with((200, {"graph": []}))
    client.lineage(JobRef(namespace="ns", name="a"), depth=1)
    assert "Authorization" not in transport.sent[0].headers


def test_404_from_marquez_names_the_unknown_job():
    client, _ = client_with((404, {"code": 404, "message": "Job 'ns:nope' not found."}))
    with pytest.raises(UnknownJobError, match="'nope' in namespace 'ns'") as caught:
        client.lineage(JobRef(namespace="ns", name="nope"), depth=3)
    assert caught.value.job == JobRef(namespace="ns", name="nope")


@pytest.mark.parametrize("body", [b"<html>Not Found</html>", {"code": 404, "message": "HTTP 404 Not Found"}])
def test_404_for_the_path_itself_says_the_url_is_wrong(body):
    client, _ = client_with((404, body))
    with pytest.raises(MarquezResponseError, match="base URL"):
        client.lineage(JobRef(namespace="ns", name="a"), depth=3)


@pytest.mark.parametrize("status", [429, 500, 503])
def test_retryable_statuses_left_after_retries_mean_unavailable(status):
    client, _ = client_with((status, {"code": status, "message": "busy"}))
    with pytest.raises(MarquezUnavailableError, match=f"answered {status} after retries"):
        client.lineage(JobRef(namespace="ns", name="a"), depth=3)


def test_connection_errors_mean_unavailable():
    refused = NewConnectionError(
        HTTPConnection("marquez", 5000),
        "Failed to establish a new connection: [Errno 111] Connection refused",
    )
    client, _ = client_with(MaxRetryError(MARQUEZ_POOL, "/api/v1/lineage", refused))
    with pytest.raises(
        MarquezUnavailableError,
        match=r"cannot connect \(\[Errno 111\] Connection refused\)",
    ):
        client.lineage(JobRef(namespace="ns", name="a"), depth=3)


def test_timeouts_mean_unavailable():
    client, _ = client_with(
        ReadTimeoutError(MARQUEZ_POOL, "/api/v1/lineage", "Read timed out. (read timeout=10)")
    )
    with pytest.raises(
        MarquezUnavailableError, match=r"cannot connect \(Read timed out. \(read timeout=10\)\)"
    ):
        client.lineage(JobRef(namespace="ns", name="a"), depth=3)


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ((401, {"code": 401, "message": "no"}), "check the API key"),
        ((400, {"code": 400, "message": "bad"}), "400"),
        ((200, b"not json"), "not JSON"),
        ((200, {"nodes": []}), "malformed lineage graph: no 'graph' list"),
    ],
)
def test_other_answers_are_response_errors(answer, message):
    client, _ = client_with(answer)
    with pytest.raises(MarquezResponseError, match=message):
        client.lineage(JobRef(namespace="ns", name="a"), depth=3)


@pytest.mark.parametrize("url", ["", "marquez:5000", "ftp://marquez", "http://"])
def test_bad_base_urls_are_refused_up_front(url):
    with pytest.raises(InvalidMarquezUrlError):
        MarquezClient(url)


def test_from_env_reads_url_and_key():
    client = MarquezClient.from_env(environ={"MARQUEZ_URL": "http://m:5000/", "MARQUEZ_API_KEY": "k"})
    assert client.base_url == "http://m:5000"
    assert client._headers["Authorization"] == "Bearer k"
    with pytest.raises(InvalidMarquezUrlError, match="MARQUEZ_URL"):
        MarquezClient.from_env(environ={})
    assert (
        MarquezClient.from_env(base_url="http://flag:1", environ={"MARQUEZ_URL": "http://env:2"}).base_url
        == "http://flag:1"
    )
