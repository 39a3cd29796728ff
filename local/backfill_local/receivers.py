"""Local Slack and PagerDuty endpoints on 127.0.0.1 that check what they receive against
the documented shapes and record it, for tests, benchmarks and the demo.

    with SlackReceiver(token="xoxb-test") as slack, PagerDutyReceiver(routing_key=KEY) as pd:
        settings: SLACK_API_URL=slack.api_url, webhook URL slack.webhook_url,
                  PAGERDUTY_EVENTS_URL=pd.events_url
        ... slack.messages, pd.events, pd.incidents

Slack: `POST /api/chat.postMessage` (bearer token, JSON body, `channel`, `text` or
`blocks`, Block Kit limits, `thread_ts` must name a message it posted) answers
`{"ok": true, "channel", "ts"}` or `{"ok": false, "error"}` like Slack; `POST
/services/T000/B000/XXXX` is an incoming webhook answering `ok` or 400 `invalid_payload`.
PagerDuty: `POST /v2/enqueue` checks the Events v2 shape and answers 202 or 400.
`fail_next(n, status, retry_after)` makes the next n requests fail (429/5xx), to test
retries and outages. Run `python -m backfill_local.receivers` to serve both and print what
arrives."""

from __future__ import annotations

import argparse
import itertools
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from backfill_local.http_server import BackgroundHTTPServer
from backfill_orchestrator.errors import UserError

WEBHOOK_PATH = "/services/T0000LOCAL/B0000LOCAL/localwebhooksecret"
BLOCK_TYPES = {
    "section",
    "header",
    "context",
    "actions",
    "divider",
    "image",
    "rich_text",
    "input",
    "file",
    "video",
}
TEXT_TYPES = {"plain_text", "mrkdwn"}
PD_ACTIONS = {"trigger", "acknowledge", "resolve"}
PD_SEVERITIES = {"critical", "error", "warning", "info"}
PD_EVENT_KEYS = {
    "routing_key",
    "event_action",
    "dedup_key",
    "payload",
    "images",
    "links",
    "client",
    "client_url",
}
PD_PAYLOAD_KEYS = {
    "summary",
    "source",
    "severity",
    "timestamp",
    "component",
    "group",
    "class",
    "custom_details",
}


class ShapeError(UserError, ValueError):
    """What the real service would refuse, and why."""


# -- Block Kit checks -----------------------------------------------------------------------
def _text_object(obj: Any, where: str, *, max_len: int, plain_only: bool = False) -> None:
    if not isinstance(obj, dict) or obj.get("type") not in TEXT_TYPES:
        raise ShapeError(f"{where}: must be a text object (plain_text or mrkdwn)")
    if plain_only and obj["type"] != "plain_text":
        raise ShapeError(f"{where}: must be plain_text")
    text = obj.get("text")
    if not isinstance(text, str) or not text:
        raise ShapeError(f"{where}.text: must be a non-empty string")
    if len(text) > max_len:
        raise ShapeError(f"{where}.text: longer than {max_len} characters")


def check_blocks(blocks: Any) -> None:
    """Raise ShapeError where Slack would answer `invalid_blocks`."""
    if not isinstance(blocks, list) or not blocks:
        raise ShapeError("blocks: must be a non-empty list")
    if len(blocks) > 50:
        raise ShapeError("blocks: at most 50")
    action_ids: set[str] = set()
    for index, block in enumerate(blocks):
        where = f"blocks[{index}]"
        if not isinstance(block, dict) or block.get("type") not in BLOCK_TYPES:
            raise ShapeError(f"{where}.type: unknown block type")
        kind = block["type"]
        if kind == "header":
            _text_object(block.get("text"), f"{where}.text", max_len=150, plain_only=True)
        elif kind == "section":
            if "text" not in block and "fields" not in block:
                raise ShapeError(f"{where}: a section needs text or fields")
            if "text" in block:
                _text_object(block["text"], f"{where}.text", max_len=3000)
            fields = block.get("fields", [])
            if not isinstance(fields, list) or len(fields) > 10:
                raise ShapeError(f"{where}.fields: a list of at most 10")
            for f_index, field in enumerate(fields):
                _text_object(field, f"{where}.fields[{f_index}]", max_len=2000)
        elif kind == "context":
            elements = block.get("elements")
            if not isinstance(elements, list) or not 1 <= len(elements) <= 10:
                raise ShapeError(f"{where}.elements: 1 to 10 elements")
            for e_index, element in enumerate(elements):
                _text_object(element, f"{where}.elements[{e_index}]", max_len=3000)
        elif kind == "actions":
            elements = block.get("elements")
            if not isinstance(elements, list) or not 1 <= len(elements) <= 25:
                raise ShapeError(f"{where}.elements: 1 to 25 elements")
            for e_index, element in enumerate(elements):
                e_where = f"{where}.elements[{e_index}]"
                if not isinstance(element, dict) or element.get("type") != "button":
                    raise ShapeError(f"{e_where}: only buttons are checked here")
                _text_object(element.get("text"), f"{e_where}.text", max_len=75, plain_only=True)
                url = element.get("url")
                if url is not None and (not isinstance(url, str) or len(url) > 3000 or "://" not in url):
                    raise ShapeError(f"{e_where}.url: must be a URL of at most 3000 characters")
                action_id = element.get("action_id")
                if action_id is not None:
                    if action_id in action_ids:
                        raise ShapeError(f"{e_where}.action_id: duplicate {action_id!r}")
                    action_ids.add(action_id)


