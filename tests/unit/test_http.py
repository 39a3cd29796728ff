"""backfill_orchestrator.http against a real HTTP/1.1 server on 127.0.0.1: what a request
carries, kept-alive connections, the retry policy and the named errors."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from backfill_orchestrator.deadline import Deadline, deadline_scope
from backfill_orchestrator.http import (
    HttpConnectionError,
    HttpError,
    HttpTimeoutError,
    OutOfTimeError,
    retrying_session,
)


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.seen: list[dict[str, object]] = []
        self.answers: list[tuple[int, dict[str, str], bytes]] = []  # next answers; then 200 {}
        self.connections = 0
        self.delay = 0.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    server: Server

    def setup(self) -> None:
        super().setup()
        self.server.connections += 1

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.seen.append(
            {"method": self.command, "path": self.path, "headers": self.headers, "body": body}
        )
        if self.server.delay:
            threading.Event().wait(self.server.delay)
        status, headers, content = self.server.answers.pop(0) if self.server.answers else (200, {}, b"{}")
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)

    do_GET = do_POST = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[Server]:
    served = Server()
    thread = threading.Thread(target=served.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield served
    served.shutdown()
    served.server_close()


def test_a_get_carries_its_query_and_headers_and_reuses_one_connection(server: Server) -> None:
    session = retrying_session()
    for _ in range(3):
        answer = session.get(
            f"{server.url}/api/v1/lineage",
            params={"nodeId": "job:ns:a b", "depth": 2, "gone": None, "s": ["x", "y"]},
            headers={"Accept": "application/json"},
        )
        assert (answer.status_code, answer.json()) == (200, {})
    assert server.seen[0]["path"] == "/api/v1/lineage?nodeId=job%3Ans%3Aa+b&depth=2&s=x&s=y"
    assert server.seen[0]["headers"]["Accept"] == "application/json"  # type: ignore[index]
    assert server.connections == 1


def test_a_post_sends_json_and_basic_credentials(server: Server) -> None:
    server.answers = [(201, {}, b'{"ok": true}')]
    answer = retrying_session().request(
        "POST",
        f"{server.url}/api/v1/dags/x/dagRuns?a=1",
        json={"conf": {"k": "v"}},
        params={"b": 2},
        auth=("u", "p:w"),
    )
    assert (answer.status_code, answer.json(), answer.headers["content-type"]) == (
        201,
        {"ok": True},
        "application/json",
    )
    seen = server.seen[0]
    assert seen["path"] == "/api/v1/dags/x/dagRuns?a=1&b=2"
    assert json.loads(seen["body"]) == {"conf": {"k": "v"}}  # type: ignore[arg-type]
    headers = seen["headers"]
    assert headers["Content-Type"] == "application/json"  # type: ignore[index]
    assert headers["Authorization"] == "Basic " + base64.b64encode(b"u:p:w").decode()  # type: ignore[index]


def test_a_retryable_status_is_retried_after_its_retry_after_and_the_last_one_is_returned(
    server: Server,
) -> None:
    session = retrying_session(retries=2, backoff_factor=0)
    server.answers = [(503, {"Retry-After": "0"}, b"busy"), (200, {}, b'{"n": 1}')]
    assert session.get(server.url).json() == {"n": 1}
    server.answers = [(429, {}, b"slow down")] * 3
    last = session.post(server.url, json={})  # POSTs are retried too (retry_posts)
    assert (last.status_code, last.text) == (429, "slow down")
    assert len(server.seen) == 2 + 3


def test_a_closed_port_is_a_connection_error_that_names_the_cause(server: Server) -> None:
    url = server.url
    server.shutdown()
    server.server_close()
    with pytest.raises(HttpConnectionError, match=r"^\[Errno 111\] Connection refused$") as caught:
        retrying_session(retries=1, backoff_factor=0).get(url)
    assert isinstance(caught.value, HttpError) and caught.value.retryable


def test_a_slow_answer_is_a_timeout(server: Server) -> None:
    server.delay = 0.5
    with pytest.raises(HttpTimeoutError, match="Read timed out"):
        retrying_session(retries=0, timeout=(1.0, 0.05)).get(server.url)


def test_within_a_deadline_a_call_is_cut_to_the_time_left_and_never_sent_after_it(server: Server) -> None:
    server.delay = 1.0
    session = retrying_session(retries=3, backoff_factor=0)
    with (
        deadline_scope(Deadline.after(0.3)),
        pytest.raises(OutOfTimeError, match=r"GET http://127\.0\.0\.1:\d+/slow"),
    ):
        session.get(f"{server.url}/slow")  # the read timeout is the 0.3 s left, not 10 s
    server.delay = 0.0
    sent = len(server.seen)
    with deadline_scope(Deadline.after(0)), pytest.raises(OutOfTimeError, match="not sent"):
        session.get(server.url)
    assert len(server.seen) == sent
