"""OpenLineage events of a backfill: every event validates against the OpenLineage JSON Schemas
(core RunEvent and each facet's own schema), the Spark steps and DAG reruns are child runs of
the backfill run, a cancel emits ABORT, and a lineage backend that is down never raises."""

from __future__ import annotations

import json
import socket
from datetime import UTC, datetime
from typing import Any

import pytest

from backfill_local.openlineage_schemas import validate_event
from backfill_orchestrator.contracts import RunReport, StepResult, StepStatus
from backfill_orchestrator.lineage_events import (
    BackfillFacts,
    LineageEmitter,
    LineageSettings,
    backfill_aborted,
    backfill_finished,
    backfill_run_id,
    backfill_started,
    dag_reruns,
    rerun_parent_conf,
    spark_steps,
)
from backfill_orchestrator.lineage_events.emitter import FAILURE_METRIC
from backfill_orchestrator.tracing import current_trace_id
from tests.support.lineage import Recorder

BACKFILL = "orders-june-0123abcd"
FACTS = BackfillFacts(
    backfill_id=BACKFILL,
    attempt=2,
    namespace="backfill_test",
    config_uri="s3://cfg/backfills/x/config.yaml",
    dates=["2021-06-04", "2021-06-10"],
    hours=[0, 13],
    feeds=["orders"],
    submitter="jane@example.com",
    trace_id="1-5759e988-bd862e3fe1be46a994272793",
)


class Metrics:
    def __init__(self) -> None:
        self.counted: list[tuple[str, float]] = []

    def add_metric(self, *, name: str, unit: Any, value: float) -> None:
        self.counted.append((name, value))


def recording() -> tuple[LineageEmitter, Recorder]:
    recorder = Recorder()
    return LineageEmitter(client=recorder, namespace=FACTS.namespace), recorder


def run_report() -> RunReport:
    steps = [
        StepResult(
            id="etl_orders",
            transform="etl_orders",
            wave=0,
            status=StepStatus.SUCCEEDED,
            seconds=3.5,
            rows_in=10,
            rows_in_by_input={"raw_orders": 10},
            rows_out=9,
            partitions_written=["day=2021-06-04/hour=0"],
            partitions_deleted=["day=2021-06-04/hour=13"],
            bytes_written=4096,
            output_table="orders",
            input_tables={"raw_orders": "raw_orders"},
        ),
        StepResult(
            id="etl_orders_7_days",
            transform="etl_orders_7_days",
            wave=1,
            status=StepStatus.FAILED,
            seconds=1.0,
            error="AnalysisException: boom",
            output_table="orders_7_days",
            input_tables={"orders": "orders", "menu_items": "menu_items"},
        ),
        StepResult(
            id="etl_delivery_7_days",
            transform="etl_delivery_7_days",
            wave=2,
            status=StepStatus.BLOCKED,
            seconds=0.0,
            blocked_by=["etl_orders_7_days"],
        ),
    ]
    return RunReport(
        backfill_id=BACKFILL,
        plan="s3://cfg/backfills/x/rounds/0/plan.json",
        warehouse="s3a://lake/warehouse",
        application_id="app-1",
        started_at=datetime(2026, 1, 2, 9, tzinfo=UTC),
        finished_at=datetime(2026, 1, 2, 9, 5, tzinfo=UTC),
        seconds=300.0,
        steps=steps,
    )


def every_kind_of_event() -> list[dict[str, Any]]:
    emitter, recorder = recording()
    backfill_started(emitter, FACTS)
    spark_steps(emitter, FACTS, run_report(), warehouse="s3a://lake/warehouse")
    dag_reruns(
        emitter,
        FACTS,
        step_id="email_discounts",
        dag_id="email_discounts",
        dates={"2021-06-04": "success", "2021-06-10": "failed", "2021-06-11": "not run"},
    )
    backfill_finished(emitter, FACTS, "COMPLETE")
    backfill_finished(emitter, FACTS, "FAIL", reason="steps not succeeded: etl_orders_7_days")
    backfill_aborted(emitter, FACTS, reason="cancelled by jane")
    return recorder.events


# -- schemas --------------------------------------------------------------------------------
def test_every_emitted_event_validates_against_the_openlineage_schemas():
    events = every_kind_of_event()
    kinds = {(e["job"]["facets"]["jobType"]["jobType"], e["eventType"]) for e in events}
    assert kinds == {
        ("BACKFILL", "START"),
        ("BACKFILL", "COMPLETE"),
        ("BACKFILL", "FAIL"),
        ("BACKFILL", "ABORT"),
        ("SPARK_STEP", "START"),
        ("SPARK_STEP", "COMPLETE"),
        ("SPARK_STEP", "FAIL"),
        ("DAG_RERUN", "START"),
        ("DAG_RERUN", "COMPLETE"),
        ("DAG_RERUN", "FAIL"),
    }
    for event in events:
        assert validate_event(event) == [], event


