"""Secrets from Secrets Manager through powertools parameters: fetched once, cached for
`max_age` seconds across warm invocations, and held as `SecretStr` so a log line or repr
never shows them. Every value handed out is also registered with `redaction`, so no log
line - ours or a library's - can show it either.

Accepted secret strings (JSON, or the bare value where noted):
- Slack: {"bot_token": "xoxb-..."} or {"webhook_url": "https://hooks.slack.com/..."}; bare
  "xox..." token or "https://..." webhook URL also work.
- PagerDuty: {"routing_key": "..."} or the bare routing key.
- Airflow: {"username": "...", "password": "..."}.
- Marquez: {"api_key": "..."} or the bare key.
- Slack signing secret (interactivity): {"signing_secret": "..."} or the bare secret.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, wait
from dataclasses import dataclass
from functools import partial
from typing import Any

from aws_lambda_powertools.utilities.parameters import SecretsProvider
from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError
from pydantic import SecretStr

from backfill_orchestrator.errors import ServiceError
from backfill_orchestrator.redaction import register_basic_credentials, register_secret


class SecretUnavailableError(ServiceError, RuntimeError):
    """Secrets Manager could not return the secret (missing, no permission, unreachable)."""


class SecretFormatError(ServiceError, ValueError):
    """The secret exists but its content is not in an accepted shape (content never shown)."""


@dataclass(frozen=True)
class SlackCredentials:
    bot_token: SecretStr | None = None
    webhook_url: SecretStr | None = None


@dataclass(frozen=True)
class BasicCredentials:
    username: str
    password: SecretStr


class SecretReader:
    """Typed access to the deployment's secrets; `provider` is a powertools SecretsProvider
    (pass one built on your own boto3 client in tests)."""

    def __init__(self, *, provider: SecretsProvider, max_age: int = 300):
        self._provider = provider
        self._max_age = max_age
        self._reading: dict[str, Future[str]] = {}  # reads started ahead (`read_ahead`)
        self._read_at: dict[str, float] = {}  # when each secret was last read (monotonic)

    def read_ahead(
        self, secret_ids: Iterable[str], submit: Callable[[Callable[[], str]], Future[str]]
    ) -> list[Future[str]]:
        """Start reading these secrets side by side (`submit` runs a call on another thread):
        a later use waits for its read instead of sending another. A read that fails is
        sent again by the use, which raises as usual."""
        started = []
        for secret_id in dict.fromkeys(secret_ids):
            read_at = self._read_at.get(secret_id)
            if read_at is not None and time.monotonic() - read_at < self._max_age:
                continue  # the provider's cache holds it
            reading = self._reading.get(secret_id)
            if reading is None or reading.done():
                self._reading[secret_id] = reading = submit(partial(self._read, secret_id))
            started.append(reading)
        return started

    def _raw(self, secret_id: str) -> str:
        reading = self._reading.get(secret_id)
        if reading is not None:
            wait([reading])  # then the provider's cache answers, unless that read failed
        return self._read(secret_id)

    def _read(self, secret_id: str) -> str:
        read_at = time.monotonic()
        try:
            value = self._provider.get(secret_id, max_age=self._max_age)
        except GetParameterError as error:
            # The provider's message names the secret and the AWS error, never the value.
            raise SecretUnavailableError(f"secret {secret_id!r} is unavailable: {error}") from None
        if isinstance(value, bytes):
            value = value.decode("utf-8")
        if not isinstance(value, str) or not value.strip():
            raise SecretFormatError(f"secret {secret_id!r} is empty")
        previous = self._read_at.get(secret_id)
        if previous is None or read_at - previous >= self._max_age:  # the provider fetched it anew
            self._read_at[secret_id] = read_at
        register_secret(value.strip())  # the whole secret string, as it may be logged whole
        return value.strip()

    def _json_or_bare(self, secret_id: str) -> tuple[dict[str, Any] | None, str]:
        raw = self._raw(secret_id)
        if raw.startswith("{"):
            try:
                document = json.loads(raw)
            except json.JSONDecodeError:
                raise SecretFormatError(f"secret {secret_id!r} starts with '{{' but is not JSON") from None
            if not isinstance(document, dict):
                raise SecretFormatError(f"secret {secret_id!r} must be a JSON object")
            return document, raw
        return None, raw

    def _field(self, secret_id: str, document: dict[str, Any], key: str) -> str:
        value = document.get(key)
        if not isinstance(value, str) or not value:
            raise SecretFormatError(f"secret {secret_id!r} has no non-empty string {key!r}")
        return value

    def _secret(self, value: str) -> SecretStr:
        register_secret(value)
        return SecretStr(value)

    def slack(self, secret_id: str) -> SlackCredentials:
        document, raw = self._json_or_bare(secret_id)
        if document is None:
            if raw.startswith("xox"):
                return SlackCredentials(bot_token=self._secret(raw))
            if raw.startswith("https://") or raw.startswith("http://"):
                return SlackCredentials(webhook_url=self._secret(raw))
            raise SecretFormatError(f"secret {secret_id!r} is neither a Slack bot token nor a webhook URL")
        if "bot_token" in document:
            return SlackCredentials(bot_token=self._secret(self._field(secret_id, document, "bot_token")))
        if "webhook_url" in document:
            return SlackCredentials(webhook_url=self._secret(self._field(secret_id, document, "webhook_url")))
        raise SecretFormatError(f"secret {secret_id!r} needs 'bot_token' or 'webhook_url'")

    def pagerduty_routing_key(self, secret_id: str) -> SecretStr:
        document, raw = self._json_or_bare(secret_id)
        return self._secret(raw if document is None else self._field(secret_id, document, "routing_key"))

    def marquez_api_key(self, secret_id: str) -> SecretStr:
        document, raw = self._json_or_bare(secret_id)
        return self._secret(raw if document is None else self._field(secret_id, document, "api_key"))

    def basic_credentials(self, secret_id: str) -> BasicCredentials:
        document, _ = self._json_or_bare(secret_id)
        if document is None:
            raise SecretFormatError(f"secret {secret_id!r} must be JSON with 'username' and 'password'")
        username, password = (
            self._field(secret_id, document, "username"),
            self._field(secret_id, document, "password"),
        )
        register_basic_credentials(username, password)
        return BasicCredentials(username=username, password=SecretStr(password))

    def slack_signing_secret(self, secret_id: str) -> SecretStr:
        document, raw = self._json_or_bare(secret_id)
        return self._secret(raw if document is None else self._field(secret_id, document, "signing_secret"))
