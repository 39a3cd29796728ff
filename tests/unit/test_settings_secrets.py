"""Secrets through powertools parameters, on moto's Secrets Manager."""

from __future__ import annotations

import json

import boto3
import pytest
from aws_lambda_powertools.utilities.parameters import SecretsProvider

from backfill_orchestrator.secrets import SecretFormatError, SecretReader, SecretUnavailableError


@pytest.fixture
def client(mocked_aws: None) -> object:
    return boto3.client("secretsmanager", region_name="us-east-1")


def reader(client: object, max_age: int = 300) -> SecretReader:
    return SecretReader(provider=SecretsProvider(boto3_client=client), max_age=max_age)


def test_each_accepted_shape_is_read_and_never_shown(client) -> None:  # noqa: ANN001
    client.create_secret(Name="slack-json", SecretString=json.dumps({"bot_token": "xoxb-1"}))
    client.create_secret(Name="slack-hook", SecretString="https://hooks.slack.com/services/T/B/X")
    client.create_secret(Name="pd", SecretString=json.dumps({"routing_key": "k" * 32}))
    client.create_secret(Name="airflow", SecretString=json.dumps({"username": "api", "password": "hunter2"}))
    secrets = reader(client)

    slack = secrets.slack("slack-json")
    assert slack.bot_token.get_secret_value() == "xoxb-1" and slack.webhook_url is None
    assert secrets.slack("slack-hook").webhook_url.get_secret_value().endswith("/X")
    assert secrets.pagerduty_routing_key("pd").get_secret_value() == "k" * 32
    airflow = secrets.basic_credentials("airflow")
    assert airflow.username == "api" and airflow.password.get_secret_value() == "hunter2"
    assert "hunter2" not in repr(airflow) and "xoxb-1" not in repr(slack)


def test_secrets_are_cached_until_max_age(client) -> None:  # noqa: ANN001
    client.create_secret(Name="pd", SecretString="first-key")
    secrets = reader(client, max_age=300)
    assert secrets.pagerduty_routing_key("pd").get_secret_value() == "first-key"
    client.put_secret_value(SecretId="pd", SecretString="second-key")

    assert secrets.pagerduty_routing_key("pd").get_secret_value() == "first-key"
    assert reader(client, max_age=0).pagerduty_routing_key("pd").get_secret_value() == "second-key"


def test_missing_secret_is_a_named_error(client) -> None:  # noqa: ANN001
    with pytest.raises(SecretUnavailableError, match="'nope' is unavailable"):
        reader(client).slack("nope")


def test_bad_shapes_are_named_without_showing_the_value(client) -> None:  # noqa: ANN001
    client.create_secret(Name="slack", SecretString="not-a-token-s3cr3t")
    client.create_secret(Name="airflow", SecretString=json.dumps({"username": "api"}))
    client.create_secret(Name="broken", SecretString="{not json s3cr3t")
    secrets = reader(client)

    for call, secret_id in (
        (secrets.slack, "slack"),
        (secrets.basic_credentials, "airflow"),
        (secrets.slack, "broken"),
    ):
        with pytest.raises(SecretFormatError) as raised:
            call(secret_id)
        assert "s3cr3t" not in str(raised.value)
