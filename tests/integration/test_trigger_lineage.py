"""The trigger emits the backfill's OpenLineage START once it has triggered the DAG run, with
the trace id it also puts in the run conf; a lineage backend that is down changes nothing."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from backfill_orchestrator.lineage_events import backfill_run_id
from backfill_orchestrator.trigger import Disposition
from tests.support.trigger import VALID, TriggerHarness

TRACE_HEADER = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"


@pytest.fixture
def harness(mocked_aws: None) -> Iterator[TriggerHarness]:
    with ExitStack() as stack:
        yield TriggerHarness(stack)


def test_triggered_backfill_emits_start_with_the_trace_id(
    harness: TriggerHarness, monkeypatch: pytest.MonkeyPatch
):
    assert harness.marquez is not None
    harness.rewire(
        OPENLINEAGE_TRANSPORT=json.dumps({"type": "http", "url": harness.marquez.url}),
        OPENLINEAGE_NAMESPACE="backfills_test",
    )
    monkeypatch.setenv("_X_AMZN_TRACE_ID", TRACE_HEADER)  # Lambda's, per invocation

    [result] = harness.invoke(harness.upload(VALID))

    assert result.disposition is Disposition.ACCEPTED
    conf = harness.airflow.runs[("backfill", result.backfill_id)]["conf"]
    assert conf["trace_id"] == "1-5759e988-bd862e3fe1be46a994272793"
    [start] = [e for e in harness.marquez.events if e["job"]["namespace"] == "backfills_test"]
    assert start["eventType"] == "START"
    assert start["job"]["name"] == result.backfill_id
    assert start["run"]["runId"] == backfill_run_id(backfill_id=result.backfill_id, attempt=1)
    facet = start["run"]["facets"]["backfill"]
    assert facet["traceId"] == conf["trace_id"] and facet["configUri"] == conf["config_uri"]
    assert facet["dates"] and facet["submitter"]


def test_a_lineage_backend_that_is_down_does_not_fail_the_trigger(harness: TriggerHarness):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = sock.getsockname()[1]
    transport = {"type": "http", "url": f"http://127.0.0.1:{dead}", "retry": {"total": 0}}
    harness.rewire(OPENLINEAGE_TRANSPORT=json.dumps(transport))

    [result] = harness.invoke(harness.upload(VALID))

    assert result.disposition is Disposition.ACCEPTED
    assert ("backfill", result.backfill_id) in harness.airflow.runs
    assert harness.counted("LineageEventsFailed") == 1
