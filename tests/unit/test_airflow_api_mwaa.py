"""The MWAA path, with botocore's Stubber checking every request against MWAA's model."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from botocore.stub import Stubber

from backfill_orchestrator.airflow_api import (
    AirflowAuthError,
    AirflowRequestError,
    AirflowUnavailableError,
    DagRunCollisionError,
    MwaaAirflowClient,
    MwaaPathTooLongError,
)

CONF = {"backfill_id": "orders-fix-1a2b3c4d", "config_uri": "s3://b/c.yaml", "plan_uri": "s3://b/p.json"}
RUN = {
    "dag_run_id": "orders-fix-1a2b3c4d",
    "dag_id": "backfill",
    "state": "queued",
    "conf": CONF,
    "logical_date": None,
}


@pytest.fixture
def mwaa() -> Iterator[tuple[object, Stubber]]:
    client = boto3.client("mwaa", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def make(client: object, sleeps: list[float] | None = None, **kwargs) -> MwaaAirflowClient:  # noqa: ANN003
    return MwaaAirflowClient(
        "data-prod", mwaa_client=client, sleep=(sleeps if sleeps is not None else []).append, **kwargs
    )


def trigger_request(api_version: str = "v2") -> dict:
    body = {"dag_run_id": CONF["backfill_id"], "conf": CONF}
    if api_version == "v2":
        body["logical_date"] = None
    return {"Name": "data-prod", "Path": "/dags/backfill/dagRuns", "Method": "POST", "Body": body}


def airflow_error(stubber: Stubber, status: int, body: dict, *, server: bool = False) -> None:
    stubber.add_client_error(
        "invoke_rest_api",
        service_error_code="RestApiServerException" if server else "RestApiClientException",
        service_message="Airflow error",
        http_status_code=400,
        modeled_fields={"RestApiStatusCode": status, "RestApiResponse": body},
    )


def test_trigger_sends_the_strict_v2_body_without_the_version_prefix(mwaa) -> None:  # noqa: ANN001
    client, stubber = mwaa
    stubber.add_response(
        "invoke_rest_api", {"RestApiStatusCode": 200, "RestApiResponse": RUN}, trigger_request()
    )

    result = make(client).trigger_dag_run("backfill", run_id=CONF["backfill_id"], conf=CONF)

    assert result.created and result.run.run_id == CONF["backfill_id"] and result.run.state == "queued"


def test_airflow_2_behind_mwaa_gets_no_logical_date(mwaa) -> None:  # noqa: ANN001
    client, stubber = mwaa
    stubber.add_response(
        "invoke_rest_api", {"RestApiStatusCode": 200, "RestApiResponse": RUN}, trigger_request("v1")
    )
    assert (
        make(client, api_version="v1")
        .trigger_dag_run("backfill", run_id=CONF["backfill_id"], conf=CONF)
        .created
    )


def test_409_with_the_run_present_is_an_earlier_trigger(mwaa) -> None:  # noqa: ANN001
    client, stubber = mwaa
    airflow_error(stubber, 409, {"detail": "already exists"})
    stubber.add_response(
        "invoke_rest_api",
        {"RestApiStatusCode": 200, "RestApiResponse": {**RUN, "state": "running"}},
        {"Name": "data-prod", "Path": f"/dags/backfill/dagRuns/{CONF['backfill_id']}", "Method": "GET"},
    )
    result = make(client).trigger_dag_run("backfill", run_id=CONF["backfill_id"], conf=CONF)
    assert not result.created and result.run.state == "running"


def test_409_without_the_run_is_a_real_collision(mwaa) -> None:  # noqa: ANN001
    client, stubber = mwaa
    airflow_error(stubber, 409, {"detail": "logical date taken"})
    airflow_error(stubber, 404, {"detail": "not found"})
    with pytest.raises(DagRunCollisionError, match="logical-date collision"):
        make(client).trigger_dag_run("backfill", run_id=CONF["backfill_id"], conf=CONF)


def test_409_for_another_backfills_run_is_a_collision(mwaa) -> None:  # noqa: ANN001
    client, stubber = mwaa
    airflow_error(stubber, 409, {"detail": "already exists"})
    stubber.add_response(
        "invoke_rest_api",
        {"RestApiStatusCode": 200, "RestApiResponse": {**RUN, "conf": {"backfill_id": "other"}}},
    )
    with pytest.raises(DagRunCollisionError, match="another backfill"):
        make(client).trigger_dag_run("backfill", run_id=CONF["backfill_id"], conf=CONF)


def test_airflow_5xx_is_retried_with_backoff_then_recovers(mwaa) -> None:  # noqa: ANN001
    client, stubber = mwaa
    airflow_error(stubber, 500, {"detail": "boom"}, server=True)
    airflow_error(stubber, 503, {"detail": "boom"}, server=True)
    stubber.add_response(
        "invoke_rest_api", {"RestApiStatusCode": 200, "RestApiResponse": RUN}, trigger_request()
    )
    sleeps: list[float] = []

    assert make(client, sleeps).trigger_dag_run("backfill", run_id=CONF["backfill_id"], conf=CONF).created
    assert sleeps == [0.5, 1.0]


def test_airflow_5xx_past_the_attempts_is_unavailable(mwaa) -> None:  # noqa: ANN001
    client, stubber = mwaa
    for _ in range(3):
        airflow_error(stubber, 500, {"detail": "boom"}, server=True)
    with pytest.raises(AirflowUnavailableError, match="failed 3 times"):
        make(client, attempts=3).trigger_dag_run("backfill", run_id=CONF["backfill_id"], conf=CONF)


def test_access_denied_and_validation_are_named(mwaa) -> None:  # noqa: ANN001
    client, stubber = mwaa
    stubber.add_client_error("invoke_rest_api", "AccessDeniedException", "no airflow:InvokeRestApi", 403)
    stubber.add_client_error("invoke_rest_api", "ResourceNotFoundException", "no such environment", 404)
    with pytest.raises(AirflowAuthError, match="InvokeRestApi"):
        make(client).trigger_dag_run("backfill", run_id="r", conf={})
    with pytest.raises(AirflowRequestError, match="ResourceNotFoundException"):
        make(client).trigger_dag_run("backfill", run_id="r", conf={})


def test_a_path_over_64_characters_is_refused_before_calling(mwaa) -> None:  # noqa: ANN001
    client, _ = mwaa
    with pytest.raises(MwaaPathTooLongError, match="limit is 64"):
        make(client).get_dag_run("a_very_long_dag_identifier", "a-very-long-run-identifier-12345678")


def test_get_dag_run_404_is_none(mwaa) -> None:  # noqa: ANN001
    client, stubber = mwaa
    airflow_error(stubber, 404, {"detail": "not found"})
    assert make(client).get_dag_run("backfill", "nope") is None


def test_run_url_needs_the_ui_url() -> None:
    assert MwaaAirflowClient("e", mwaa_client=None).run_url("backfill", "r") is None
    client = MwaaAirflowClient("e", mwaa_client=None, ui_url="https://abc.airflow.amazonaws.com/")
    assert client.run_url("backfill", "r 1") == "https://abc.airflow.amazonaws.com/dags/backfill/runs/r%201"