def test_the_validator_rejects_what_the_spec_does():
    event = every_kind_of_event()[2]  # a spark step's COMPLETE, with output facets
    event["run"]["runId"] = "not-a-uuid"
    del event["run"]["facets"]["parent"]["job"]["name"]
    event["outputs"][0]["outputFacets"]["outputStatistics"]["rowCount"] = "nine"
    del event["outputs"][0]["outputFacets"]["backfillPartitions"]["_producer"]
    event["job"]["facets"]["jobType"]["_schemaURL"] = "https://example.com/Unknown.json#/$defs/Unknown"
    del event["schemaURL"]
    problems = "\n".join(validate_event(event))
    for expected in (
        "event.run.runId: 'not-a-uuid' is not a 'uuid'",
        "run.facets.parent.job: 'name' is a required property",
        "outputs[0].outputFacets.outputStatistics.rowCount: 'nine' is not of type 'integer'",
        "outputs[0].outputFacets.backfillPartitions: '_producer' is a required property",
        "job.facets.jobType._schemaURL: no known schema",
        "event: 'schemaURL' is a required property",
    ):
        assert expected in problems


# -- content and linkage --------------------------------------------------------------------
def test_the_backfill_run_carries_the_backfill_facet():
    start = every_kind_of_event()[0]
    assert start["eventType"] == "START"
    assert start["job"] == {**start["job"], "namespace": "backfill_test", "name": BACKFILL}
    assert start["run"]["runId"] == backfill_run_id(backfill_id=BACKFILL, attempt=2)
    facet = start["run"]["facets"]["backfill"]
    assert {k: v for k, v in facet.items() if not k.startswith("_")} == {
        "backfillId": BACKFILL,
        "attempt": 2,
        "configUri": "s3://cfg/backfills/x/config.yaml",
        "dates": ["2021-06-04", "2021-06-10"],
        "hours": [0, 13],
        "feeds": ["orders"],
        "submitter": "jane@example.com",
        "traceId": "1-5759e988-bd862e3fe1be46a994272793",
    }


def test_spark_steps_and_dag_reruns_are_children_of_the_backfill_run():
    events = every_kind_of_event()
    parent_run = events[0]["run"]["runId"]
    children = [e for e in events if e["job"]["facets"]["jobType"]["jobType"] != "BACKFILL"]
    assert len(children) == 8  # 2 spark steps ran (the blocked one has no run) + 2 reruns ran, 2 events each
    for child in children:
        parent = child["run"]["facets"]["parent"]
        assert parent["run"]["runId"] == parent_run
        assert (parent["job"]["namespace"], parent["job"]["name"]) == ("backfill_test", BACKFILL)
        assert parent["root"]["run"]["runId"] == parent_run
        assert child["job"]["name"].startswith(BACKFILL + ".")
        assert child["run"]["runId"] != parent_run
    names = sorted({c["job"]["name"] for c in children})
    assert names == [f"{BACKFILL}.email_discounts", f"{BACKFILL}.etl_orders", f"{BACKFILL}.etl_orders_7_days"]
    # START and its end event share one run id; two dates are two runs.
    reruns = [c for c in children if c["job"]["name"] == f"{BACKFILL}.email_discounts"]
    assert len({r["run"]["runId"] for r in reruns}) == 2
    assert [r["run"]["facets"]["nominalTime"]["nominalStartTime"][:10] for r in reruns] == [
        "2021-06-04"
    ] * 2 + ["2021-06-10"] * 2


def test_a_spark_step_has_its_datasets_partitions_and_statistics():
    events = every_kind_of_event()
    complete = next(
        e for e in events if e["job"]["name"] == f"{BACKFILL}.etl_orders" and e["eventType"] == "COMPLETE"
    )
    assert complete["inputs"] == [
        {"namespace": "s3://lake", "name": "warehouse/raw_orders", "facets": {}, "inputFacets": {}}
    ]
    [output] = complete["outputs"]
    assert (output["namespace"], output["name"]) == ("s3://lake", "warehouse/orders")
    assert output["outputFacets"]["outputStatistics"]["rowCount"] == 9
    assert output["outputFacets"]["outputStatistics"]["size"] == 4096
    partitions = output["outputFacets"]["backfillPartitions"]
    assert (partitions["written"], partitions["deleted"], partitions["writtenCount"]) == (
        ["day=2021-06-04/hour=0"],
        ["day=2021-06-04/hour=13"],
        1,
    )
    failed = next(
        e for e in events if e["job"]["name"] == f"{BACKFILL}.etl_orders_7_days" and e["eventType"] == "FAIL"
    )
    assert failed["run"]["facets"]["errorMessage"]["message"] == "AnalysisException: boom"
    assert "outputStatistics" not in failed["outputs"][0]["outputFacets"]


