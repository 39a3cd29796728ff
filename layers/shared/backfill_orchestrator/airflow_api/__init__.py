"""Trigger and read Airflow DAG runs: one interface (`AirflowClient`), two ways in.

- `RestAirflowClient(base_url, username=..., password=..., api_version="v2"|"v1")`
- `MwaaAirflowClient(environment, mwaa_client=boto3.client("mwaa"), api_version=...)`

`trigger_dag_run(dag_id, run_id=..., conf=...)` is idempotent for a deterministic run id:
a 409 is resolved by reading the run back. Errors are `AirflowApiError` subclasses.
"""

from backfill_orchestrator.airflow_api.base import (
    AirflowApiError,
    AirflowAuthError,
    AirflowClient,
    AirflowRequestError,
    AirflowTimeoutError,
    AirflowUnavailableError,
    DagNotFoundError,
    DagRun,
    DagRunCollisionError,
    TriggerResult,
    dag_run_path,
    trigger_body,
)
from backfill_orchestrator.airflow_api.mwaa import MAX_PATH_LENGTH, MwaaAirflowClient, MwaaPathTooLongError
from backfill_orchestrator.airflow_api.rest import RestAirflowClient

__all__ = [
    "MAX_PATH_LENGTH",
    "AirflowApiError",
    "AirflowAuthError",
    "AirflowClient",
    "AirflowRequestError",
    "AirflowTimeoutError",
    "AirflowUnavailableError",
    "DagNotFoundError",
    "DagRun",
    "DagRunCollisionError",
    "MwaaAirflowClient",
    "MwaaPathTooLongError",
    "RestAirflowClient",
    "TriggerResult",
    "dag_run_path",
    "trigger_body",
]
