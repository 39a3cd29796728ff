"""The REST client and the whole trigger against a real Airflow 3 api-server (slow: the local
Airflow that several modules share, `shared_airflow` in tests/conftest.py)."""

from __future__ import annotations

from contextlib import ExitStack

import pytest
from pydantic import SecretStr

from backfill_local.airflow_local import LocalAirflow
from backfill_orchestrator.airflow_api import DagNotFoundError, RestAirflowClient
from backfill_orchestrator.http import retrying_session
from backfill_orchestrator.trigger import Disposition
from backfill_orchestrator.trigger.wiring import TriggerWiring
from tests.support.airflow import AirflowStack
from tests.support.trigger import VALID, TriggerHarness

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

DAG_ID = "trigger_probe"  # tests/airflow/dags/trigger_probe.py: one no-op task


class RealAirflowHarness(TriggerHarness):
    """With the trigger's production HTTP policy (`retrying_session`: 10 s reads, 4 retries
    with backoff): a real Airflow on a loaded machine takes seconds to answer, and the
    harness's `fast_session` (5 s reads, two quick retries) is for the doubles' outage tests."""

    def make_wiring(self) -> TriggerWiring:
        return TriggerWiring(
            self.settings,
            s3_client=self.s3,
            dynamodb_client=self.dynamodb,
            secrets_client=self.secrets,
            session_factory=retrying_session,
        )


@pytest.fixture(scope="module")
def airflow(shared_airflow: AirflowStack) -> LocalAirflow:
    return shared_airflow.airflow


def test_rest_client_triggers_once_and_resolves_the_409(airflow: LocalAirflow) -> None:
    client = RestAirflowClient(airflow.url, username=airflow.user, password=SecretStr(airflow.password))
    conf = {"backfill_id": "probe-1a2b3c4d", "config_uri": "s3://b/c.yaml", "plan_uri": "s3://b/p.json"}

    first = client.trigger_dag_run(DAG_ID, run_id="probe-1a2b3c4d", conf=conf)
    again = client.trigger_dag_run(DAG_ID, run_id="probe-1a2b3c4d", conf=conf)

    assert first.created and not again.created
    run = airflow.api("GET", f"/dags/{DAG_ID}/dagRuns/probe-1a2b3c4d")
    assert run["conf"] == conf and run["logical_date"] is None
    assert client.get_dag_run(DAG_ID, "probe-1a2b3c4d").conf == conf
    assert client.get_dag_run(DAG_ID, "no-such-run") is None
    with pytest.raises(DagNotFoundError):
        client.trigger_dag_run("no_such_dag", run_id="x", conf={})


def test_the_trigger_end_to_end_makes_one_run_for_ten_deliveries(
    airflow: LocalAirflow, mocked_aws: None
) -> None:
    with ExitStack() as stack:
        harness = RealAirflowHarness(stack, env={"AIRFLOW_URL": airflow.url, "BACKFILL_DAG_ID": DAG_ID})
        event = harness.upload(VALID)
        results = [harness.invoke(event)[0] for _ in range(10)]

    assert [r.disposition for r in results] == [Disposition.ACCEPTED] + [Disposition.DUPLICATE] * 9
    backfill_id = results[0].backfill_id
    runs = [run for run in airflow.dag_runs(DAG_ID) if run["dag_run_id"] == backfill_id]
    assert len(runs) == 1
    assert runs[0]["conf"]["plan_uri"].endswith(f"/backfills/{backfill_id}/plan.json")
