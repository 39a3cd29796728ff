"""The Slack interactivity function's settings and clients, built once per container.

Environment: CONFIG_BUCKET, STATUS_TABLE, SLACK_SIGNING_SECRET_ID, SLACK_REQUESTS_TABLE
(required); CONTROL_PREFIX (default control/), POLICY_URI (s3://... or ssm:/...; empty: no
policy, every press is refused), POLICY_CACHE_SECONDS (default 60), SECRETS_MAX_AGE_SECONDS
(default 300), SLACK_RESPONSE_URL_PREFIX (default https://hooks.slack.com/: the only place
replies are posted to), SLACK_SECRET_ID (optional: a bot token with usergroups:read, for
policies that grant to Slack user groups) and SLACK_API_URL (default https://slack.com/api/)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from aws_lambda_powertools.utilities.parameters import SecretsProvider
from slack_sdk import WebClient
from slack_sdk.webhook import WebhookClient

from backfill_orchestrator.errors import ServiceError
from backfill_orchestrator.identity import SlackGroupResolver
from backfill_orchestrator.interactivity.control_writer import write_control_document
from backfill_orchestrator.interactivity.facts import read_backfill_facts
from backfill_orchestrator.interactivity.service import InteractivityService
from backfill_orchestrator.interactivity.verify import ReplayGuard
from backfill_orchestrator.policy import PolicySource
from backfill_orchestrator.secrets import SecretReader

DEFAULT_RESPONSE_URL_PREFIX = "https://hooks.slack.com/"
DEFAULT_SLACK_API_URL = "https://slack.com/api/"
RESPONSE_TIMEOUT_SECONDS = 1  # a reply must not push the acknowledgement past Slack's 3 s


class InteractivitySettingsError(ServiceError, ValueError):
    """The environment does not describe a usable interactivity function (every problem listed)."""


@dataclass(frozen=True, kw_only=True)
class InteractivitySettings:
    config_bucket: str
    status_table: str
    signing_secret_id: str
    requests_table: str
    control_prefix: str = "control/"
    policy_uri: str | None = None
    policy_cache_seconds: int = 60
    secrets_max_age_seconds: int = 300
    response_url_prefix: str = DEFAULT_RESPONSE_URL_PREFIX
    slack_secret_id: str | None = None
    slack_api_url: str = DEFAULT_SLACK_API_URL

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> InteractivitySettings:
        env = os.environ if environ is None else environ
        problems: list[str] = []

        def get(name: str) -> str | None:
            return env.get(name, "").strip() or None

        def required(name: str) -> str:
            value = get(name)
            if value is None:
                problems.append(f"{name}: required")
            return value or ""

        def seconds(name: str, default: int) -> int:
            text = get(name) or str(default)
            if not text.isdigit():
                problems.append(f"{name}: expected a whole number of seconds, got {text!r}")
                return default
            return int(text)

        policy_uri = get("POLICY_URI")
        if policy_uri and not policy_uri.startswith(("s3://", "ssm:")):
            problems.append(f"POLICY_URI: expected s3://bucket/key or ssm:/parameter/name, got {policy_uri!r}")
        prefix = get("CONTROL_PREFIX") or "control/"
        settings = cls(
            config_bucket=required("CONFIG_BUCKET"),
            status_table=required("STATUS_TABLE"),
            signing_secret_id=required("SLACK_SIGNING_SECRET_ID"),
            requests_table=required("SLACK_REQUESTS_TABLE"),
            control_prefix=prefix if prefix.endswith("/") else prefix + "/",
            policy_uri=policy_uri,
            policy_cache_seconds=seconds("POLICY_CACHE_SECONDS", 60),
            secrets_max_age_seconds=seconds("SECRETS_MAX_AGE_SECONDS", 300),
            response_url_prefix=get("SLACK_RESPONSE_URL_PREFIX") or DEFAULT_RESPONSE_URL_PREFIX,
            slack_secret_id=get("SLACK_SECRET_ID"),
            slack_api_url=get("SLACK_API_URL") or DEFAULT_SLACK_API_URL,
        )
        if problems:
            raise InteractivitySettingsError("invalid interactivity settings:\n" + "\n".join(f"  {p}" for p in problems))
        return settings


def post_response(url: str, body: dict[str, Any], *, allowed_prefix: str) -> None:
    """POST a reply to Slack's response_url (only under `allowed_prefix`: the URL comes from
    the payload, so it is checked before anything is sent there)."""
    if not url.startswith(allowed_prefix):
        raise ValueError(f"response_url outside {allowed_prefix}")
    response = WebhookClient(url, timeout=RESPONSE_TIMEOUT_SECONDS).send_dict(body)
    if response.status_code != 200:
        raise RuntimeError(f"response_url answered {response.status_code}")


def _group_lookup(settings: InteractivitySettings, secrets: SecretReader) -> Callable[[str, frozenset[str]], frozenset[str]]:
    """Slack user groups through a bot token, built on first use (a policy without groups never
    reads the secret). A webhook-only Slack secret cannot list groups: nobody is in any."""
    resolver: SlackGroupResolver | None = None

    def groups_of(user_id: str, group_ids: frozenset[str]) -> frozenset[str]:
        nonlocal resolver
        if resolver is None:
            token = secrets.slack(settings.slack_secret_id or "").bot_token
            if token is None:
                raise InteractivitySettingsError("SLACK_SECRET_ID: the policy names Slack user groups; a bot token is needed")
            api_url = settings.slack_api_url if settings.slack_api_url.endswith("/") else settings.slack_api_url + "/"
            client = WebClient(token=token.get_secret_value(), base_url=api_url, timeout=RESPONSE_TIMEOUT_SECONDS)
            resolver = SlackGroupResolver(client=client)
        return resolver.groups_of(user_id, group_ids)

    return groups_of


def build_service(
    settings: InteractivitySettings,
    *,
    s3_client: Any,
    dynamodb_client: Any,
    secrets_client: Any,
    ssm_client: Any,
    count: Callable[[str], None],
    policy_source: PolicySource | None = None,
) -> InteractivityService:
    secrets = SecretReader(provider=SecretsProvider(boto3_client=secrets_client), max_age=settings.secrets_max_age_seconds)
    policy = policy_source or PolicySource(
        settings.policy_uri, ttl_seconds=settings.policy_cache_seconds, s3_client=s3_client, ssm_client=ssm_client
    )
    return InteractivityService(
        signing_secret=lambda: secrets.slack_signing_secret(settings.signing_secret_id).get_secret_value(),
        replay_guard=ReplayGuard(dynamodb_client=dynamodb_client, table_name=settings.requests_table),
        policy=policy.get,
        backfill_facts=lambda backfill_id: read_backfill_facts(
            dynamodb_client=dynamodb_client, table_name=settings.status_table, backfill_id=backfill_id
        ),
        write_control=partial(
            write_control_document, bucket=settings.config_bucket, prefix=settings.control_prefix, s3_client=s3_client
        ),
        respond=partial(post_response, allowed_prefix=settings.response_url_prefix),
        count=count,
        slack_groups_of=_group_lookup(settings, secrets) if settings.slack_secret_id else None,
    )
