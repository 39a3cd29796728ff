"""The REST client against the strict Airflow 3 double (and Airflow 2's /api/v1)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests
from pydantic import SecretStr

from backfill_local.airflow_double import AirflowDouble
from backfill_orchestrator.airflow_api import (
    AirflowAuthError,
    AirflowUnavailableError,
    DagNotFoundError,
    DagRunCollisionError,
    RestAirflowClient,
)
from backfill_orchestrator.http import retrying_session

CONF = {"backfill_id": "orders-fix-1a2b3c4d", "config_uri": "s3://b/c.yaml", "plan_uri": "s3://b/p.json"}


@pytest.fixture
def airflow() -> Iterator[AirflowDouble]:
    with AirflowDouble(dag_ids={"backfill"}, basic_auth_v1=True) as double:
        yield double


def client(airflow: AirflowDouble, *, api_version: str = "v2", password: str = "admin") -> RestAirflowClient:
    return RestAirflowClient(
        airflow.url,
        username="admin",
        password=SecretStr(password),
        api_version=api_version,  # type: ignore[arg-type]
        session=retrying_session(retries=2, backoff_factor=0.01, backoff_max=0.05),
    )


# -- the double is strict (so passing tests mean something) ------------------------------------------
def test_the_double_refuses_unknown_keys_and_a_missing_logical_date(airflow: AirflowDouble) -> None:
    token = requests.post(
        f"{airflow.url}/auth/token", json={"username": "admin", "password": "admin"}
    ).json()["access_token"]
    headers = {"Authorization": f"Bearer {token}"}
    url = f"{airflow.url}/api/v2/dags/backfill/dagRuns"

    missing = requests.post(url, json={"dag_run_id": "x", "conf": {}}, headers=headers)
    assert missing.status_code == 422 and missing.json()["detail"][0]["loc"] == ["body", "logical_date"]
    extra = requests.post(
        url, json={"dag_run_id": "x", "logical_date": None, "execution_date": None}, headers=headers
    )
    assert extra.status_code == 422 and extra.json()["detail"][0]["type"] == "extra_forbidden"
    half = requests.post(
        url, json={"logical_date": None, "data_interval_start": "2021-06-04T00:00:00Z"}, headers=headers
    )
    assert half.status_code == 422
    assert requests.post(url, json={"logical_date": None}).status_code == 401
    assert airflow.runs == {}


def test_the_double_accepts_every_field_of_airflow_3s_trigger_body() -> None:
    with AirflowDouble(dag_ids={"backfill", "parts"}, partitioned_dag_ids={"parts"}) as double:
        token = requests.post(
            f"{double.url}/auth/token", json={"username": "admin", "password": "admin"}
        ).json()["access_token"]
        headers = {"Authorization": f"Bearer {token}"}
        body = {
            "logical_date": None,
            "dag_run_id": "p1",
            "partition_key": "2021-06-04",
            "note": "why",
            "run_after": "2021-06-04T00:00:00Z",
        }

        run = requests.post(f"{double.url}/api/v2/dags/parts/dagRuns", json=body, headers=headers)
        assert run.status_code == 200
        assert (run.json()["partition_key"], run.json()["note"], run.json()["run_after"]) == (
            "2021-06-04",
            "why",
            "2021-06-04T00:00:00Z",
        )
        # A DAG that is not partitioned refuses the key as Airflow's validate_partition_key does: 400.
        refused = requests.post(f"{double.url}/api/v2/dags/backfill/dagRuns", json=body, headers=headers)
        assert refused.status_code == 400 and "is not a partitioned Dag" in refused.json()["detail"]
        assert list(double.runs) == [("parts", "p1")]


# -- the client ------------------------------------------------------------------------------------
def test_trigger_creates_the_run_with_a_null_logical_date(airflow: AirflowDouble) -> None:
    result = client(airflow).trigger_dag_run("backfill", run_id=CONF["backfill_id"], conf=CONF)

    assert result.created and result.run.state == "queued" and result.run.conf == CONF
    run = airflow.runs[("backfill", CONF["backfill_id"])]
    assert run["logical_date"] is None and run["conf"] == CONF


def test_a_retried_trigger_resolves_409_by_reading_the_run(airflow: AirflowDouble) -> None:
    first = client(airflow).trigger_dag_run("backfill", run_id=CONF["backfill_id"], conf=CONF)
    second = client(airflow).trigger_dag_run("backfill", run_id=CONF["backfill_id"], conf=CONF)

    assert first.created and not second.created and second.run.run_id == CONF["backfill_id"]
    assert [r["status"] for r in airflow.requests if r["method"] == "POST"] == [200, 409]
    assert len(airflow.runs) == 1


def test_409_for_another_backfill_is_a_collision(airflow: AirflowDouble) -> None:
    client(airflow).trigger_dag_run("backfill", run_id="shared-id", conf={"backfill_id": "a"})
    with pytest.raises(DagRunCollisionError, match="another backfill"):
        client(airflow).trigger_dag_run("backfill", run_id="shared-id", conf={"backfill_id": "b"})


def test_an_expired_token_is_refreshed_once(airflow: AirflowDouble) -> None:
    rest = client(airflow)
    assert rest.get_dag_run("backfill", "nope") is None
    airflow.expire_tokens()

    assert rest.trigger_dag_run("backfill", run_id=CONF["backfill_id"], conf=CONF).created
    assert airflow.tokens_issued == 2


def test_wrong_credentials_are_an_auth_error(airflow: AirflowDouble) -> None:
    with pytest.raises(AirflowAuthError, match="refused the credentials"):
        client(airflow, password="wrong").trigger_dag_run("backfill", run_id="r", conf={})


def test_unknown_dag_is_named(airflow: AirflowDouble) -> None:
    with pytest.raises(DagNotFoundError, match="404"):
        client(airflow).trigger_dag_run("no_such_dag", run_id="r", conf={})


def test_500_is_retried_then_unavailable(airflow: AirflowDouble) -> None:
    airflow.fail_next(3, status=500)
    with pytest.raises(AirflowUnavailableError, match="500"):
        client(airflow).trigger_dag_run("backfill", run_id="r", conf={})
    assert airflow.runs == {}


def test_unreachable_airflow_is_unavailable() -> None:
    rest = RestAirflowClient(
        "http://127.0.0.1:9",
        username="a",
        password=SecretStr("p"),
        session=retrying_session(retries=1, backoff_factor=0.01),
    )
    with pytest.raises(AirflowUnavailableError, match="unreachable"):
        rest.trigger_dag_run("backfill", run_id="r", conf={})


def test_airflow_2_uses_basic_auth_and_no_logical_date(airflow: AirflowDouble) -> None:
    rest = client(airflow, api_version="v1")
    result = rest.trigger_dag_run("backfill", run_id=CONF["backfill_id"], conf=CONF)

    assert result.created and airflow.tokens_issued == 0
    (post,) = [r for r in airflow.requests if r["method"] == "POST"]
    assert post["path"] == "/api/v1/dags/backfill/dagRuns" and "logical_date" not in post["body"]
    assert rest.get_dag_run("backfill", CONF["backfill_id"]).conf == CONF
    assert rest.run_url("backfill", "r") == f"{airflow.url}/dags/backfill/grid?dag_run_id=r"
