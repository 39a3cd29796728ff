"""The DAG's observability without Airflow processes: JSON task logs with the backfill's keys,
metrics as EMF or StatsD by `[backfill] metrics`, and the facts its lineage events carry."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from backfill_runtime import observability

from backfill_orchestrator.contracts import Plan, RunConf
from backfill_orchestrator.contracts.backfill_report import BackfillFigures
from backfill_orchestrator.lineage_events import backfill_run_id

CONF = RunConf(
    backfill_id="orders-0123abcd",
    attempt=3,
    trace_id="1-abc-def",
    config_uri="s3://b/c.yaml",
    plan_uri="s3://b/plan.json",
)
PLAN = Plan(
    backfill_id="orders-0123abcd",
    name="orders",
    owner="jane@example.com",
    created_at=datetime(2021, 6, 14, tzinfo=UTC),
    roots=[],
    dates=["2021-06-04"],
    feeds=["orders"],
    waves=[],
)
FIGURES = BackfillFigures(
    steps_succeeded=4, steps_failed=1, steps_not_run=2, rows_written=900, partitions_written=12
)


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_task_logs_are_json_lines_with_the_backfill_keys(capsys):
    logger = observability.task_logger(
        backfill_id="orders-0123abcd", attempt=3, trace_id="1-abc-def", step="etl_orders"
    )
    logger.info("round %d: %s", 0, "ok")
    [line] = json_lines(capsys.readouterr().out)
    assert line["message"] == "round 0: ok"
    assert (line["backfill_id"], line["attempt"], line["trace_id"], line["step"]) == (
        "orders-0123abcd",
        3,
        "1-abc-def",
        "etl_orders",
    )
    assert line["service"] == "backfill-dag"


def test_emf_metrics_by_default(monkeypatch, capsys):
    monkeypatch.delenv("AIRFLOW__BACKFILL__METRICS", raising=False)
    monkeypatch.setenv("AIRFLOW__BACKFILL__METRICS_NAMESPACE", "BackfillTest")
    sink = observability.metrics_sink(dimensions={"dag_id": "backfill"})
    observability.report_metrics(sink, FIGURES, seconds=61.5)
    sink.flush()
    [emf] = json_lines(capsys.readouterr().out)
    assert emf["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "BackfillTest"
    assert emf["dag_id"] == "backfill"
    values = {
        name: emf[name]
        for name in (
            "StepsSucceeded",
            "StepsFailed",
            "StepsNotRun",
            "RowsWritten",
            "PartitionsWritten",
            "BackfillDuration",
        )
    }
    assert values == {
        "StepsSucceeded": [4.0],
        "StepsFailed": [1.0],
        "StepsNotRun": [2.0],
        "RowsWritten": [900.0],
        "PartitionsWritten": [12.0],
        "BackfillDuration": [61.5],
    }


def test_statsd_metrics_by_option(monkeypatch):
    from airflow.sdk.observability import stats

    sent: list[tuple] = []
    monkeypatch.setattr(
        stats.Stats, "incr", lambda name, count=1, **_: sent.append(("incr", name, count)), raising=False
    )
    monkeypatch.setattr(
        stats.Stats, "gauge", lambda name, value, **_: sent.append(("gauge", name, value)), raising=False
    )
    monkeypatch.setenv("AIRFLOW__BACKFILL__METRICS", "statsd")
    sink = observability.metrics_sink()
    observability.report_metrics(sink, FIGURES, seconds=2.0)
    assert ("incr", "backfill.StepsFailed", 1) in sent
    assert ("incr", "backfill.RowsWritten", 900) in sent
    assert ("gauge", "backfill.BackfillDuration", 2.0) in sent


@pytest.mark.parametrize(
    ("value", "kind"), [("none", observability.NoMetrics), ("prometheus", observability.NoMetrics)]
)
def test_metrics_off_or_unknown(monkeypatch, value, kind):
    monkeypatch.setenv("AIRFLOW__BACKFILL__METRICS", value)
    assert isinstance(observability.metrics_sink(), kind)


def test_the_dag_and_the_trigger_name_the_same_backfill_run(monkeypatch):
    monkeypatch.setenv("AIRFLOW__BACKFILL__OPENLINEAGE_NAMESPACE", "ops")
    monkeypatch.setenv("AIRFLOW__BACKFILL__OPENLINEAGE_TRANSPORT", '{"type": "console"}')
    settings = observability.lineage_settings()
    facts = observability.backfill_facts(CONF, PLAN, namespace=settings.namespace)
    assert settings.transport == {"type": "console"} and facts.namespace == "ops"
    assert facts.run_id == backfill_run_id(backfill_id="orders-0123abcd", attempt=3)
    assert (facts.submitter, list(facts.dates), facts.feeds, facts.trace_id) == (
        "jane@example.com",
        ["2021-06-04"],
        ["orders"],
        "1-abc-def",
    )