# -- servers ----------------------------------------------------------------------------------
class _Server:
    """A ThreadingHTTPServer on 127.0.0.1 (port 0: the OS picks) in a daemon thread."""

    def __init__(self, *, port: int = 0, on_record: Callable[[str, dict[str, Any]], None] | None = None):
        self._port = port
        self._lock = threading.Lock()
        self._failures: list[tuple[int, float | None]] = []
        self._on_record = on_record
        self._server: BackgroundHTTPServer | None = None
        self.requests_seen = 0

    # subclasses: handle(path, headers, body bytes) -> (status, content type, bytes, extra headers)
    def handle(self, path: str, headers: Any, body: bytes) -> tuple[int, str, bytes, dict[str, str]]:
        raise NotImplementedError

    def fail_next(self, count: int, *, status: int = 500, retry_after: float | None = None) -> None:
        """The next `count` requests answer `status` (with Retry-After when given)."""
        with self._lock:
            self._failures.extend([(status, retry_after)] * count)

    @property
    def base_url(self) -> str:
        assert self._server is not None, "not started"
        return self._server.base_url

    def _record(self, kind: str, item: dict[str, Any]) -> None:
        if self._on_record:
            self._on_record(kind, item)

    def start(self) -> _Server:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                with server._lock:
                    server.requests_seen += 1
                    failure = server._failures.pop(0) if server._failures else None
                if failure is not None:
                    status, retry_after = failure
                    extra = {"Retry-After": str(retry_after)} if retry_after is not None else {}
                    self._answer(status, "text/plain", b"injected failure", extra)
                    return
                self._answer(*server.handle(self.path, self.headers, body))

            def do_GET(self) -> None:  # noqa: N802
                self._answer(405, "text/plain", b"method not allowed", {})

            def _answer(self, status: int, content_type: str, payload: bytes, extra: dict[str, str]) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                for key, value in extra.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
                return None

        self._server = BackgroundHTTPServer(Handler, port=self._port, name=type(self).__name__)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self):  # noqa: ANN204
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _json_answer(status: int, body: Any) -> tuple[int, str, bytes, dict[str, str]]:
    return status, "application/json; charset=utf-8", json.dumps(body).encode(), {}


