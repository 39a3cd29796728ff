"""Reusable fault injection for tests, on top of moto and the local doubles.

- `FaultProxy`: an HTTP reverse proxy on 127.0.0.1 in front of any double (Marquez, Airflow,
  Slack, PagerDuty) that applies `FaultRule`s: delay, answer a status (with headers, e.g.
  Retry-After), drop the connection without an answer; each for every matching request or
  for the next `times` ones (then it recovers), optionally after letting `skip` through.
  Requests no rule claims are forwarded unchanged. The doubles stay untouched.
- `AwsFaults`: botocore event hooks on a client. `fail`/`throttle` answer chosen calls with an
  AWS error *on the wire* (`before-send`), so botocore's own retry policy runs as in
  production; `crash` raises `SimulatedCrash` (a BaseException: no `except Exception` in the
  code under test catches it) before a chosen call is sent, as if the process were killed
  there (out of memory, timeout). Predicates see the call's API parameters.
"""

from __future__ import annotations

import http.client
import io
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from botocore.awsrequest import AWSResponse

FAULT_HEADER = "x-injected-fault"  # marks an attempt AwsFaults answered (see guard_moto)

# -- HTTP ------------------------------------------------------------------------------------


@dataclass
class FaultRule:
    """What to do to requests matching `method` (None: any) and `path` (a regex searched in
    the path and query; None: any). Exactly what happens, in order: wait `delay` seconds;
    then `drop` the connection, or answer `status` (with `headers`, `body`), or forward."""

    method: str | None = None
    path: str | None = None
    delay: float = 0.0
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    drop: bool = False
    times: int | None = None  # apply to this many matching requests, then recover; None: always
    skip: int = 0  # let this many matching requests through first
    applied: int = 0

    def matches(self, method: str, path: str) -> bool:
        return (self.method is None or self.method == method) and (
            self.path is None or re.search(self.path, path) is not None
        )

    def describe(self) -> str:
        action = "drop" if self.drop else (f"answer {self.status}" if self.status else "forward")
        return f"{action} after {self.delay:g} s" if self.delay else action


