"""A local double of the Databricks Jobs API (runs/submit, runs/get, runs/cancel) on 127.0.0.1.

Every request is checked against the databricks-sdk's own models: the submit body's keys must
be parameters of `JobsAPI.submit`, and each task must survive `SubmitTask.from_dict` ->
`as_dict` unchanged (an unknown or misspelt key would be dropped and fail the check). A bad
request is answered 400 with Databricks' error shape. A run's life cycle advances one state per
runs/get along its script (`PENDING, RUNNING, TERMINATED/<result>`); `hold` keeps new runs
RUNNING until released, for timeouts and cancels; `on_submit(run_id, body)` lets a test run
the job itself and `finish(run_id, result)` end the run (the DAG tests run the fake job)."""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlparse

from backfill_local.http_server import BackgroundHTTPServer
from backfill_orchestrator.errors import UserError

JOBS_PATHS = ("/api/2.1/jobs/runs/", "/api/2.2/jobs/runs/")


class InvalidRequest(UserError, ValueError):
    """The request does not follow the Jobs API."""


def check_submit(body: Any) -> None:
    from databricks.sdk.service.jobs import JobsAPI, SubmitTask

    if not isinstance(body, dict):
        raise InvalidRequest("body must be a JSON object")
    allowed = set(inspect.signature(JobsAPI.submit).parameters) - {"self"}
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise InvalidRequest(f"unknown fields {unknown}")
    tasks = body.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        raise InvalidRequest("tasks: at least one task is required")
    for index, task in enumerate(tasks):
        if not isinstance(task, dict) or not task.get("task_key"):
            raise InvalidRequest(f"tasks[{index}].task_key is required")
        if SubmitTask.from_dict(task).as_dict() != task:
            raise InvalidRequest(f"tasks[{index}] does not follow SubmitTask: {json.dumps(task)[:300]}")
        cluster = task.get("new_cluster")
        if cluster is not None and not (cluster.get("spark_version") and cluster.get("node_type_id")):
            raise InvalidRequest(f"tasks[{index}].new_cluster needs spark_version and node_type_id")


@dataclass
class DoubleRun:
    run_id: int
    body: dict[str, Any]
    script: list[tuple[str, str | None]]
    position: int = 0
    cancelled: bool = False
    gets: int = 0

    @property
    def state(self) -> tuple[str, str | None]:
        return self.script[min(self.position, len(self.script) - 1)]


@dataclass
class DatabricksJobsDouble:
    token: str = "dapi-local-test"
    result: str = "SUCCESS"  # the result_state new runs end with
    hold: bool = False  # new runs stay RUNNING until `release()`
    on_submit: Callable[[int, dict[str, Any]], None] | None = None
    runs: dict[int, DoubleRun] = field(default_factory=dict)
    rejected: list[str] = field(default_factory=list)
    _tokens: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: BackgroundHTTPServer | None = None

    @property
    def host(self) -> str:
        assert self._server is not None, "start() first"
        return self._server.base_url

    def start(self) -> DatabricksJobsDouble:
        double = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                self._serve(None)

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                self._serve(self.rfile.read(length))

            def _serve(self, body: bytes | None) -> None:
                status, answer = double.handle(self.command, self.path, self.headers, body)
                payload = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
                pass

        self._server = BackgroundHTTPServer(Handler, name="databricks-double")
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()

    def __enter__(self) -> DatabricksJobsDouble:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def release(self, result: str = "SUCCESS") -> None:
        """Held runs go on and end with `result`."""
        with self._lock:
            for run in self.runs.values():
                if not run.cancelled and run.state[0] == "RUNNING":
                    run.script = [*run.script[: run.position + 1], ("TERMINATED", result)]

    def finish(self, run_id: int, result: str) -> None:
        """One held run goes on and ends with `result` (unless it was cancelled)."""
        with self._lock:
            run = self.runs[run_id]
            if not run.cancelled:
                run.script = [*run.script[: run.position], ("RUNNING", None), ("TERMINATED", result)]

    # -- the API ---------------------------------------------------------------------------
    def handle(self, method: str, path: str, headers: Any, body: bytes | None) -> tuple[int, dict[str, Any]]:
        if headers.get("Authorization") != f"Bearer {self.token}":
            return 401, {"error_code": "UNAUTHENTICATED", "message": "invalid access token"}
        url = urlparse(path)
        prefix = next((p for p in JOBS_PATHS if url.path.startswith(p)), None)
        if prefix is None:
            return 404, {"error_code": "ENDPOINT_NOT_FOUND", "message": f"no API at {url.path}"}
        action = url.path[len(prefix) :]
        try:
            document = json.loads(body) if body else {}
            if (method, action) == ("POST", "submit"):
                return 200, self._submit(document)
            if (method, action) == ("GET", "get"):
                return self._get(parse_qs(url.query).get("run_id", [""])[0])
            if (method, action) == ("POST", "cancel"):
                return self._cancel(document.get("run_id"))
        except (InvalidRequest, ValueError) as error:
            self.rejected.append(str(error))
            return 400, {"error_code": "INVALID_PARAMETER_VALUE", "message": str(error)}
        return 404, {"error_code": "ENDPOINT_NOT_FOUND", "message": f"no {method} {action}"}

    def _submit(self, body: dict[str, Any]) -> dict[str, Any]:
        check_submit(body)
        with self._lock:
            token = body.get("idempotency_token")
            if token and token in self._tokens:
                return {"run_id": self._tokens[token]}
            run_id = 1000 + len(self.runs)
            ending = [("RUNNING", None)] if self.hold else [("TERMINATED", self.result)]
            self.runs[run_id] = DoubleRun(run_id, body, [("PENDING", None), ("RUNNING", None), *ending])
            if token:
                self._tokens[token] = run_id
        if self.on_submit is not None:
            self.on_submit(run_id, body)
        return {"run_id": run_id}

    def _run(self, value: Any) -> DoubleRun:
        try:
            return self.runs[int(value)]
        except (KeyError, TypeError, ValueError):
            raise InvalidRequest(f"run {value!r} does not exist") from None

    def _get(self, value: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            run = self._run(value)
            run.gets += 1
            life_cycle, result = run.state
            run.position += 1
        state: dict[str, Any] = {"life_cycle_state": life_cycle, "state_message": ""}
        if result is not None:
            state["result_state"] = result
            state["state_message"] = "" if result == "SUCCESS" else f"run ended {result}"
        return 200, {"run_id": run.run_id, "run_name": run.body.get("run_name"), "state": state}

    def _cancel(self, value: Any) -> tuple[int, dict[str, Any]]:
        with self._lock:
            run = self._run(value)
            if run.state[0] != "TERMINATED":
                run.cancelled = True
                run.script = [*run.script[: run.position], ("TERMINATING", None), ("TERMINATED", "CANCELED")]
        return 200, {}
