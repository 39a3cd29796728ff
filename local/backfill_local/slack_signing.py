"""Signed Slack interactive requests for tests and `sam local invoke`.

Signs like Slack does (`v0=` + HMAC-SHA256 of `v0:<timestamp>:<body>` with the app's signing
secret), with hmac directly so the function's verifier (slack_sdk) is checked against an
independent implementation.

    python -m backfill_local.slack_signing > events/slack-interaction-approve.json   # the committed example
    python -m backfill_local.slack_signing --now > /tmp/press.json   # signed now: fresh for 5 minutes

TEST_SIGNING_SECRET is a test value, published here on purpose: never use it for a real app."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any
from urllib.parse import urlencode

TEST_SIGNING_SECRET = "test-signing-secret-0123456789abcdef"  # noqa: S105 - a documented test value
EXAMPLE_TIMESTAMP = 1623661200  # 2021-06-14T09:00:00Z
EXAMPLE_RESPONSE_URL = "https://hooks.slack.com/actions/T0TEAM/1234567890/abcdefABCDEF"


def block_actions_body(
    *,
    action: str,
    backfill_id: str,
    user_id: str,
    user_name: str = "someone",
    response_url: str = EXAMPLE_RESPONSE_URL,
    channel_id: str = "C0BACKFILL",
    message_ts: str = "1623661100.000100",
) -> str:
    """The form body Slack posts when a button of ours is pressed."""
    payload = {
        "type": "block_actions",
        "team": {"id": "T0TEAM", "domain": "example"},
        "user": {"id": user_id, "username": user_name, "name": user_name, "team_id": "T0TEAM"},
        "api_app_id": "A0APP",
        "token": "deprecated-verification-token",
        "container": {
            "type": "message",
            "message_ts": message_ts,
            "channel_id": channel_id,
            "is_ephemeral": False,
        },
        "trigger_id": "1234.5678.abcdef",
        "channel": {"id": channel_id, "name": "backfills"},
        "message": {
            "type": "message",
            "ts": message_ts,
            "text": f"Backfill {backfill_id} needs approval",
            "blocks": [
                {
                    "type": "section",
                    "block_id": "summary",
                    "text": {"type": "mrkdwn", "text": f"*{backfill_id}* needs approval"},
                },
                {"type": "actions", "block_id": f"control-{backfill_id}", "elements": []},
            ],
        },
        "response_url": response_url,
        "actions": [
            {
                "type": "button",
                "action_id": f"backfill_{action}",
                "block_id": f"control-{backfill_id}",
                "text": {"type": "plain_text", "text": action.capitalize()},
                "value": backfill_id,
                "action_ts": f"{EXAMPLE_TIMESTAMP}.000200",
            }
        ],
    }
    return urlencode({"payload": json.dumps(payload, separators=(",", ":"))})


def sign(body: str, *, secret: str, timestamp: int) -> str:
    digest = hmac.new(secret.encode(), f"v0:{timestamp}:{body}".encode(), hashlib.sha256).hexdigest()
    return f"v0={digest}"


def http_api_event(
    body: str, *, secret: str = TEST_SIGNING_SECRET, timestamp: int, signature: str | None = None
) -> dict[str, Any]:
    """An API Gateway HTTP API (payload 2.0) event carrying a signed Slack request."""
    return {
        "version": "2.0",
        "routeKey": "POST /slack/interactivity",
        "rawPath": "/slack/interactivity",
        "rawQueryString": "",
        "headers": {
            "content-type": "application/x-www-form-urlencoded",
            "user-agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
            "x-slack-request-timestamp": str(timestamp),
            "x-slack-signature": signature or sign(body, secret=secret, timestamp=timestamp),
        },
        "requestContext": {
            "apiId": "abcdef1234",
            "domainName": "abcdef1234.execute-api.us-east-1.amazonaws.com",
            "http": {
                "method": "POST",
                "path": "/slack/interactivity",
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.10",
                "userAgent": "Slackbot 1.0 (+https://api.slack.com/robots)",
            },
            "requestId": "example-request-id",
            "routeKey": "POST /slack/interactivity",
            "stage": "$default",
            "time": "14/Jun/2021:09:00:00 +0000",
            "timeEpoch": timestamp * 1000,
        },
        "body": body,
        "isBase64Encoded": False,
    }


def example_event(*, timestamp: int = EXAMPLE_TIMESTAMP) -> dict[str, Any]:
    """events/slack-interaction-approve.json: U0BOB approves orders-outage-june-81a4673a."""
    body = block_actions_body(
        action="approve", backfill_id="orders-outage-june-81a4673a", user_id="U0BOB", user_name="bob"
    )
    return http_api_event(body, timestamp=timestamp)


if __name__ == "__main__":
    import sys
    import time

    print(
        json.dumps(
            example_event(timestamp=int(time.time()) if "--now" in sys.argv[1:] else EXAMPLE_TIMESTAMP),
            indent=2,
        )
    )
