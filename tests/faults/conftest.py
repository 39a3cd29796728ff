"""Generic fault-injection fixtures (see toolkit.py); component harnesses build on them. And
the real Airflows the fault modules kill and cut off: `fault_airflow` (test_airflow_restarts.py)
and `outage_airflow` (test_airflow_api_outage.py), each booted by the first test that needs it
and stopped after the last (the two modules are xdist units of their own: tests/conftest.py)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from botocore.retries import standard

from tests.faults.toolkit import AwsFaults, FaultProxy, guard_moto
from tests.support.airflow import AirflowStack, AwsLocal, StackKeeper, spark_dispatcher, stop_unused_stacks


@pytest.fixture
def fast_aws_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """botocore's standard retry mode as configured (same attempts, same errors retried),
    without its backoff waits, so throttling past the retries takes milliseconds."""
    monkeypatch.setattr(standard.ExponentialBackoff, "delay_amount", lambda self, context: 0.001)


@pytest.fixture
def aws_faults(fast_aws_retries: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[AwsFaults]:
    guard_moto(monkeypatch)
    faults = AwsFaults()
    yield faults
    faults.remove()


@pytest.fixture
def throttle(aws_faults: AwsFaults) -> Callable[..., None]:
    """`throttle(client, "UpdateItem", when=..., times=...)`: the service's throttling error."""
    return aws_faults.throttle


@pytest.fixture
def fault_proxy() -> Iterator[Callable[..., FaultProxy]]:
    """`fault_proxy(upstream=url)` -> a started FaultProxy, stopped after the test."""
    with ExitStack() as stack:

        def make(**kwargs: Any) -> FaultProxy:
            return stack.enter_context(FaultProxy(**kwargs))

        yield make


@pytest.fixture
def trigger_harness(mocked_aws: None, fast_aws_retries: None) -> Iterator[Any]:
    from tests.faults.harness import FaultHarness

    with ExitStack() as stack:
        yield FaultHarness(stack)


@pytest.fixture
def control_harness(mocked_aws: None, fast_aws_retries: None) -> Iterator[Any]:
    """The trigger's fault harness with overlap protection (the template's claims table), the
    DAGs the sample plan reruns, and HTTP sessions with a short backoff: Airflow's faults are
    injected by the proxy's rules, which stay until the test clears them."""
    import boto3

    from backfill_orchestrator.trigger.wiring import TriggerWiring
    from tests.faults.harness import FaultHarness
    from tests.support.aws import create_table
    from tests.support.trigger import CLAIMS, fast_session

    with ExitStack() as stack:
        create_table(boto3.client("dynamodb", region_name="us-east-1"), "ClaimsTable", table_name=CLAIMS)
        harness = FaultHarness(stack, env={"CLAIMS_TABLE": CLAIMS})
        harness.airflow.dag_ids |= {"email_discounts", "orders_popular_day_of_week"}
        harness.wiring = TriggerWiring(
            harness.settings,
            s3_client=harness.s3,
            dynamodb_client=harness.dynamodb,
            secrets_client=harness.secrets,
            session_factory=fast_session,
        )
        yield harness


# -- the real Airflows the fault modules kill and cut off ---------------------------------------
def _fault_options(aws: AwsLocal, root: Path) -> dict[str, str]:
    """The Spark dispatcher (real job for the `small` and `large` profiles), a short outage
    budget, and a scheduler that finds the tasks a killed one left within seconds."""
    dispatcher = spark_dispatcher(root / "spark_dispatch.py", pids=root / "spark-pids.jsonl")
    aws.client("secretsmanager").create_secret(  # the trigger's, to retry a failed backfill
        Name="backfill/airflow", SecretString=json.dumps({"username": "admin", "password": "admin"})
    )
    return {
        "AIRFLOW__BACKFILL__SPARK_COMMAND": f"{sys.executable} {dispatcher}",
        # how long a chunk task rides out an unreachable API server (default 300 s): minutes here
        "AIRFLOW__BACKFILL__API_OUTAGE_SECONDS": "60",
        # Production-like retries: a restart costs the task it interrupted one try, and a task
        # the scheduler starts before the api-server is back fails to start and costs another.
        "AIRFLOW__BACKFILL__TASK_RETRIES": "2",
        "AIRFLOW__BACKFILL__RETRY_DELAY_SECONDS": "15",
        # A restarted scheduler resets the tasks of the one that died once that one's heartbeat
        # is `scheduler_health_check_threshold` (30 s) old, at its next orphan check: every
        # 300 s by default, every 15 s here.
        "AIRFLOW__SCHEDULER__ORPHANED_TASKS_CHECK_INTERVAL": "15",
    }


def _outage_options(aws: AwsLocal, root: Path) -> dict[str, str]:
    """The fault options without task retries, with a budget the api-server's boot fits in
    (below). While the API server is down a task cannot report its own end: the scheduler
    takes the executor's word that it failed and retries it (even a task that raised
    AirflowFailException), and each retry, and each later task of the run, fails to start, one
    retry delay after the other (with 2 retries 15 s apart, the test past the budget took 2.4
    times as long under `make test`). The budget, the page and `backfill retry` are what this
    module shows; test_airflow_restarts.py shows retries across an outage."""
    return {
        **_fault_options(aws, root),
        "AIRFLOW__BACKFILL__TASK_RETRIES": "0",
        # The short outage test holds the api-server down (its OUTAGE_SECONDS), then boots it
        # again: on a loaded machine (load 16 on 2 cores) that boot alone can take over a
        # minute, which this budget leaves it; the test past the budget waits it out in full.
        "AIRFLOW__BACKFILL__API_OUTAGE_SECONDS": "180",
    }


FAULT_AIRFLOW = StackKeeper("fault-airflow", options=_fault_options, wait_for=("backfill", "gated_report"))
OUTAGE_AIRFLOW = StackKeeper("outage-airflow", options=_outage_options, wait_for=("backfill", "gated_report"))
_KEEPERS = {"fault_airflow": FAULT_AIRFLOW, "outage_airflow": OUTAGE_AIRFLOW}


@pytest.fixture(scope="module")
def fault_airflow(tmp_path_factory: pytest.TempPathFactory) -> AirflowStack:
    """A real Airflow for restarts and a killed Spark driver: booted for the module's first
    test, kept for the next (each test leaves it running), stopped after the last."""
    return FAULT_AIRFLOW.get(tmp_path_factory.getbasetemp())


@pytest.fixture(scope="module")
def outage_airflow(tmp_path_factory: pytest.TempPathFactory) -> AirflowStack:
    """A real Airflow whose API server the tests stop for longer and shorter than the budget."""
    return OUTAGE_AIRFLOW.get(tmp_path_factory.getbasetemp())


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    yield
    stop_unused_stacks(_KEEPERS, item, nextitem)