class FaultProxy:
    """`with FaultProxy(upstream=double.url) as proxy:` point the client at `proxy.url`.

    `upstream` may be set after start (when the double's URL is known only later).
    `seen` lists every request: method, path, the rule applied (or None), status sent."""

    def __init__(self, *, upstream: str | None = None):
        self.upstream = upstream
        self.rules: list[FaultRule] = []
        self.seen: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def add(self, rule: FaultRule) -> FaultRule:
        with self._lock:
            self.rules.append(rule)
        return rule

    def clear(self) -> None:
        with self._lock:
            self.rules.clear()

    def requests(self, method: str | None = None, path: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            return [
                r
                for r in self.seen
                if (method is None or r["method"] == method) and (path is None or re.search(path, r["path"]))
            ]

    def _claim(self, method: str, path: str) -> FaultRule | None:
        with self._lock:
            for rule in self.rules:
                if not rule.matches(method, path):
                    continue
                if rule.skip > 0:
                    rule.skip -= 1
                    return None
                if rule.times is not None and rule.applied >= rule.times:
                    continue
                rule.applied += 1
                return rule
        return None

    def _forward(
        self, method: str, path: str, headers: Any, body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        assert self.upstream, "FaultProxy has no upstream"
        target = urlsplit(self.upstream)
        connection = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
        try:
            forwarded = {
                k: v for k, v in headers.items() if k.lower() not in ("host", "connection", "content-length")
            }
            connection.request(method, path, body=body or None, headers=forwarded)
            response = connection.getresponse()
            payload = response.read()
            kept = [
                (k, v)
                for k, v in response.getheaders()
                if k.lower() not in ("connection", "transfer-encoding", "content-length")
            ]
            return response.status, kept, payload
        finally:
            connection.close()

    def start(self) -> FaultProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                method = self.command
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                rule = proxy._claim(method, self.path)
                entry = {
                    "method": method,
                    "path": self.path,
                    "rule": rule.describe() if rule else None,
                    "status": None,
                }
                with proxy._lock:
                    proxy.seen.append(entry)
                if rule is not None and rule.delay:
                    time.sleep(rule.delay)
                if rule is not None and rule.drop:
                    self.close_connection = True
                    self.connection.close()
                    return
                if rule is not None and rule.status is not None:
                    payload = (
                        rule.body
                        if isinstance(rule.body, bytes)
                        else json.dumps(rule.body or {"detail": "injected fault"}).encode()
                    )
                    status, headers = (
                        rule.status,
                        [("Content-Type", "application/json"), *rule.headers.items()],
                    )
                else:
                    status, headers, payload = proxy._forward(method, self.path, self.headers, body)
                entry["status"] = status
                try:
                    self.send_response(status)
                    for name, value in headers:
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:  # the client gave up waiting (a delay past its timeout)
                    pass

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve  # noqa: N815

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="FaultProxy", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- AWS (botocore) --------------------------------------------------------------------------


class SimulatedCrash(BaseException):  # noqa: N818 - it is not an error the code may handle
    """The process dies here: nothing after it runs (no except Exception, no finally that
    records anything of ours); only what reached AWS before it stays."""


Predicate = Callable[[dict[str, Any]], bool]
# A status transition is an UpdateItem, or a PutItem of the whole item when its writer holds
# the record as it last wrote it (StatusStore.transition(held=...)): rules and counts name both.
TRANSITION_WRITES = ("UpdateItem", "PutItem")


def _named(operation: str, names: str | tuple[str, ...]) -> bool:
    return operation in names if isinstance(names, tuple) else operation == names


@dataclass
class _AwsRule:
    operation: str | tuple[str, ...]
    when: Predicate | None
    times: int | None  # attempts (sends) to fault, then recover; None: every matching one
    status: int = 0
    code: str = ""
    message: str = ""
    crash: bool = False
    applied: int = 0

    def claims(self, operation: str, params: dict[str, Any]) -> bool:
        if not _named(operation, self.operation) or (self.times is not None and self.applied >= self.times):
            return False
        return self.when is None or bool(self.when(params))


class _Raw(io.BytesIO):
    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.getvalue()


class AwsFaults:
    """Faults on boto3 clients. `calls` lists (operation, params, fault) for every call seen
    on a hooked client; `attempts(op)` counts what was sent (retries included)."""

    def __init__(self) -> None:
        self._rules: list[_AwsRule] = []
        self._hooked: list[tuple[Any, str, str]] = []
        # Per client and thread: the trigger sends some calls side by side on one client.
        self._params: dict[tuple[int, int], tuple[str, dict[str, Any]]] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.sent: list[tuple[str, str | None]] = []  # (operation, fault code or None) per attempt

    # -- rules ---------------------------------------------------------------------------
    def fail(
        self,
        client: Any,
        operation: str | tuple[str, ...],
        *,
        code: str,
        message: str = "injected",
        status: int = 400,
        when: Predicate | None = None,
        times: int | None = None,
    ) -> None:
        """Answer matching calls with an AWS error (`code`), on the wire: botocore retries it if
        its policy says so. `times` counts attempts, so `times=2` then recovers."""
        self._hook(client)
        self._rules.append(_AwsRule(operation, when, times, status=status, code=code, message=message))

    def throttle(
        self,
        client: Any,
        operation: str | tuple[str, ...],
        *,
        when: Predicate | None = None,
        times: int | None = None,
    ) -> None:
        """The service's throttling error for matching calls (DynamoDB's
        ProvisionedThroughputExceededException, S3's SlowDown)."""
        service = client.meta.service_model.service_name
        if service == "s3":
            self.fail(
                client,
                operation,
                code="SlowDown",
                message="Please reduce your request rate.",
                status=503,
                when=when,
                times=times,
            )
        else:
            self.fail(
                client,
                operation,
                code="ProvisionedThroughputExceededException",
                when=when,
                times=times,
                message="The level of configured provisioned throughput for the table was exceeded.",
            )

    def crash(
        self,
        client: Any,
        operation: str | tuple[str, ...],
        *,
        when: Predicate | None = None,
        times: int | None = 1,
    ) -> None:
        """The process dies just before a matching call is sent (it never reaches AWS)."""
        self._hook(client)
        self._rules.append(_AwsRule(operation, when, times, crash=True))

    def clear(self) -> None:
        self._rules.clear()

    def attempts(self, operation: str | tuple[str, ...], *, faulted: bool | None = None) -> int:
        return sum(
            1
            for op, code in self.sent
            if _named(op, operation) and (faulted is None or (code is not None) == faulted)
        )

    def remove(self) -> None:
        for client, event, unique_id in self._hooked:
            client.meta.events.unregister(event, unique_id=unique_id)
        self._hooked.clear()

    # -- hooks ---------------------------------------------------------------------------
    def _hook(self, client: Any) -> None:
        if any(hooked is client for hooked, _, _ in self._hooked):
            return
        prefix = client.meta.service_model.service_id.hyphenize()
        unique = uuid.uuid4().hex
        client.meta.events.register_first(
            f"before-parameter-build.{prefix}", self._before_call(client), unique_id=f"{unique}-params"
        )
        client.meta.events.register_first(
            f"before-send.{prefix}", self._before_send(client), unique_id=f"{unique}-send"
        )
        self._hooked += [
            (client, f"before-parameter-build.{prefix}", f"{unique}-params"),
            (client, f"before-send.{prefix}", f"{unique}-send"),
        ]

    def _before_call(self, client: Any) -> Callable[..., None]:
        def hook(params: dict[str, Any], model: Any, **_: Any) -> None:
            self._params[(id(client), threading.get_ident())] = (model.name, params)
            self.calls.append((model.name, params))
            for rule in self._rules:
                if rule.crash and rule.claims(model.name, params):
                    rule.applied += 1
                    raise SimulatedCrash(f"killed before {model.name}")

        return hook

    def _before_send(self, client: Any) -> Callable[..., AWSResponse | None]:
        protocol = client.meta.service_model.protocol

        def hook(request: Any, **_: Any) -> AWSResponse | None:
            operation, params = self._params.get((id(client), threading.get_ident()), ("", {}))
            for rule in self._rules:
                if not rule.crash and rule.claims(operation, params):
                    rule.applied += 1
                    self.sent.append((operation, rule.code))
                    request.headers[FAULT_HEADER] = rule.code
                    return _error_response(request.url, protocol, rule.status, rule.code, rule.message)
            self.sent.append((operation, None))
            return None  # moto (or AWS) answers

        return hook


def guard_moto(monkeypatch: Any) -> None:
    """botocore calls *every* before-send handler and keeps the first answer, so moto would
    still carry out a call we answered with an error (ours runs first: it is registered for
    the more specific event). Make moto pass on attempts we marked."""
    from moto.core.botocore_stubber import BotocoreStubber

    original = BotocoreStubber.__call__

    def guarded(self: Any, event_name: str, request: Any, **kwargs: Any) -> Any:
        if request.headers.get(FAULT_HEADER):
            return None
        return original(self, event_name, request, **kwargs)

    monkeypatch.setattr(BotocoreStubber, "__call__", guarded)


def _error_response(url: str, protocol: str, status: int, code: str, message: str) -> AWSResponse:
    headers = {"x-amzn-RequestId": uuid.uuid4().hex, "x-amz-request-id": uuid.uuid4().hex}
    if protocol in ("json", "smithy-rpc-v2-cbor"):
        headers["Content-Type"] = "application/x-amz-json-1.0"
        body = json.dumps({"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": message}).encode()
    else:
        headers["Content-Type"] = "application/xml"
        body = f"<Error><Code>{code}</Code><Message>{message}</Message><RequestId>fault</RequestId></Error>".encode()
    return AWSResponse(url, status, headers, _Raw(body))


def update_target(params: dict[str, Any]) -> str | None:
    """The state a StatusStore transition moves to: an UpdateItem's `:target`, or the state
    of a whole-item PutItem conditioned on the record's revision; None for other writes."""
    values = params.get("ExpressionAttributeValues", {})
    value = values.get(":target") or (params.get("Item", {}).get("state") if ":revision" in values else None)
    return value.get("S") if isinstance(value, dict) else None


def to_state(*states: str) -> Predicate:
    """A predicate: transitions (TRANSITION_WRITES) that move a status record to one of `states`."""
    return lambda params: update_target(params) in states
