"""A strict double of Airflow 3's REST API (`/api/v2`) on 127.0.0.1, for fast tests.

It enforces what a client most easily gets wrong (see shared docs, airflow-mwaa-api.md):
- `POST /auth/token` {"username", "password"} -> 201 {"access_token": <HS256 JWT>}; every
  `/api/v2` call needs `Authorization: Bearer <JWT>`, expired or foreign tokens get 401
  (`expire_tokens()` makes every issued token stale, as a jwt_expiration_time would);
- the trigger body is strict: unknown keys -> 422, the `logical_date` key is required
  (null allowed) -> 422 when absent, `data_interval_start`/`_end` both or neither;
- 404 for an unknown DAG; 409 for an existing run id, or an existing non-null logical date;
- `GET /api/v2/dags/{dag_id}/dagRuns/{run_id}` -> the run or 404.
With `basic_auth_v1=True` it also serves Airflow 2's `/api/v1` with basic auth (unknown
keys -> 400, as connexion answers). `fail_next(n, status)` injects failures.

    with AirflowDouble(dag_ids={"backfill"}) as airflow:
        client = RestAirflowClient(airflow.url, username=airflow.username, password=...)
        ... airflow.runs[("backfill", run_id)]["conf"]
"""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import unquote, urlparse

import jwt

from backfill_local.http_server import BackgroundHTTPServer

