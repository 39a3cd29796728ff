"""The Slack interactivity function's wiring: its settings (`settings.InteractivitySettings`),
read once from the environment, and what lives as long as the Lambda container (AWS clients,
the signing secret's cache, the policy's cache, the replay guard, the Slack user group lookup).
The service is built per invocation."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from slack_sdk import WebClient
from slack_sdk.webhook import WebhookClient

from backfill_orchestrator.aws import aws_client
from backfill_orchestrator.errors import ServiceError
from backfill_orchestrator.identity import SlackGroupResolver
from backfill_orchestrator.interactivity.control_writer import write_control_document
from backfill_orchestrator.interactivity.facts import read_backfill_facts
from backfill_orchestrator.interactivity.service import InteractivityService
from backfill_orchestrator.interactivity.verify import ReplayGuard
from backfill_orchestrator.lambda_entry import FunctionClients, FunctionWiring, deployment_clients
from backfill_orchestrator.policy import PolicySource
from backfill_orchestrator.secrets import SecretReader
from backfill_orchestrator.settings import InteractivitySettings

if TYPE_CHECKING:
    from typing import Unpack

    from mypy_boto3_ssm.client import SSMClient

RESPONSE_TIMEOUT_SECONDS = 1  # a reply must not push the acknowledgement past Slack's 3 s
GroupsOf = Callable[[str, frozenset[str]], frozenset[str]]  # (user id, groups the policy names) -> the user's


class InteractivitySettingsError(ServiceError, ValueError):
    """The deployment cannot do what its policy asks (a policy naming Slack user groups without a bot token)."""


class InteractivityWiring(FunctionWiring[InteractivitySettings]):
    def __init__(
        self,
        settings: InteractivitySettings,
        *,
        ssm_client: SSMClient | None,
        policy_source: PolicySource | None = None,
        respond: Callable[[str, dict[str, Any]], None] | None = None,
        slack_groups_of: GroupsOf | None = None,
        clock: Callable[[], datetime] | None = None,
        **clients: Unpack[FunctionClients],
    ) -> None:
        """`respond` posts a reply to a response_url (default: `post_response`, under the
        deployment's prefix only); `slack_groups_of` looks up Slack user groups (default:
        through the bot token of SLACK_SECRET_ID when it is set; none without)."""
        super().__init__(settings, **clients)
        self._policy = policy_source or PolicySource(
            settings.policy_uri,
            ttl_seconds=settings.policy_cache_seconds,
            s3_client=self._s3,
            ssm_client=ssm_client,
        )
        self._replay_guard = ReplayGuard(dynamodb_client=self._dynamodb, table_name=settings.requests_table)
        self._respond = respond or partial(post_response, allowed_prefix=settings.response_url_prefix)
        self._groups_of = slack_groups_of or (
            _group_lookup(settings, self._secrets) if settings.slack_secret_id else None
        )
        self._clock = clock or (lambda: datetime.now(UTC))

    @classmethod
    def from_env(cls) -> InteractivityWiring:
        """The deployment's: settings from the environment (SettingsError names every problem)
        and its clients (`lambda_entry.deployment_clients`)."""
        return cls(InteractivitySettings.from_env(), ssm_client=aws_client("ssm"), **deployment_clients())

    def service(self, *, count: Callable[[str], None]) -> InteractivityService:
        settings, secrets, dynamodb = self.settings, self._secrets, self._dynamodb
        return InteractivityService(
            signing_secret=lambda: secrets.slack_signing_secret(
                settings.signing_secret_id
            ).get_secret_value(),
            replay_guard=self._replay_guard,
            policy=self._policy.get,
            backfill_facts=lambda backfill_id: read_backfill_facts(
                dynamodb_client=dynamodb, table_name=settings.status_table, backfill_id=backfill_id
            ),
            write_control=partial(
                write_control_document,
                bucket=settings.config_bucket,
                prefix=settings.control_prefix,
                s3_client=self._s3,
            ),
            respond=self._respond,
            count=count,
            clock=self._clock,
            slack_groups_of=self._groups_of,
        )


def post_response(url: str, body: dict[str, Any], *, allowed_prefix: str) -> None:
    """POST a reply to Slack's response_url (only under `allowed_prefix`: the URL comes from
    the payload, so it is checked before anything is sent there)."""
    if not url.startswith(allowed_prefix):
        raise ValueError(f"response_url outside {allowed_prefix}")
    response = WebhookClient(url, timeout=RESPONSE_TIMEOUT_SECONDS).send_dict(body)
    if response.status_code != 200:
        raise RuntimeError(f"response_url answered {response.status_code}")


def _group_lookup(settings: InteractivitySettings, secrets: SecretReader) -> GroupsOf:
    """Slack user groups through a bot token, built on first use (a policy without groups never
    reads the secret). A webhook-only Slack secret cannot list groups: nobody is in any."""
    resolver: SlackGroupResolver | None = None

    def groups_of(user_id: str, group_ids: frozenset[str]) -> frozenset[str]:
        nonlocal resolver
        if resolver is None:
            token = secrets.slack(settings.slack_secret_id or "").bot_token
            if token is None:
                raise InteractivitySettingsError(
                    "SLACK_SECRET_ID: the policy names Slack user groups; a bot token is needed"
                )
            api_url = (
                settings.slack_api_url
                if settings.slack_api_url.endswith("/")
                else settings.slack_api_url + "/"
            )
            client = WebClient(
                token=token.get_secret_value(), base_url=api_url, timeout=RESPONSE_TIMEOUT_SECONDS
            )
            resolver = SlackGroupResolver(client=client)
        return resolver.groups_of(user_id, group_ids)

    return groups_of