class SlackReceiver(_Server):
    """Slack's Web API `chat.postMessage` and one incoming webhook. `messages` holds every
    accepted message: {"via": "api"|"webhook", "channel", "ts", "thread_ts", "text", "blocks"}."""

    def __init__(self, *, token: str = "xoxb-local-test-token", port: int = 0, on_record=None):
        super().__init__(port=port, on_record=on_record)
        self.token = token
        self.messages: list[dict[str, Any]] = []
        self.rejections: list[dict[str, Any]] = []
        self._ts = itertools.count(1)
        self._channel_ids: dict[str, str] = {}

    @property
    def api_url(self) -> str:
        """SLACK_API_URL for this receiver."""
        return f"{self.base_url}/api"

    @property
    def webhook_url(self) -> str:
        return f"{self.base_url}{WEBHOOK_PATH}"

    def thread(self, ts: str) -> list[dict[str, Any]]:
        """The message `ts` and its replies, in order."""
        return [m for m in self.messages if m["ts"] == ts or m.get("thread_ts") == ts]

    def handle(self, path: str, headers: Any, body: bytes) -> tuple[int, str, bytes, dict[str, str]]:
        if path == "/api/chat.postMessage":
            return self._post_message(headers, body)
        if path == WEBHOOK_PATH:
            return self._webhook(body)
        return 404, "text/plain", b"no_service", {}

    def _reject(self, via: str, error: str, detail: str = "") -> None:
        with self._lock:
            self.rejections.append({"via": via, "error": error, "detail": detail})
        self._record("slack-rejected", {"via": via, "error": error, "detail": detail})

    def _post_message(self, headers: Any, body: bytes) -> tuple[int, str, bytes, dict[str, str]]:
        auth = headers.get("Authorization", "")
        if not auth.startswith("Bearer "):
            self._reject("api", "not_authed")
            return _json_answer(200, {"ok": False, "error": "not_authed"})
        if auth[len("Bearer ") :] != self.token:
            self._reject("api", "invalid_auth")
            return _json_answer(200, {"ok": False, "error": "invalid_auth"})
        if not headers.get("Content-Type", "").startswith("application/json"):
            self._reject("api", "invalid_form_data", "expected application/json")
            return _json_answer(200, {"ok": False, "error": "invalid_form_data"})
        try:
            message = json.loads(body)
        except ValueError:
            self._reject("api", "invalid_json")
            return _json_answer(200, {"ok": False, "error": "invalid_json"})
        channel = message.get("channel")
        if not isinstance(channel, str) or not channel:
            self._reject("api", "channel_not_found", "no channel")
            return _json_answer(200, {"ok": False, "error": "channel_not_found"})
        if not message.get("text") and not message.get("blocks"):
            self._reject("api", "no_text")
            return _json_answer(200, {"ok": False, "error": "no_text"})
        if "blocks" in message:
            try:
                check_blocks(message["blocks"])
            except ShapeError as error:
                self._reject("api", "invalid_blocks", str(error))
                return _json_answer(200, {"ok": False, "error": "invalid_blocks", "errors": [str(error)]})
        with self._lock:
            if channel in self._channel_ids.values():  # already a channel id, as Slack returned it
                channel_id = channel
            else:
                channel_id = self._channel_ids.setdefault(channel, f"C{len(self._channel_ids) + 1:010d}")
            thread_ts = message.get("thread_ts")
            if thread_ts is not None and not any(
                m["ts"] == thread_ts and m["channel"] == channel_id for m in self.messages
            ):
                error = "thread_not_found"
            else:
                error = None
                ts = f"{int(time.time())}.{next(self._ts):06d}"
                record = {
                    "via": "api",
                    "channel": channel_id,
                    "channel_name": next(
                        name for name, cid in self._channel_ids.items() if cid == channel_id
                    ),
                    "ts": ts,
                    "thread_ts": thread_ts,
                    "text": message.get("text"),
                    "blocks": message.get("blocks"),
                }
                self.messages.append(record)
        if error:
            self._reject("api", error, str(thread_ts))
            return _json_answer(200, {"ok": False, "error": error})
        self._record("slack", record)
        return _json_answer(
            200, {"ok": True, "channel": channel_id, "ts": ts, "message": {"text": record["text"]}}
        )

    def _webhook(self, body: bytes) -> tuple[int, str, bytes, dict[str, str]]:
        try:
            message = json.loads(body)
        except ValueError:
            self._reject("webhook", "invalid_payload")
            return 400, "text/plain", b"invalid_payload", {}
        if not isinstance(message, dict) or (not message.get("text") and not message.get("blocks")):
            self._reject("webhook", "no_text")
            return 400, "text/plain", b"no_text", {}
        if "blocks" in message:
            try:
                check_blocks(message["blocks"])
            except ShapeError as error:
                self._reject("webhook", "invalid_blocks", str(error))
                return 400, "text/plain", b"invalid_blocks", {}
        with self._lock:
            record = {
                "via": "webhook",
                "channel": None,
                "ts": f"webhook-{next(self._ts)}",
                "thread_ts": None,
                "text": message.get("text"),
                "blocks": message.get("blocks"),
            }
            self.messages.append(record)
        self._record("slack", record)
        return 200, "text/plain", b"ok", {}


