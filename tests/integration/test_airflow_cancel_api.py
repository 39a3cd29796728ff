"""Stopping DAG runs through the API (how a backfill is cancelled): PATCH a run to failed and
list a DAG's runs by logical date and state — on the REST client against the double (whose
answers are checked against Airflow's own models) and on MWAA through Stubber."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import boto3
import pytest
from botocore.stub import Stubber
from pydantic import SecretStr

from backfill_local.airflow_double import AirflowDouble, PatchBody
from backfill_orchestrator.airflow_api import MwaaAirflowClient, RestAirflowClient
from backfill_orchestrator.http import retrying_session

D1, D2, D3 = (datetime(2021, 6, day, tzinfo=UTC) for day in (4, 5, 6))


@pytest.fixture
def airflow() -> Iterator[AirflowDouble]:
    with AirflowDouble(dag_ids={"backfill", "email_discounts"}) as double:
        yield double


def rest(airflow: AirflowDouble) -> RestAirflowClient:
    return RestAirflowClient(
        airflow.url,
        username="admin",
        password=SecretStr("admin"),
        session=retrying_session(retries=1, backoff_factor=0.01, backoff_max=0.05),
    )


def test_failing_a_running_run_and_an_unknown_one(airflow: AirflowDouble) -> None:
    client = rest(airflow)
    client.trigger_dag_run(
        "backfill", run_id="orders-fix-1a2b3c4d", conf={"backfill_id": "orders-fix-1a2b3c4d"}
    )
    airflow.set_state("backfill", "orders-fix-1a2b3c4d", "running")
    run = client.fail_dag_run("backfill", "orders-fix-1a2b3c4d")
    assert run is not None and run.state == "failed"
    assert airflow.runs[("backfill", "orders-fix-1a2b3c4d")]["state"] == "failed"
    assert client.fail_dag_run("backfill", "no-such-run") is None
    (patch,) = [r for r in airflow.requests if r["method"] == "PATCH" and r["status"] == 200]
    assert patch["body"] == {"state": "failed"}


def test_listing_runs_by_logical_date_and_state_pages_through(airflow: AirflowDouble) -> None:
    client = rest(airflow)
    for index, day in enumerate((D1, D2, D3)):
        run_id = f"backfill__x__{day.date()}"
        airflow.runs[("email_discounts", run_id)] = {
            **airflow._new_run("email_discounts", _trigger(run_id, day)),
            "state": ("running", "queued", "success")[index],
        }
    runs = client.list_dag_runs(
        "email_discounts", logical_date_gte=D1, logical_date_lte=D3, states=["running", "queued"]
    )
    assert sorted(run.run_id for run in runs) == ["backfill__x__2021-06-04", "backfill__x__2021-06-05"]
    assert (
        client.list_dag_runs("email_discounts", logical_date_gte=D3, logical_date_lte=D3, states=["running"])
        == []
    )


def test_the_doubles_answers_fit_airflows_own_models(airflow: AirflowDouble) -> None:
    from airflow.api_fastapi.core_api.datamodels.dag_run import (
        DAGRunCollectionResponse,
        DAGRunPatchBody,
        DAGRunResponse,
    )

    client = rest(airflow)
    client.trigger_dag_run("backfill", run_id="r1", conf={})
    status, answer = airflow.handle(
        "PATCH", "/api/v2/dags/backfill/dagRuns/r1", _bearer(airflow), b'{"state": "failed"}'
    )
    assert status == 200 and DAGRunResponse.model_validate(answer).state == "failed"
    status, answer = airflow.handle(
        "GET", "/api/v2/dags/backfill/dagRuns?state=failed", _bearer(airflow), b""
    )
    assert status == 200 and DAGRunCollectionResponse.model_validate(answer).total_entries == 1
    for body in ({"state": "running"}, {"state": "failed", "extra": 1}, {"note": "x" * 1001}):
        with pytest.raises(ValueError):
            DAGRunPatchBody.model_validate(body)
        with pytest.raises(ValueError):
            PatchBody.model_validate(body)
        status, _ = airflow.handle("PATCH", "/api/v2/dags/backfill/dagRuns/r1", _bearer(airflow), _json(body))
        assert status == 422


def test_mwaa_sends_the_patch_and_the_query_parameters() -> None:
    mwaa = boto3.client("mwaa", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    client = MwaaAirflowClient("env", mwaa_client=mwaa, sleep=lambda s: None)
    with Stubber(mwaa) as stub:
        stub.add_response(
            "invoke_rest_api",
            {
                "RestApiStatusCode": 200,
                "RestApiResponse": {"dag_run_id": "r1", "dag_id": "backfill", "state": "failed"},
            },
            {
                "Name": "env",
                "Path": "/dags/backfill/dagRuns/r1",
                "Method": "PATCH",
                "Body": {"state": "failed"},
            },
        )
        stub.add_response(
            "invoke_rest_api",
            {"RestApiStatusCode": 200, "RestApiResponse": {"dag_runs": [], "total_entries": 0}},
            {
                "Name": "env",
                "Path": "/dags/email_discounts/dagRuns",
                "Method": "GET",
                "QueryParameters": {
                    "logical_date_gte": D1.isoformat(),
                    "logical_date_lte": D2.isoformat(),
                    "state": ["running", "queued"],
                    "limit": 100,
                    "offset": 0,
                },
            },
        )
        assert client.fail_dag_run("backfill", "r1").state == "failed"
        assert (
            client.list_dag_runs(
                "email_discounts", logical_date_gte=D1, logical_date_lte=D2, states=["running", "queued"]
            )
            == []
        )
        stub.assert_no_pending_responses()


def _trigger(run_id: str, day: datetime):
    from backfill_local.airflow_double import TriggerBody

    return TriggerBody.model_validate({"dag_run_id": run_id, "logical_date": day.isoformat(), "conf": {}})


def _bearer(airflow: AirflowDouble) -> dict[str, str]:
    _, answer = airflow._issue_token({"username": "admin", "password": "admin"})
    return {"Authorization": f"Bearer {answer['access_token']}", "Content-Type": "application/json"}


def _json(body: dict) -> bytes:
    import json

    return json.dumps(body).encode()
