"""The page's app as the api-server runs it: settings from Airflow's `[backfill]` options, AWS
clients from the api-server's credentials (the MWAA execution role; locally `AWS_ENDPOINT_URL`
points them at moto), the live DAG runs from Airflow's database, users and permissions from
Airflow's auth manager."""

from __future__ import annotations

from typing import Any

from backfill_orchestrator.ui.access import AirflowAccess
from backfill_orchestrator.ui.actions import ActionDesk
from backfill_orchestrator.ui.airflow_runs import AirflowRuns
from backfill_orchestrator.ui.app import create_app
from backfill_orchestrator.ui.settings import PageSettings, airflow_option
from backfill_orchestrator.ui.sources import Sources


def build_app() -> Any:
    import boto3

    from backfill_orchestrator.aws import AWS_CLIENT_CONFIG as config

    settings = PageSettings.from_options(airflow_option)
    sources = Sources(
        settings=settings,
        dynamodb_client=boto3.client("dynamodb", config=config),
        s3_client=boto3.client("s3", config=config),
        ssm_client=boto3.client("ssm", config=config)
        if (settings.policy_uri or "").startswith("ssm:")
        else None,
        runs=AirflowRuns(),
    )
    desk = (
        ActionDesk(bucket=settings.config_bucket, s3_client=sources.s3_client, policy=sources.policy)
        if settings.actions_enabled and settings.config_bucket
        else None
    )
    return create_app(sources=sources, access=AirflowAccess(settings.dag_id), desk=desk)
