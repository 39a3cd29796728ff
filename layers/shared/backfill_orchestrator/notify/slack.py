"""Slack transports on slack_sdk: the Web API (`chat.postMessage` with a bot token; threads)
or an incoming webhook (no threads: every update is a new message).

Retries are slack_sdk's handlers, bounded: connection errors, 500/503, and 429 when Slack's
`Retry-After` is short enough to wait for inside a Lambda invocation. Every failure leaves
as `SlackError` whose message we write ourselves, so neither the token nor the webhook URL
(itself a secret) can reach a log line."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from pydantic import SecretStr
from slack_sdk import WebClient, WebhookClient
from slack_sdk.errors import SlackApiError, SlackObjectFormationError
from slack_sdk.http_retry import RetryHandler
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)
from slack_sdk.http_retry.builtin_interval_calculators import BackoffRetryIntervalCalculator
from slack_sdk.models.blocks import Block

from backfill_orchestrator.deadline import current_deadline
from backfill_orchestrator.errors import ServiceError
from backfill_orchestrator.redaction import RedactingFilter, register_secret

log = logging.getLogger(__name__)
DEFAULT_TIMEOUT_SECONDS = 10
MAX_RETRY_AFTER_SECONDS = 30  # a longer rate-limit wait is a failure, not a stalled Lambda


class SlackError(ServiceError, RuntimeError):
    """Slack did not accept the message (after retries); never carries the token or URL."""


@dataclass(frozen=True)
class SlackMessage:
    """`text` is the notification/fallback text; `blocks` the Block Kit layout (slack_sdk
    model objects, which check Block Kit's limits when serialised)."""

    text: str
    blocks: tuple[Block, ...] = field(default_factory=tuple)

    def block_dicts(self) -> list[dict[str, Any]]:
        """The blocks as Slack receives them; SlackObjectFormationError if one breaks a limit."""
        return [block.to_dict() for block in self.blocks]

    def sendable_blocks(self) -> list[dict[str, Any]] | None:
        """The blocks, or None (text only) when one breaks a limit: Slack would refuse the
        whole message, and the text still tells people what happened."""
        try:
            return self.block_dicts() or None
        except SlackObjectFormationError as error:
            log.warning("Slack blocks break a Block Kit limit (%s); sending the text only", error)
            return None


@dataclass(frozen=True)
class PostedMessage:
    channel: str
    ts: str


class _BoundedRateLimitRetryHandler(RateLimitErrorRetryHandler):
    """slack_sdk's 429 handler, refusing to wait longer than `max_wait` seconds."""

    def __init__(self, *, max_retry_count: int, max_wait: float):
        super().__init__(max_retry_count=max_retry_count)
        self._max_wait = max_wait

    def _can_retry(self, *, state, request, response=None, error=None) -> bool:  # noqa: ANN001 - slack_sdk's signature
        if not super()._can_retry(state=state, request=request, response=response, error=error):
            return False
        values = {key.lower(): value for key, value in response.headers.items()}.get("retry-after") or ["1"]
        try:  # whole seconds, as Slack sends them and as the library's own wait reads them
            return int(values[0]) <= self._max_wait
        except ValueError:
            return False


def retry_handlers(
    *, max_retries: int = 3, backoff_factor: float = 0.5, max_retry_after: float = MAX_RETRY_AFTER_SECONDS
) -> list[RetryHandler]:
    backoff = BackoffRetryIntervalCalculator(backoff_factor=backoff_factor)
    return [
        ConnectionErrorRetryHandler(max_retry_count=max_retries, interval_calculator=backoff),
        ServerErrorRetryHandler(max_retry_count=max_retries, interval_calculator=backoff),
        _BoundedRateLimitRetryHandler(max_retry_count=max_retries, max_wait=max_retry_after),
    ]


class _DropRequestDumps(logging.Filter):
    """slack_sdk logs whole requests (bodies, headers) at DEBUG: dropped here."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.DEBUG


def _sdk_logger(secret: SecretStr) -> logging.Logger:
    """The logger slack_sdk gets. It logs the request URL when it retries, and a webhook's URL
    is the secret: registered with the shared redaction, which blanks it out of every line."""
    sdk_logger = logging.getLogger("backfill_orchestrator.notify.slack_sdk")
    if not any(isinstance(f, _DropRequestDumps) for f in sdk_logger.filters):
        sdk_logger.addFilter(_DropRequestDumps())
        sdk_logger.addFilter(RedactingFilter())
    register_secret(secret.get_secret_value())
    return sdk_logger


class SlackClient(ABC):
    supports_threads: bool = False

    @abstractmethod
    def post(
        self, message: SlackMessage, *, channel: str | None, thread_ts: str | None = None
    ) -> PostedMessage | None:
        """Post; the posted message's channel and ts when the transport reports them."""


class SlackWebApi(SlackClient):
    """`POST {api_url}/chat.postMessage` with `Authorization: Bearer <bot token>` (JSON body)."""

    supports_threads = True

    def __init__(
        self,
        *,
        token: SecretStr,
        api_url: str = "https://slack.com/api",
        handlers: list[RetryHandler] | None = None,
        timeout: int = DEFAULT_TIMEOUT_SECONDS,
    ):
        self._timeout = timeout
        self._handlers = retry_handlers() if handlers is None else handlers
        self._client = WebClient(
            token=token.get_secret_value(),
            base_url=api_url.rstrip("/") + "/",
            timeout=timeout,
            retry_handlers=self._handlers,
            logger=_sdk_logger(token),
        )

    def post(
        self, message: SlackMessage, *, channel: str | None, thread_ts: str | None = None
    ) -> PostedMessage | None:
        if not channel:
            raise SlackError("no Slack channel: set SLACK_CHANNEL or the config's notify.slack_channel")
        self._fit_deadline()
        try:
            answer = self._client.chat_postMessage(
                channel=channel,
                text=message.text,
                blocks=message.sendable_blocks(),
                thread_ts=thread_ts,
                unfurl_links=False,
            )
        except SlackApiError as error:
            reason = error.response.get("error") if isinstance(error.response.data, dict) else None
            raise SlackError(
                f"chat.postMessage refused: {reason or 'unknown error'} (HTTP {error.response.status_code})"
            ) from None
        except Exception as error:  # urllib's errors may quote the request; say only what kind
            raise SlackError(f"Slack unreachable: {type(error).__name__}") from None
        ts = answer.get("ts")
        if not isinstance(ts, str) or not ts:
            raise SlackError(
                "chat.postMessage answered ok without a message ts: the thread cannot be continued"
            )
        return PostedMessage(channel=answer.get("channel") or channel, ts=ts)

    def _fit_deadline(self) -> None:
        """Within a deadline (`backfill_orchestrator.deadline`: the trigger's message goes out
        before its TRIGGERED write), the request's timeout is cut to the time left and retries
        are left out when a second attempt could not end in it; none left: not sent."""
        deadline = current_deadline()
        if deadline is None:
            self._client.timeout, self._client.retry_handlers = self._timeout, self._handlers
            return
        left = deadline.remaining()
        if left < 1.0:
            raise SlackError("not sent: no time left before the invocation's deadline")
        self._client.timeout = max(1, min(self._timeout, int(left)))
        self._client.retry_handlers = self._handlers if left >= 2 * self._timeout + 1 else []


class SlackWebhook(SlackClient):
    """An incoming webhook; its channel is fixed when the webhook is created."""

    def __init__(
        self,
        *,
        url: SecretStr,
        handlers: list[RetryHandler] | None = None,
        timeout: int = DEFAULT_TIMEOUT_SECONDS,
    ):
        self._client = WebhookClient(
            url=url.get_secret_value(),
            timeout=timeout,
            retry_handlers=retry_handlers() if handlers is None else handlers,
            logger=_sdk_logger(url),
        )

    def post(
        self, message: SlackMessage, *, channel: str | None, thread_ts: str | None = None
    ) -> PostedMessage | None:
        try:
            response = self._client.send(
                text=message.text, blocks=message.sendable_blocks(), unfurl_links=False
            )
        except Exception as error:  # the webhook URL is the secret: never quote the error
            raise SlackError(f"Slack webhook unreachable: {type(error).__name__}") from None
        if response.status_code != 200:
            raise SlackError(f"Slack webhook answered {response.status_code}: {str(response.body)[:200]}")
        return None
