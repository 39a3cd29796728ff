"""A strict double of Airflow 3's REST API (`/api/v2`) on 127.0.0.1, for fast tests.

It answers as Airflow 3.3's `core_api` does (routes/public/dag_run.py), checked against
Airflow's own pydantic models by tests/faults/test_doubles_match_services.py:
- `POST /auth/token` {"username", "password"} -> 201 {"access_token": <HS256 JWT>}; every
  `/api/v2` call needs `Authorization: Bearer <JWT>`, expired or foreign tokens get 401
  (`expire_tokens()` makes every issued token stale, as a jwt_expiration_time would);
- the trigger body is `TriggerDAGRunPostBody` (mirrored in `TriggerBody`): unknown keys, a
  missing `logical_date` key (null allowed), naive dates, half a data interval -> 422 with
  FastAPI's `{"detail": [{"type", "loc": ["body", ...], "msg", "input", "ctx"?}]}`;
  `partition_key`, `note`, `run_after` are accepted; a `partition_key` for a DAG that is not
  partitioned (`partitioned_dag_ids`), or an empty or too long one -> 400, as `validate_context`;
- 404 for an unknown DAG; 409 (Airflow's unique-constraint detail) for an existing run id or
  an existing non-null logical date;
- every run answer is a complete `DAGRunResponse`;
- `GET /api/v2/dags/{dag_id}/dagRuns/{run_id}` -> the run or 404;
- `PATCH /api/v2/dags/{dag_id}/dagRuns/{run_id}` with `DAGRunPatchBody` (`state` queued |
  success | failed, `note`) -> the patched run (how a backfill is cancelled);
- `GET /api/v2/dags/{dag_id}/dagRuns?logical_date_gte=&logical_date_lte=&state=&limit=&offset=`
  -> `{"dag_runs": [...], "total_entries": n}` (`DAGRunCollectionResponse`);
  `set_state()` moves a run on as the scheduler would.
With `basic_auth_v1=True` it also serves Airflow 2's `/api/v1` with basic auth (unknown
keys -> 400, as connexion answers; runs in Airflow 2's `DAGRun` shape). `fail_next(n, status)`
injects failures.

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
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from typing import Any, Literal
from urllib.parse import parse_qs, unquote, urlparse

import jwt
from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from backfill_local.http_server import BackgroundHTTPServer

V1_TRIGGER_KEYS = {
    "dag_run_id",
    "logical_date",
    "execution_date",
    "data_interval_start",
    "data_interval_end",
    "conf",
    "note",
}
_RUNS = re.compile(r"^/api/(v[12])/dags/([^/]+)/dagRuns(?:/([^/]+))?$")
ID_LEN = 250  # airflow.models.base.ID_LEN: the longest partition_key
BUNDLE_NAME = "dags-folder"
_DATETIME = TypeAdapter(datetime)


class TriggerBody(BaseModel):
    """Airflow 3.3's `TriggerDAGRunPostBody` (a StrictBaseModel), field for field. Mirrored, not
    imported, so the double runs without Airflow installed; the faults test compares the two."""

    model_config = ConfigDict(from_attributes=True, populate_by_name=True, extra="forbid")  # StrictBaseModel

    dag_run_id: str | None = None
    data_interval_start: AwareDatetime | None = None
    data_interval_end: AwareDatetime | None = None
    logical_date: AwareDatetime | None
    run_after: datetime | None = Field(default_factory=lambda: datetime.now(UTC))
    conf: dict | None = Field(default_factory=dict)
    note: str | None = None
    partition_key: str | None = None

    @model_validator(mode="after")
    def check_data_intervals(self) -> TriggerBody:
        if (self.data_interval_start is None) != (self.data_interval_end is None):
            raise ValueError(
                "Either both data_interval_start and data_interval_end must be provided or both must be None"
            )
        return self


class PatchBody(BaseModel):
    """Airflow 3.3.2's `DAGRunPatchBody` (a StrictBaseModel): `state` is one of the mutable
    states, `note` at most 1000 characters; nothing else."""

    model_config = ConfigDict(extra="forbid")

    state: Literal["queued", "success", "failed"] | None = None
    note: str | None = Field(None, max_length=1000)


def _now() -> str:
    return _iso(datetime.now(UTC))


def _iso(moment: datetime | None) -> str | None:
    """A time as Airflow's responses write it: UTC (naive means UTC), pydantic's JSON form."""
    if moment is None:
        return None
    moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return _DATETIME.dump_python(moment, mode="json")


def _validation_detail(error: ValidationError) -> list[dict[str, Any]]:
    """FastAPI's RequestValidationError detail: loc under "body", no url, and a ctx exception
    rendered by jsonable_encoder (an exception has no fields: {})."""
    detail = []
    for problem in error.errors(include_url=False):
        item = {**problem, "loc": ["body", *problem["loc"]]}
        if "ctx" in item:
            item["ctx"] = {
                key: {} if isinstance(value, Exception) else value for key, value in item["ctx"].items()
            }
        detail.append(item)
    return detail


def _parse_aware(value: Any) -> datetime | None:
    """An ISO time from an Airflow 2 body (already checked), naive read as UTC."""
    if value is None:
        return None
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


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
        partitioned_dag_ids: set[str] | frozenset[str] = frozenset(),
    ):
        self.dag_ids = set(dag_ids)
        self.partitioned_dag_ids = set(partitioned_dag_ids)
        self._started_at = _now()
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

    def set_state(self, dag_id: str, run_id: str, state: str) -> None:
        """Move a run on as the scheduler would (tests: queued -> running -> success)."""
        with self._lock:
            run = self.runs[(dag_id, run_id)]
            run["state"] = state
            if state == "running" and run["start_date"] is None:
                run["start_date"] = _now()
            if state in ("success", "failed"):
                run["end_date"] = _now()

    def trigger_posts(self, dag_id: str | None = None) -> list[dict[str, Any]]:
        return [
            r
            for r in self.requests
            if r["method"] == "POST" and (dag_id is None or f"/dags/{dag_id}/" in r["path"] + "/")
        ]

    # -- request handling --------------------------------------------------------------
    def _issue_token(self, body: Any) -> tuple[int, Any]:
        if (
            not isinstance(body, dict)
            or body.get("username") != self.username
            or body.get("password") != self.password
        ):
            return 401, {"detail": "Invalid credentials"}
        with self._lock:
            self.tokens_issued += 1
            now = int(time.time())
            claims = {
                "sub": self.username,
                "iat": now,
                "nbf": now,
                "exp": now + self._expiration,
                "jti": secrets.token_hex(8),
            }
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
            jwt.decode(auth[len("Bearer ") :], self._jwt_secret, algorithms=["HS256"])
        except jwt.PyJWTError as error:
            return 401, {"detail": f"Invalid JWT: {type(error).__name__}"}
        return None

    def _check_v1_trigger_body(self, body: Any) -> tuple[int, Any] | None:
        """Airflow 2's connexion/marshmallow checks, answered 400."""
        if not isinstance(body, dict):
            return 400, {"title": "Bad Request", "status": 400, "detail": "Invalid input type."}
        problems: list[dict[str, Any]] = []
        for key in sorted(set(body) - V1_TRIGGER_KEYS):
            problems.append({"type": "extra_forbidden", "loc": ["body", key], "msg": "Unknown field."})
        if (
            "dag_run_id" in body
            and body["dag_run_id"] is not None
            and not isinstance(body["dag_run_id"], str)
        ):
            problems.append(
                {
                    "type": "string_type",
                    "loc": ["body", "dag_run_id"],
                    "msg": "Input should be a valid string",
                }
            )
        if body.get("conf") is not None and not isinstance(body["conf"], dict):
            problems.append(
                {"type": "dict_type", "loc": ["body", "conf"], "msg": "Input should be a valid dictionary"}
            )
        for key in ("logical_date", "execution_date", "data_interval_start", "data_interval_end"):
            if body.get(key) is not None and not _parse_datetime(body[key]):
                problems.append(
                    {
                        "type": "datetime_from_date_parsing",
                        "loc": ["body", key],
                        "msg": "Input should be a valid datetime",
                    }
                )
        if (body.get("data_interval_start") is None) != (body.get("data_interval_end") is None):
            problems.append(
                {
                    "type": "value_error",
                    "loc": ["body"],
                    "msg": "Value error, Either both data_interval_start and data_interval_end must be provided or both must be None",
                }
            )
        if not problems:
            return None
        return 400, {
            "title": "Bad Request",
            "status": 400,
            "detail": str({p["loc"][-1]: [p["msg"]] for p in problems}),
        }

    def _partition_problem(self, dag_id: str, partition_key: str | None) -> str | None:
        """`SerializedDAG.validate_partition_key`: its ValueErrors answer 400."""
        if partition_key is None:
            return None
        if dag_id not in self.partitioned_dag_ids:
            return f"Dag '{dag_id}' is not a partitioned Dag and does not accept a partition_key."
        if not partition_key.strip():
            return "partition_key must not be empty or whitespace-only."
        if len(partition_key) > ID_LEN:
            return f"partition_key must be at most {ID_LEN} characters; got {len(partition_key)}."
        return None

    def _dag_version(self, dag_id: str) -> dict[str, Any]:
        """The DagVersionResponse of the one version each DAG of the double has."""
        return {
            "id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"airflow-double/{dag_id}/1")),
            "version_number": 1,
            "dag_id": dag_id,
            "bundle_name": BUNDLE_NAME,
            "bundle_version": None,
            "created_at": self._started_at,
            "dag_display_name": dag_id,
            "bundle_url": None,
        }

    def _trigger(self, dag_id: str, body: TriggerBody, *, version: str = "v2") -> tuple[int, Any]:
        """`trigger_dag_run` of a DAG with `schedule=None`: a logical date without an interval
        gets the exact interval [logical_date, logical_date], as NullTimetable infers it."""
        if dag_id not in self.dag_ids:
            if version == "v1":
                return 404, {
                    "title": "DAG not found",
                    "status": 404,
                    "detail": f"DAG with dag_id: '{dag_id}' not found",
                }
            return 404, {"detail": f"Dag with dag_id: '{dag_id}' not found"}
        problem = self._partition_problem(dag_id, body.partition_key)
        if problem is not None:
            return 400, {"detail": problem}
        run = self._new_run(dag_id, body)
        with self._lock:
            taken = (dag_id, run["dag_run_id"]) in self.runs or (
                run["logical_date"] is not None
                and any(
                    r["logical_date"] == run["logical_date"] for (d, _), r in self.runs.items() if d == dag_id
                )
            )
            if not taken:
                self.runs[(dag_id, run["dag_run_id"])] = run
        if taken and version == "v1":
            return 409, {
                "title": "Conflict",
                "status": 409,
                "detail": f"DAGRun with DAG ID: '{dag_id}' and DAGRun ID: '{run['dag_run_id']}' already exists",
            }
        if taken:  # the unique constraints (dag_id, run_id), (dag_id, logical_date)
            return 409, {
                "detail": {
                    "reason": "Unique constraint violation",
                    "statement": "hidden",
                    "orig_error": "hidden",
                    "message": "Serious error when handling your request. Check logs for more details - "
                    f"you will find it in api server when you look for ID {secrets.token_hex(4)}",
                }
            }
        return 200, (_v1_view(run) if version == "v1" else run)

    def _new_run(self, dag_id: str, body: TriggerBody) -> dict[str, Any]:
        """The DAGRunResponse of a new queued manual run."""
        # coerce_datetime: naive means UTC, an aware time keeps its offset (in the default run id)
        run_after = body.run_after or datetime.now(UTC)
        run_after = run_after.replace(tzinfo=UTC) if run_after.tzinfo is None else run_after
        interval_start, interval_end = body.data_interval_start, body.data_interval_end
        if body.logical_date is None:
            interval_start = interval_end = None
        elif interval_start is None:
            interval_start = interval_end = body.logical_date
        return {
            "dag_run_id": body.dag_run_id or f"manual__{run_after.isoformat()}",
            "dag_id": dag_id,
            "logical_date": _iso(body.logical_date),
            "queued_at": _now(),
            "start_date": None,
            "end_date": None,
            "duration": None,
            "data_interval_start": _iso(interval_start),
            "data_interval_end": _iso(interval_end),
            "run_after": _iso(run_after),
            "last_scheduling_decision": None,
            "run_type": "manual",
            "state": "queued",
            "triggered_by": "rest_api",
            "triggering_user_name": self.username,
            "conf": body.conf or {},
            "note": body.note or None,  # Airflow only stores a non-empty note
            "dag_versions": [self._dag_version(dag_id)],
            "bundle_version": None,
            "dag_display_name": dag_id,
            "partition_key": body.partition_key,
            "partition_date": None,  # only timetables with temporal partition keys decode one
        }

    def _trigger_v1(self, dag_id: str, body: dict[str, Any]) -> tuple[int, Any]:
        """Airflow 2: no null logical date (now when absent), which also names the run."""
        logical = _parse_aware(body.get("logical_date") or body.get("execution_date")) or datetime.now(UTC)
        interval = [_parse_aware(body.get(key)) for key in ("data_interval_start", "data_interval_end")]
        trigger = TriggerBody.model_construct(
            dag_run_id=body.get("dag_run_id"),
            logical_date=logical,
            run_after=logical,
            data_interval_start=interval[0],
            data_interval_end=interval[1],
            conf=body.get("conf") or {},
            note=body.get("note"),
            partition_key=None,
        )
        return self._trigger(dag_id, trigger, version="v1")

    def _get_run(self, version: str, dag_id: str, run_id: str) -> tuple[int, Any]:
        with self._lock:
            run = self.runs.get((dag_id, run_id))
        if run is None:
            if version == "v1":
                return 404, {
                    "title": "DAGRun not found",
                    "status": 404,
                    "detail": f"DAGRun with DAG ID: '{dag_id}' and DagRun ID: '{run_id}' not found",
                }
            return 404, {"detail": f"The DagRun with dag_id: `{dag_id}` and run_id: `{run_id}` was not found"}
        return 200, (_v1_view(run) if version == "v1" else run)

    def _patch_run(self, dag_id: str, run_id: str, raw_body: bytes) -> tuple[int, Any]:
        """`PATCH .../dagRuns/{run_id}`: a new state (and note); the run's answer."""
        try:
            body = PatchBody.model_validate_json(raw_body or b"{}")
        except ValidationError as error:
            return 422, {"detail": _validation_detail(error)}
        with self._lock:
            run = self.runs.get((dag_id, run_id))
            if run is None:
                return 404, {
                    "detail": f"The DagRun with dag_id: `{dag_id}` and run_id: `{run_id}` was not found"
                }
            if body.note is not None:
                run["note"] = body.note or None
            if body.state is not None:
                run["state"] = body.state
                run["end_date"] = _now() if body.state != "queued" else None
            return 200, dict(run)

    def _list_runs(self, dag_id: str, query: dict[str, list[str]]) -> tuple[int, Any]:
        """`GET .../dagRuns`: logical_date_gte/lte, state (repeated), limit, offset."""
        if dag_id not in self.dag_ids:
            return 404, {"detail": f"The Dag with ID: `{dag_id}` was not found"}
        bounds = {
            key: _parse_aware(query[key][0])
            for key in ("logical_date_gte", "logical_date_lte")
            if key in query
        }
        states = set(query.get("state", []))
        limit = int(query.get("limit", ["50"])[0])
        offset = int(query.get("offset", ["0"])[0])
        with self._lock:
            runs = [dict(run) for (d, _), run in self.runs.items() if d == dag_id]
        chosen = []
        for run in runs:
            logical = _parse_aware(run["logical_date"])
            if "logical_date_gte" in bounds and (logical is None or logical < bounds["logical_date_gte"]):
                continue
            if "logical_date_lte" in bounds and (logical is None or logical > bounds["logical_date_lte"]):
                continue
            if states and run["state"] not in states:
                continue
            chosen.append(run)
        chosen.sort(key=lambda run: run["dag_run_id"])
        return 200, {"dag_runs": chosen[offset : offset + limit], "total_entries": len(chosen)}

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
        posting_v2 = method == "POST" and run_id is None and version == "v2"
        body = _read_v2_body(headers, raw_body) if posting_v2 else None
        if isinstance(body, _Refusal) and body.before_auth:  # FastAPI decodes JSON before dependencies run
            return body.status, body.answer
        denied = self._authorized(version, headers)
        if denied is not None:
            return denied
        with self._lock:
            injected = self._failures.pop(0) if self._failures else None
        if injected is not None:
            return injected, {"detail": "injected failure"}
        if method == "POST" and run_id is None:
            if version == "v1":
                v1_body = _loads(raw_body)
                problem = self._check_v1_trigger_body(v1_body)
                return problem if problem is not None else self._trigger_v1(dag_id, v1_body)
            if isinstance(body, _Refusal):
                return body.status, body.answer
            return self._trigger(dag_id, body)
        if method == "GET" and run_id is not None:
            return self._get_run(version, dag_id, unquote(run_id))
        if method == "GET" and run_id is None and version == "v2":
            return self._list_runs(dag_id, parse_qs(urlparse(raw_path).query))
        if method == "PATCH" and run_id is not None and version == "v2":
            return self._patch_run(dag_id, unquote(run_id), raw_body)
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
                        double.requests.append(
                            {"method": method, "path": self.path, "status": status, "body": _loads(raw)}
                        )
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

            def do_PATCH(self) -> None:  # noqa: N802
                self._serve("PATCH")

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


