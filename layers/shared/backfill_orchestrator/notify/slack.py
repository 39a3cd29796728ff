"""Slack transports: the Web API (`chat.postMessage` with a bot token; threads) or an
incoming webhook (no threads: every update is a new message)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import requests
from pydantic import SecretStr

from backfill_orchestrator.errors import ServiceError
from backfill_orchestrator.http import retrying_session


class SlackError(ServiceError, RuntimeError):
    """Slack did not accept the message (after retries); never carries the token or URL."""


@dataclass(frozen=True)
class SlackMessage:
    """`text` is the notification/fallback text; `blocks` the Block Kit layout."""

    text: str
    blocks: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class PostedMessage:
    channel: str
    ts: str


class SlackClient(ABC):
    supports_threads: bool = False

    @abstractmethod
    def post(self, message: SlackMessage, *, channel: str | None, thread_ts: str | None = None) -> PostedMessage | None:
        """Post; the posted message's channel and ts when the transport reports them."""


class SlackWebApi(SlackClient):
    """`POST {api_url}/chat.postMessage` with `Authorization: Bearer <bot token>`."""

    supports_threads = True

    def __init__(self, *, token: SecretStr, api_url: str = "https://slack.com/api", session: requests.Session | None = None):
        self._token = token
        self._url = api_url.rstrip("/") + "/chat.postMessage"
        self._session = session or retrying_session()

    def post(self, message: SlackMessage, *, channel: str | None, thread_ts: str | None = None) -> PostedMessage | None:
        if not channel:
            raise SlackError("no Slack channel: set SLACK_CHANNEL or the config's notify.slack_channel")
        body: dict[str, Any] = {"channel": channel, "text": message.text, "unfurl_links": False}
        if message.blocks:
            body["blocks"] = message.blocks
        if thread_ts:
            body["thread_ts"] = thread_ts
        try:
            response = self._session.post(
                self._url,
                json=body,
                headers={"Authorization": f"Bearer {self._token.get_secret_value()}"},
            )
        except requests.RequestException as error:
            raise SlackError(f"Slack unreachable: {type(error).__name__}") from None
        if response.status_code != 200:
            raise SlackError(f"chat.postMessage answered {response.status_code}")
        try:
            answer = response.json()
        except ValueError:
            raise SlackError("chat.postMessage answered with something that is not JSON") from None
        if not answer.get("ok"):
            raise SlackError(f"chat.postMessage refused: {answer.get('error', 'unknown error')}")
        return PostedMessage(channel=answer.get("channel") or channel, ts=str(answer["ts"]))


class SlackWebhook(SlackClient):
    """An incoming webhook; its channel is fixed when the webhook is created."""

    def __init__(self, *, url: SecretStr, session: requests.Session | None = None):
        self._url = url
        self._session = session or retrying_session()

    def post(self, message: SlackMessage, *, channel: str | None, thread_ts: str | None = None) -> PostedMessage | None:
        body: dict[str, Any] = {"text": message.text}
        if message.blocks:
            body["blocks"] = message.blocks
        try:
            response = self._session.post(self._url.get_secret_value(), json=body)
        except requests.RequestException as error:
            raise SlackError(f"Slack webhook unreachable: {type(error).__name__}") from None
        if response.status_code != 200:
            raise SlackError(f"Slack webhook answered {response.status_code}: {response.text[:200]}")
        return None
