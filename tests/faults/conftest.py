"""Generic fault-injection fixtures (see toolkit.py); component harnesses build on them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from botocore.retries import standard

from tests.faults.toolkit import AwsFaults, FaultProxy, guard_moto


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
