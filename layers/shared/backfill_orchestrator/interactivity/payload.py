"""Slack's interactive `block_actions` payload (a form field `payload` holding JSON) and the
HTTP API event that carries it."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from backfill_orchestrator.contracts.control_request import PersonAction, is_person_action
from backfill_orchestrator.interactivity.errors import MalformedInteractionError

ACTION_PREFIX = "backfill_"
MAX_BODY_BYTES = 64 * 1024


@dataclass(frozen=True)
class SlackRequest:
    body: str
    headers: Mapping[str, str]  # lower-case names


@dataclass(frozen=True)
class Interaction:
    """One button press: who pressed which of our buttons for which backfill."""

    action: PersonAction
    backfill_id: str
    user_id: str
    user_name: str | None = None
    response_url: str | None = None
    channel_id: str | None = None
    message_ts: str | None = None
    message_blocks: tuple[dict[str, Any], ...] = ()


def request_from_http_event(event: Mapping[str, Any]) -> SlackRequest:
    """An API Gateway HTTP API (payload 2.0) or function URL event to the raw body and headers."""
    body = event.get("body") or ""
    if event.get("isBase64Encoded"):
        try:
            body = base64.b64decode(body).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            raise MalformedInteractionError("the body is not base64-encoded UTF-8") from None
    if len(body.encode()) > MAX_BODY_BYTES:
        raise MalformedInteractionError(f"the body is over {MAX_BODY_BYTES} bytes")
    headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
    return SlackRequest(body=body, headers=headers)


def parse_interaction(body: str) -> Interaction:
    """The form body of a verified request to an Interaction; MalformedInteractionError otherwise."""
    values = parse_qs(body, keep_blank_values=True).get("payload")
    if not values:
        raise MalformedInteractionError("no 'payload' form field")
    try:
        payload = json.loads(values[0])
    except json.JSONDecodeError as error:
        raise MalformedInteractionError(f"payload is not JSON ({error.msg})") from None
    if not isinstance(payload, dict) or payload.get("type") != "block_actions":
        kind = payload.get("type") if isinstance(payload, dict) else type(payload).__name__
        raise MalformedInteractionError(f"not a block_actions payload ({kind!r})")
    user = payload.get("user") or {}
    actions = payload.get("actions") or []
    if not isinstance(user, dict) or not isinstance(user.get("id"), str) or not user["id"]:
        raise MalformedInteractionError("payload.user.id is missing")
    if not isinstance(actions, list) or len(actions) != 1 or not isinstance(actions[0], dict):
        raise MalformedInteractionError("expected exactly one action in payload.actions")
    action_id = str(actions[0].get("action_id", ""))
    action = action_id.removeprefix(ACTION_PREFIX)
    if not action_id.startswith(ACTION_PREFIX) or not is_person_action(action):
        raise MalformedInteractionError(f"unknown action_id {action_id!r}")
    backfill_id = actions[0].get("value")
    if not isinstance(backfill_id, str) or not backfill_id:
        raise MalformedInteractionError("payload.actions[0].value (the backfill id) is missing")
    message: dict[str, Any] = payload["message"] if isinstance(payload.get("message"), dict) else {}
    channel: dict[str, Any] = payload["channel"] if isinstance(payload.get("channel"), dict) else {}
    blocks: list[Any] = message["blocks"] if isinstance(message.get("blocks"), list) else []
    return Interaction(
        action=action,
        backfill_id=backfill_id,
        user_id=user["id"],
        user_name=user.get("username") or user.get("name"),
        response_url=payload.get("response_url") if isinstance(payload.get("response_url"), str) else None,
        channel_id=channel.get("id"),
        message_ts=message.get("ts"),
        message_blocks=tuple(block for block in blocks if isinstance(block, dict)),
    )
