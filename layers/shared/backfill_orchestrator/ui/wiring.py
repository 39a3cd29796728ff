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
    from backfill_orchestrator.aws import aws_client

    settings = PageSettings.from_options(airflow_option)
    sources = Sources(
        settings=settings,
        dynamodb_client=aws_client("dynamodb"),
        s3_client=aws_client("s3"),
        ssm_client=aws_client("ssm") if (settings.policy_uri or "").startswith("ssm:") else None,
        runs=AirflowRuns(),
    )
    desk = (
        ActionDesk(bucket=settings.config_bucket, s3_client=sources.s3_client, policy=sources.policy)
        if settings.actions_enabled and settings.config_bucket
        else None
    )
    return create_app(sources=sources, access=AirflowAccess(settings.dag_id), desk=desk)