TRIGGER_KEYS = {"dag_run_id", "logical_date", "data_interval_start", "data_interval_end", "run_after", "conf", "note"}
V1_TRIGGER_KEYS = {"dag_run_id", "logical_date", "execution_date", "data_interval_start", "data_interval_end", "conf", "note"}
_RUNS = re.compile(r"^/api/(v[12])/dags/([^/]+)/dagRuns(?:/([^/]+))?$")


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _parse_datetime(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


class AirflowDouble:
    def __init__(
        self,
        *,
        dag_ids: set[str] | frozenset[str] = frozenset({"backfill"}),
        username: str = "admin",
        password: str = "admin",
        jwt_expiration_seconds: int = 3600,
        basic_auth_v1: bool = False,
    ):
        self.dag_ids = set(dag_ids)
        self.username = username
        self.password = password
        self._expiration = jwt_expiration_seconds
        self._basic_auth_v1 = basic_auth_v1
        self._jwt_secret = secrets.token_hex(16)
        self._lock = threading.Lock()
        self._failures: list[int] = []
        self.runs: dict[tuple[str, str], dict[str, Any]] = {}
        self.requests: list[dict[str, Any]] = []  # method, path, status, body (token calls excluded)
        self.tokens_issued = 0
        self._server: BackgroundHTTPServer | None = None

    # -- control -----------------------------------------------------------------------
    @property
    def url(self) -> str:
        assert self._server is not None, "not started"
        return self._server.base_url

    def fail_next(self, count: int, *, status: int = 500) -> None:
        """The next `count` API requests (token requests excluded) answer `status`."""
        with self._lock:
            self._failures.extend([status] * count)

    def expire_tokens(self) -> None:
        """Every token issued so far stops working (answers 401)."""
        with self._lock:
            self._jwt_secret = secrets.token_hex(16)

    def trigger_posts(self, dag_id: str | None = None) -> list[dict[str, Any]]:
        return [
            r for r in self.requests
            if r["method"] == "POST" and (dag_id is None or f"/dags/{dag_id}/" in r["path"] + "/")
        ]  # fmt: skip

    # -- request handling --------------------------------------------------------------
    def _issue_token(self, body: Any) -> tuple[int, Any]:
        if not isinstance(body, dict) or body.get("username") != self.username or body.get("password") != self.password:
            return 401, {"detail": "Invalid credentials"}
        with self._lock:
            self.tokens_issued += 1
            now = int(time.time())
            claims = {"sub": self.username, "iat": now, "nbf": now, "exp": now + self._expiration, "jti": secrets.token_hex(8)}
            token = jwt.encode(claims, self._jwt_secret, algorithm="HS256")
        return 201, {"access_token": token}

    def _authorized(self, version: str, headers: Any) -> tuple[int, Any] | None:
        auth = headers.get("Authorization", "")
        if version == "v1":
            import base64

            expected = "Basic " + base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
            return None if auth == expected else (401, {"title": "Unauthorized", "status": 401})
        if not auth.startswith("Bearer "):
            return 401, {"detail": "Not authenticated"}
        try:
            jwt.decode(auth[len("Bearer "):], self._jwt_secret, algorithms=["HS256"])
        except jwt.PyJWTError as error:
            return 401, {"detail": f"Invalid JWT: {type(error).__name__}"}
        return None

    def _check_trigger_body(self, version: str, body: Any) -> tuple[int, Any] | None:
        if not isinstance(body, dict):
            return 422, {"detail": [{"type": "model_attributes_type", "loc": ["body"], "msg": "Input should be a valid dictionary"}]}
        allowed = TRIGGER_KEYS if version == "v2" else V1_TRIGGER_KEYS
        problems: list[dict[str, Any]] = []
        for key in sorted(set(body) - allowed):
            problems.append({"type": "extra_forbidden", "loc": ["body", key], "msg": "Extra inputs are not permitted", "input": body[key]})
        if version == "v2" and "logical_date" not in body:
            problems.append({"type": "missing", "loc": ["body", "logical_date"], "msg": "Field required", "input": body})
        if "dag_run_id" in body and body["dag_run_id"] is not None and not isinstance(body["dag_run_id"], str):
            problems.append({"type": "string_type", "loc": ["body", "dag_run_id"], "msg": "Input should be a valid string"})
        if body.get("conf") is not None and not isinstance(body["conf"], dict):
            problems.append({"type": "dict_type", "loc": ["body", "conf"], "msg": "Input should be a valid dictionary"})
        for key in ("logical_date", "data_interval_start", "data_interval_end", "run_after"):
            if body.get(key) is not None and not _parse_datetime(body[key]):
                problems.append({"type": "datetime_from_date_parsing", "loc": ["body", key], "msg": "Input should be a valid datetime"})
        if (body.get("data_interval_start") is None) != (body.get("data_interval_end") is None):
            problems.append({"type": "value_error", "loc": ["body"], "msg": "Value error, Either both data_interval_start and data_interval_end must be provided or both must be None"})
        if not problems:
            return None
        if version == "v1":  # connexion/marshmallow style
            return 400, {"title": "Bad Request", "status": 400, "detail": str({p["loc"][-1]: [p["msg"]] for p in problems})}
        return 422, {"detail": problems}

    def _trigger(self, version: str, dag_id: str, body: dict[str, Any]) -> tuple[int, Any]:
        if dag_id not in self.dag_ids:
            return 404, {"detail": f"DAG with dag_id: '{dag_id}' not found"}
        run_id = body.get("dag_run_id") or f"manual__{_now()}"
        logical_date = body.get("logical_date") or body.get("execution_date")
        if version == "v1" and logical_date is None:
            logical_date = _now()  # Airflow 2 has no null logical date
        with self._lock:
            if (dag_id, run_id) in self.runs:
                return 409, {"detail": f"DAG Run with run_id: `{run_id}` already exists for dag: `{dag_id}`"}
            if logical_date is not None and any(
                run["logical_date"] == logical_date for (d, _), run in self.runs.items() if d == dag_id
            ):
                return 409, {"detail": f"A DAG Run already exists for logical date {logical_date}"}
            run = {
                "dag_run_id": run_id,
                "dag_id": dag_id,
                "dag_display_name": dag_id,
                "logical_date": logical_date,
                "queued_at": _now(),
                "start_date": None,
                "end_date": None,
                "data_interval_start": body.get("data_interval_start"),
                "data_interval_end": body.get("data_interval_end"),
                "run_after": body.get("run_after") or _now(),
                "last_scheduling_decision": None,
                "run_type": "manual",
                "state": "queued",
                "triggered_by": "rest_api",
                "conf": body.get("conf") or {},
                "note": body.get("note"),
                "dag_versions": [],
                "bundle_version": None,
            }
            self.runs[(dag_id, run_id)] = run
        return 200, run

    def _get_run(self, dag_id: str, run_id: str) -> tuple[int, Any]:
        with self._lock:
            run = self.runs.get((dag_id, run_id))
        if run is None:
            return 404, {"detail": f"The DagRun with dag_id: `{dag_id}` and run_id: `{run_id}` was not found"}
        return 200, run

    def handle(self, method: str, raw_path: str, headers: Any, raw_body: bytes) -> tuple[int, Any]:
        path = urlparse(raw_path).path
        if method == "POST" and path == "/auth/token":
            return self._issue_token(_loads(raw_body))
        match = _RUNS.match(path)
        if match is None:
            return 404, {"detail": "Not Found"}
        version, dag_id, run_id = match.group(1), unquote(match.group(2)), match.group(3)
        if version == "v1" and not self._basic_auth_v1:
            return 404, {"detail": "Not Found"}
        denied = self._authorized(version, headers)
        if denied is not None:
            return denied
        with self._lock:
            injected = self._failures.pop(0) if self._failures else None
        if injected is not None:
            return injected, {"detail": "injected failure"}
        if method == "POST" and run_id is None:
            if not headers.get("Content-Type", "").startswith("application/json"):
                return 422, {"detail": [{"type": "model_attributes_type", "loc": ["body"], "msg": "JSON body expected"}]}
            body = _loads(raw_body)
            problem = self._check_trigger_body(version, body)
            return problem if problem is not None else self._trigger(version, dag_id, body)
        if method == "GET" and run_id is not None:
            return self._get_run(dag_id, unquote(run_id))
        return 405, {"detail": "Method Not Allowed"}

    # -- server ------------------------------------------------------------------------
    def start(self) -> AirflowDouble:
        double = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                status, answer = double.handle(method, self.path, self.headers, raw)
                if urlparse(self.path).path != "/auth/token":
                    with double._lock:
                        double.requests.append({"method": method, "path": self.path, "status": status, "body": _loads(raw)})
                payload = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:  # noqa: N802
                self._serve("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._serve("POST")

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return None

        self._server = BackgroundHTTPServer(Handler, name="AirflowDouble")
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> AirflowDouble:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _loads(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")