def test_the_rerun_conf_names_the_backfill_run_as_parent_under_the_providers_keys():
    conf = rerun_parent_conf(FACTS)
    run_id = backfill_run_id(backfill_id=BACKFILL, attempt=2)
    assert conf == {
        "parentRunId": run_id,
        "parentJobNamespace": "backfill_test",
        "parentJobName": BACKFILL,
        "rootParentRunId": run_id,
        "rootParentJobNamespace": "backfill_test",
        "rootParentJobName": BACKFILL,
    }


def test_run_ids_are_the_same_wherever_they_are_computed_and_differ_per_attempt():
    assert backfill_run_id(backfill_id=BACKFILL, attempt=1) == backfill_run_id(
        backfill_id=BACKFILL, attempt=1
    )
    assert backfill_run_id(backfill_id=BACKFILL, attempt=1) != backfill_run_id(
        backfill_id=BACKFILL, attempt=2
    )
    assert backfill_run_id(backfill_id=BACKFILL, attempt=1) != backfill_run_id(
        backfill_id="other-0123abcd", attempt=1
    )


# -- cancel ----------------------------------------------------------------------------------
def test_cancel_emits_abort_for_the_same_run_that_started():
    emitter, recorder = recording()
    backfill_started(emitter, FACTS)
    assert backfill_aborted(
        emitter,
        BackfillFacts(backfill_id=BACKFILL, attempt=2, namespace="backfill_test"),
        reason="cancelled by @jane from Slack",
    )
    start, abort = recorder.events
    assert abort["eventType"] == "ABORT"
    assert abort["run"]["runId"] == start["run"]["runId"]
    assert abort["job"]["name"] == start["job"]["name"] == BACKFILL
    assert abort["run"]["facets"]["errorMessage"]["message"] == "cancelled by @jane from Slack"
    assert validate_event(abort) == []


# -- failures never raise ---------------------------------------------------------------------
def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_marquez_that_is_down_is_counted_and_logged_never_raised(caplog):
    metrics = Metrics()
    settings = LineageSettings.parse(
        json.dumps(
            {"type": "http", "url": f"http://127.0.0.1:{closed_port()}", "timeout": 2, "retry": {"total": 0}}
        )
    )
    emitter = LineageEmitter.from_settings(settings, metrics=metrics)
    assert emitter.enabled
    with caplog.at_level("WARNING"):
        assert backfill_started(emitter, FACTS) is False
        assert spark_steps(emitter, FACTS, run_report(), warehouse="s3a://lake") == 0
    assert emitter.failed == 5 and emitter.sent == 0
    assert metrics.counted == [(FAILURE_METRIC, 1)] * 5
    assert "OpenLineage START event for backfill_test/orders-june-0123abcd not sent" in caplog.text
    # After three failures in a row it stops trying (bounded delay), still counting.
    assert caplog.text.count("not sent") == 3 and "3 failures in a row" in caplog.text


def test_a_client_that_raises_anything_does_not_escape():
    class Broken:
        def emit(self, event: Any) -> None:
            raise RuntimeError("serialiser bug")

    emitter = LineageEmitter(client=Broken(), metrics=Metrics())
    assert backfill_finished(emitter, FACTS, "FAIL", reason="x") is False
    assert emitter.failed == 1


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "not JSON"),
        ('["http"]', 'expected a JSON object with a "type"'),
        ('{"url": "x"}', '"type"'),
    ],
)
def test_an_unusable_transport_setting_turns_events_off_and_says_why(text, problem, caplog):
    settings = LineageSettings.parse(text)
    assert settings.transport is None and problem in (settings.problem or "")
    with caplog.at_level("ERROR"):
        emitter = LineageEmitter.from_settings(settings)
    assert not emitter.enabled and backfill_started(emitter, FACTS) is False
    assert "OpenLineage events are off" in caplog.text


def test_settings_default_to_off_and_fill_http_defaults():
    assert LineageSettings.parse(None).transport is None
    assert LineageSettings.parse("", " ").namespace == "backfill"
    http = LineageSettings.parse('{"type": "http", "url": "http://marquez:5000"}', "ops").transport
    assert http == {
        "type": "http",
        "url": "http://marquez:5000",
        "endpoint": "api/v1/lineage",
        "timeout": 5.0,
        "retry": {"total": 2, "backoff_factor": 0.5},
    }


def test_the_trace_id_is_the_x_ray_root_of_the_invocation():
    header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
    assert current_trace_id({"_X_AMZN_TRACE_ID": header}) == "1-5759e988-bd862e3fe1be46a994272793"
    assert current_trace_id({}) is None
    assert current_trace_id({"_X_AMZN_TRACE_ID": "garbage"}) is None