def check_pagerduty_event(event: Any, *, routing_key: str) -> None:
    """Raise ShapeError where the Events API v2 would answer 400."""
    if not isinstance(event, dict):
        raise ShapeError("the event must be a JSON object")
    unknown = set(event) - PD_EVENT_KEYS
    if unknown:
        raise ShapeError(f"unknown keys: {', '.join(sorted(unknown))}")
    if event.get("routing_key") != routing_key:
        raise ShapeError("Invalid routing key")
    action = event.get("event_action")
    if action not in PD_ACTIONS:
        raise ShapeError("'event_action' must be one of trigger, acknowledge, resolve")
    dedup_key = event.get("dedup_key")
    if dedup_key is not None and (not isinstance(dedup_key, str) or not 1 <= len(dedup_key) <= 255):
        raise ShapeError("'dedup_key' must be a string of 1 to 255 characters")
    if action in ("acknowledge", "resolve") and not dedup_key:
        raise ShapeError(f"'dedup_key' is required for {action}")
    if action == "trigger":
        payload = event.get("payload")
        if not isinstance(payload, dict):
            raise ShapeError("'payload' is required for trigger")
        unknown = set(payload) - PD_PAYLOAD_KEYS
        if unknown:
            raise ShapeError(f"unknown payload keys: {', '.join(sorted(unknown))}")
        summary = payload.get("summary")
        if not isinstance(summary, str) or not 1 <= len(summary) <= 1024:
            raise ShapeError("'payload.summary' must be 1 to 1024 characters")
        if not isinstance(payload.get("source"), str) or not payload["source"]:
            raise ShapeError("'payload.source' is required")
        if payload.get("severity") not in PD_SEVERITIES:
            raise ShapeError("'payload.severity' must be critical, error, warning or info")
        if "custom_details" in payload and not isinstance(payload["custom_details"], dict):
            raise ShapeError("'payload.custom_details' must be an object")
    for index, link in enumerate(event.get("links") or []):
        if not isinstance(link, dict) or not isinstance(link.get("href"), str):
            raise ShapeError(f"'links[{index}].href' is required")


class PagerDutyReceiver(_Server):
    """PagerDuty's Events API v2. `events` holds accepted events; `incidents` maps
    dedup_key -> "triggered" | "acknowledged" | "resolved"."""

    def __init__(
        self, *, routing_key: str = "R0UT1NGKEY0F32CHARACTERSLOCAL000", port: int = 0, on_record=None
    ):
        super().__init__(port=port, on_record=on_record)
        self.routing_key = routing_key
        self.events: list[dict[str, Any]] = []
        self.rejections: list[str] = []
        self.incidents: dict[str, str] = {}
        self._keys = itertools.count(1)

    @property
    def events_url(self) -> str:
        """PAGERDUTY_EVENTS_URL for this receiver."""
        return f"{self.base_url}/v2/enqueue"

    def actions(self, dedup_key: str) -> list[str]:
        """The actions of the accepted events for one incident (`trigger`, `resolve`...), in order."""
        return [event["event_action"] for event in self.events if event["dedup_key"] == dedup_key]

    def handle(self, path: str, headers: Any, body: bytes) -> tuple[int, str, bytes, dict[str, str]]:
        if path != "/v2/enqueue":
            return 404, "text/plain", b"not found", {}
        try:
            event = json.loads(body)
            check_pagerduty_event(event, routing_key=self.routing_key)
        except (ValueError, ShapeError) as error:
            message = str(error) if isinstance(error, ShapeError) else "Invalid JSON"
            with self._lock:
                self.rejections.append(message)
            self._record("pagerduty-rejected", {"error": message})
            return _json_answer(
                400, {"status": "invalid event", "message": "Event object is invalid", "errors": [message]}
            )
        with self._lock:
            dedup_key = event.get("dedup_key") or f"generated-{next(self._keys)}"
            action = event["event_action"]
            current = self.incidents.get(dedup_key)
            if action == "trigger":
                if current != "acknowledged":
                    self.incidents[dedup_key] = "triggered"
            elif current is not None and current != "resolved":
                self.incidents[dedup_key] = "acknowledged" if action == "acknowledge" else "resolved"
            stored = {k: v for k, v in event.items() if k != "routing_key"}
            stored["dedup_key"] = dedup_key
            self.events.append(stored)
        self._record("pagerduty", stored)
        return _json_answer(202, {"status": "success", "message": "Event processed", "dedup_key": dedup_key})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m backfill_local.receivers", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--slack-port", type=int, default=0)
    parser.add_argument("--pagerduty-port", type=int, default=0)
    parser.add_argument("--slack-token", default="xoxb-local-test-token")
    parser.add_argument("--routing-key", default="R0UT1NGKEY0F32CHARACTERSLOCAL000")
    args = parser.parse_args(argv)

    def show(kind: str, item: dict[str, Any]) -> None:
        print(json.dumps({"kind": kind, **item}, default=str), flush=True)

    with (
        SlackReceiver(token=args.slack_token, port=args.slack_port, on_record=show) as slack,
        PagerDutyReceiver(
            routing_key=args.routing_key, port=args.pagerduty_port, on_record=show
        ) as pagerduty,
    ):
        print(f"SLACK_API_URL={slack.api_url}", flush=True)
        print(f"SLACK_WEBHOOK_URL={slack.webhook_url}", flush=True)
        print(f"PAGERDUTY_EVENTS_URL={pagerduty.events_url}", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            return 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
