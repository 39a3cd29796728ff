from __future__ import annotations

import pytest

from backfill_orchestrator.settings import MAX_DAG_ID_LENGTH, DeploymentSettings, SettingsError

BASE = {
    "CONFIG_BUCKET": "configs",
    "STATUS_TABLE": "status",
    "MARQUEZ_URL": "http://marquez:5000/",
    "AIRFLOW_URL": "https://airflow.example.com",
    "AIRFLOW_SECRET_ID": "backfill/airflow",
}


def test_minimal_environment_gets_the_documented_defaults() -> None:
    settings = DeploymentSettings.from_env(BASE)

    assert settings.marquez_url == "http://marquez:5000"
    assert settings.airflow_api_version == "v2" and not settings.uses_mwaa
    assert settings.backfill_dag_id == "backfill"
    assert (settings.incoming_prefix, settings.results_prefix, settings.backfills_prefix) == (
        "incoming/",
        "results/",
        "backfills/",
    )
    assert settings.slack_api_url == "https://slack.com/api"
    assert settings.pagerduty_events_url == "https://events.pagerduty.com/v2/enqueue"
    assert settings.lineage_web_url == "http://marquez:5000"
    assert settings.config_policy().allowed_namespaces is None


def test_every_endpoint_and_list_is_read() -> None:
    settings = DeploymentSettings.from_env(
        {
            **BASE,
            "AIRFLOW_URL": "",
            "AIRFLOW_SECRET_ID": "",
            "MWAA_ENVIRONMENT": "data-prod",
            "AIRFLOW_API_VERSION": "v1",
            "SLACK_API_URL": "http://127.0.0.1:9/api",
            "PAGERDUTY_EVENTS_URL": "http://127.0.0.1:9/v2/enqueue",
            "ALLOWED_NAMESPACES": "food_delivery, postgres://db:5432 ,",
            "REPLAY_TARGETS": '{"orders-ingest": "https://sqs.us-east-1.amazonaws.com/1/orders"}',
            "INCOMING_PREFIX": "in",
            "SECRETS_MAX_AGE_SECONDS": "60",
        }
    )

    assert settings.uses_mwaa and settings.mwaa_environment == "data-prod"
    assert settings.airflow_api_version == "v1"
    assert settings.allowed_namespaces == frozenset({"food_delivery", "postgres://db:5432"})
    assert settings.replay_targets == {"orders-ingest": "https://sqs.us-east-1.amazonaws.com/1/orders"}
    assert settings.incoming_prefix == "in/"
    assert settings.secrets_max_age_seconds == 60
    policy = settings.config_policy()
    assert policy.allowed_namespaces == settings.allowed_namespaces
    assert policy.replay_targets == frozenset({"orders-ingest"})


def test_every_problem_is_reported_at_once_by_variable_name() -> None:
    with pytest.raises(SettingsError) as raised:
        DeploymentSettings.from_env(
            {
                "MARQUEZ_URL": "marquez:5000",
                "AIRFLOW_URL": "https://a",
                "MWAA_ENVIRONMENT": "env",
                "AIRFLOW_API_VERSION": "v3",
                "BACKFILL_DAG_ID": "x" * (MAX_DAG_ID_LENGTH + 1),
                "REPLAY_TARGETS": "[1]",
                "SECRETS_MAX_AGE_SECONDS": "soon",
            }
        )
    problems = "\n".join(raised.value.problems)
    for name in (
        "CONFIG_BUCKET: required",
        "STATUS_TABLE: required",
        "MARQUEZ_URL: expected an http(s) URL",
        "AIRFLOW_URL / MWAA_ENVIRONMENT: set exactly one",
        "AIRFLOW_API_VERSION",
        "BACKFILL_DAG_ID: at most 16",
        "REPLAY_TARGETS",
        "SECRETS_MAX_AGE_SECONDS",
    ):
        assert name in problems


def test_rest_airflow_needs_its_credentials_secret() -> None:
    with pytest.raises(SettingsError, match="AIRFLOW_SECRET_ID: required with AIRFLOW_URL"):
        DeploymentSettings.from_env({**BASE, "AIRFLOW_SECRET_ID": ""})


def test_results_must_not_land_under_the_incoming_prefix() -> None:
    # A result file under incoming/ would trigger the function again.
    with pytest.raises(SettingsError, match="must not lie under INCOMING_PREFIX"):
        DeploymentSettings.from_env({**BASE, "RESULTS_PREFIX": "incoming/results/"})


def test_longest_dag_id_and_backfill_id_fit_the_mwaa_path_limit() -> None:
    from backfill_orchestrator.airflow_api import MAX_PATH_LENGTH, dag_run_path
    from backfill_orchestrator.config.identity import MAX_BACKFILL_ID_LENGTH

    path = dag_run_path("d" * MAX_DAG_ID_LENGTH, "r" * MAX_BACKFILL_ID_LENGTH)
    assert len(path) == MAX_PATH_LENGTH


def test_the_common_settings_need_none_of_the_triggers_variables() -> None:
    """The replay function reads only these: no Marquez, Airflow or config bucket."""
    from backfill_orchestrator.settings import CommonSettings, NotifySettings

    settings = CommonSettings.from_env(
        {
            "STATUS_TABLE": "status",
            "SLACK_SECRET_ID": "backfill/slack",
            "SLACK_API_URL": "http://127.0.0.1:9/api/",
            "PAGERDUTY_SECRET_ID": "backfill/pd",
            "REPLAY_TARGETS": '{"orders": "https://sqs/q"}',
        }
    )
    assert settings.notify == NotifySettings(
        slack_secret_id="backfill/slack",
        slack_api_url="http://127.0.0.1:9/api",
        pagerduty_secret_id="backfill/pd",
    )
    assert settings.replay_targets == {"orders": "https://sqs/q"}
    with pytest.raises(SettingsError) as raised:
        CommonSettings.from_env({"SLACK_API_URL": "slack", "SECRETS_MAX_AGE_SECONDS": "-1"})
    assert [p.split(":")[0] for p in raised.value.problems] == [
        "STATUS_TABLE",
        "SLACK_API_URL",
        "SECRETS_MAX_AGE_SECONDS",
    ]


def test_the_trigger_settings_extend_the_common_ones() -> None:
    from backfill_orchestrator.settings import CommonSettings

    settings = DeploymentSettings.from_env({**BASE, "SLACK_CHANNEL": "#backfills"})
    assert isinstance(settings, CommonSettings)
    assert settings.notify.slack_channel == "#backfills" and settings.notify.slack_secret_id is None
