"""Profile names agree between the trigger and the DAG: with SPARK_PROFILES_URI the trigger
checks `spark.profile` against the names of the same profiles file the DAG resolves them in
(`[backfill] spark_profiles_uri`), so names other than small/medium/large work end to end."""

from __future__ import annotations

import boto3
import pytest

from backfill_orchestrator.client.preflight import deployment_policy
from backfill_orchestrator.config import InvalidConfigError, parse_config
from backfill_orchestrator.errors import ServiceError
from backfill_orchestrator.settings import DeploymentSettings
from backfill_orchestrator.spark_profiles import ProfilesUnavailableError, parse_profiles, profile_names

PROFILES = """
profiles:
  tiny: {runner: local}
  gpu-xl:
    runner: databricks
    spark_version: 15.4.x-scala2.12
    node_type_id: g5.4xlarge
    num_workers: 4
"""
URI = "s3://deploy/spark/profiles.yaml"
ENV = {
    "CONFIG_BUCKET": "configs",
    "STATUS_TABLE": "status",
    "MARQUEZ_URL": "http://marquez:5000/",
    "AIRFLOW_URL": "https://airflow.example.com",
    "AIRFLOW_SECRET_ID": "backfill/airflow",
    "SPARK_PROFILES": "small,medium,large",
    "SPARK_PROFILES_URI": URI,
}


def batch(profile: str) -> dict:
    return {
        "version": 1,
        "name": "profiles",
        "owner": "jane.doe@example.com",
        "mode": "batch",
        "jobs": [{"namespace": "food_delivery", "name": "etl_orders"}],
        "dates": ["2021-06-04"],
        "spark": {"profile": profile},
    }


@pytest.fixture
def profiles_file(mocked_aws: None) -> str:
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="deploy")
    s3.put_object(Bucket="deploy", Key="spark/profiles.yaml", Body=PROFILES.encode())
    return URI


def test_the_trigger_takes_the_names_of_the_dags_profiles_file(profiles_file: str) -> None:
    policy = DeploymentSettings.from_env(ENV).config_policy()
    assert policy.spark_profiles == {"tiny", "gpu-xl"}  # the file wins over SPARK_PROFILES
    assert parse_config(batch("gpu-xl"), source="c.yaml", policy=policy).effective_spark.profile == "gpu-xl"
    # what the trigger accepted is what the DAG resolves
    assert parse_profiles(PROFILES, source=URI).get("gpu-xl").runner == "databricks"
    with pytest.raises(InvalidConfigError) as caught:
        parse_config(batch("medium"), source="c.yaml", policy=policy)
    (issue,) = caught.value.issues
    assert issue.location == "spark.profile" and "unknown profile 'medium'" in issue.message
    # the client and CLI preflight read the same variables
    assert deployment_policy(ENV).spark_profiles == {"tiny", "gpu-xl"}


def test_without_the_file_the_listed_names_apply(mocked_aws: None) -> None:
    env = {key: value for key, value in ENV.items() if key != "SPARK_PROFILES_URI"}
    assert DeploymentSettings.from_env(env).config_policy().spark_profiles == {"small", "medium", "large"}


def test_an_unreadable_or_invalid_file_is_a_deployment_problem_not_the_users(profiles_file: str) -> None:
    with pytest.raises(ProfilesUnavailableError, match="SPARK_PROFILES_URI: .*missing.yaml") as caught:
        profile_names("s3://deploy/spark/missing.yaml")
    assert isinstance(caught.value, ServiceError)
    boto3.client("s3").put_object(
        Bucket="deploy", Key="spark/bad.yaml", Body=b"profiles: {Big: {runner: local}}"
    )
    with pytest.raises(ProfilesUnavailableError, match="profiles"):
        profile_names("s3://deploy/spark/bad.yaml")


def test_names_are_cached_for_a_while_then_read_again(profiles_file: str) -> None:
    now = [1000.0]
    uri = "s3://deploy/spark/cached.yaml"
    s3 = boto3.client("s3")
    s3.put_object(Bucket="deploy", Key="spark/cached.yaml", Body=PROFILES.encode())
    assert profile_names(uri, clock=lambda: now[0]) == {"tiny", "gpu-xl"}
    s3.put_object(Bucket="deploy", Key="spark/cached.yaml", Body=b"profiles: {only: {runner: local}}")
    now[0] += 10
    assert profile_names(uri, clock=lambda: now[0]) == {"tiny", "gpu-xl"}
    now[0] += 300
    assert profile_names(uri, clock=lambda: now[0]) == {"only"}