@dataclass(frozen=True)
class _Refusal:
    status: int
    answer: Any
    before_auth: bool = False


def _read_v2_body(headers: Any, raw_body: bytes) -> TriggerBody | _Refusal:
    """FastAPI's body handling: JSON when the content type is absent or JSON (a decode error
    answers 422 before any dependency, authentication included), else the raw text, which the
    model refuses; an empty body is a missing one."""
    content_type = headers.get("Content-Type") or ""
    data: Any = None
    if raw_body:
        subtype = content_type.split(";")[0].strip().rpartition("/")[2]
        if not content_type or subtype == "json" or subtype.endswith("+json"):
            try:
                data = json.loads(raw_body)
            except json.JSONDecodeError as error:
                problem = {
                    "type": "json_invalid",
                    "loc": ["body", error.pos],
                    "msg": "JSON decode error",
                    "input": {},
                    "ctx": {"error": error.msg},
                }
                return _Refusal(422, {"detail": [problem]}, before_auth=True)
        else:
            data = raw_body.decode("utf-8", "replace")
    if data is None:
        return _Refusal(
            422, {"detail": [{"type": "missing", "loc": ["body"], "msg": "Field required", "input": None}]}
        )
    try:
        return TriggerBody.model_validate(data)
    except ValidationError as error:
        return _Refusal(422, {"detail": _validation_detail(error)})


def _v1_view(run: dict[str, Any]) -> dict[str, Any]:
    """A run in Airflow 2's `DAGRun` schema (/api/v1)."""
    keys = (
        "dag_run_id",
        "dag_id",
        "logical_date",
        "start_date",
        "end_date",
        "data_interval_start",
        "data_interval_end",
        "last_scheduling_decision",
        "run_type",
        "state",
        "conf",
        "note",
    )
    view = {key: run.get(key) for key in keys}
    view.update(execution_date=run.get("logical_date"), external_trigger=True)
    return view


def _loads(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")
