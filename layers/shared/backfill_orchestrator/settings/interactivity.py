"""The Slack interactivity function's deployment settings, read from environment variables.

Required: CONFIG_BUCKET, STATUS_TABLE, SLACK_SIGNING_SECRET_ID, SLACK_REQUESTS_TABLE.
Optional: CONTROL_PREFIX (default control/), POLICY_URI (s3://... or ssm:/...; empty: no
policy, every press is refused), POLICY_CACHE_SECONDS (default 60), SECRETS_MAX_AGE_SECONDS
(default 300), SLACK_RESPONSE_URL_PREFIX (default https://hooks.slack.com/: the only place
replies are posted to), SLACK_SECRET_ID (a bot token with usergroups:read, for policies that
grant to Slack user groups) and SLACK_API_URL (default https://slack.com/api/)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from backfill_orchestrator.settings.common import DEFAULT_SECRETS_MAX_AGE_SECONDS
from backfill_orchestrator.settings.environment import EnvironmentReader

DEFAULT_RESPONSE_URL_PREFIX = "https://hooks.slack.com/"
DEFAULT_INTERACTIVITY_SLACK_API_URL = "https://slack.com/api/"
DEFAULT_POLICY_CACHE_SECONDS = 60


@dataclass(frozen=True, kw_only=True)
class InteractivitySettings:
    config_bucket: str
    status_table: str
    signing_secret_id: str
    requests_table: str
    control_prefix: str = "control/"
    policy_uri: str | None = None
    policy_cache_seconds: int = DEFAULT_POLICY_CACHE_SECONDS
    secrets_max_age_seconds: int = DEFAULT_SECRETS_MAX_AGE_SECONDS
    response_url_prefix: str = DEFAULT_RESPONSE_URL_PREFIX
    slack_secret_id: str | None = None
    slack_api_url: str = DEFAULT_INTERACTIVITY_SLACK_API_URL

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> InteractivitySettings:
        """Raises SettingsError naming every bad or missing variable."""
        env = EnvironmentReader(environ)
        policy_uri = env.get("POLICY_URI")
        if policy_uri and not policy_uri.startswith(("s3://", "ssm:")):
            env.problems.append(
                f"POLICY_URI: expected s3://bucket/key or ssm:/parameter/name, got {policy_uri!r}"
            )
        settings = cls(
            config_bucket=env.required("CONFIG_BUCKET"),
            status_table=env.required("STATUS_TABLE"),
            signing_secret_id=env.required("SLACK_SIGNING_SECRET_ID"),
            requests_table=env.required("SLACK_REQUESTS_TABLE"),
            control_prefix=env.prefix("CONTROL_PREFIX", "control/"),
            policy_uri=policy_uri,
            policy_cache_seconds=env.whole(
                "POLICY_CACHE_SECONDS", DEFAULT_POLICY_CACHE_SECONDS, low=0, high=86_400, unit=" of seconds"
            ),
            secrets_max_age_seconds=env.whole(
                "SECRETS_MAX_AGE_SECONDS",
                DEFAULT_SECRETS_MAX_AGE_SECONDS,
                low=0,
                high=86_400,
                unit=" of seconds",
            ),
            response_url_prefix=env.get("SLACK_RESPONSE_URL_PREFIX") or DEFAULT_RESPONSE_URL_PREFIX,
            slack_secret_id=env.get("SLACK_SECRET_ID"),
            slack_api_url=env.get("SLACK_API_URL") or DEFAULT_INTERACTIVITY_SLACK_API_URL,
        )
        env.check()
        return settings
