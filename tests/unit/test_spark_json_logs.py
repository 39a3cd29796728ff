"""The Spark job's JSON log lines carry the backfill id, step, attempt and trace id."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from backfill_orchestrator.contracts import RunReport, StepResult, StepStatus
from spark_jobs.engine import backfill_job


def test_one_json_line_per_step_with_the_backfill_keys(monkeypatch):
    monkeypatch.setenv(backfill_job.ATTEMPT_VARIABLE, "2")
    monkeypatch.setenv(backfill_job.TRACE_VARIABLE, "1-abc-def")
    report = RunReport(
        backfill_id="orders-0123abcd",
        plan="p.json",
        warehouse="/w",
        application_id="local-1",
        started_at=datetime(2026, 1, 1, tzinfo=UTC),
        finished_at=datetime(2026, 1, 1, 0, 1, tzinfo=UTC),
        seconds=60,
        steps=[
            StepResult(
                id="etl_orders",
                transform="etl_orders",
                wave=0,
                status=StepStatus.SUCCEEDED,
                seconds=1.0,
                rows_out=5,
                partitions_written=["day=2021-06-04"],
            ),
            StepResult(
                id="etl_orders_7_days",
                transform="t",
                wave=1,
                status=StepStatus.FAILED,
                seconds=1.0,
                error="boom",
            ),
        ],
    )
    lines = [json.loads(line) for line in backfill_job._json_lines(report).splitlines()]
    assert [(x["step"], x["level"], x["status"]) for x in lines] == [
        ("etl_orders", "INFO", "succeeded"),
        ("etl_orders_7_days", "ERROR", "failed"),
    ]
    assert all(
        (x["backfill_id"], x["attempt"], x["trace_id"]) == ("orders-0123abcd", 2, "1-abc-def") for x in lines
    )
    assert lines[0]["partitions_written"] == 1 and lines[1]["error"] == "boom"


def test_without_the_runner_variables_attempt_and_trace_are_null(monkeypatch):
    monkeypatch.delenv(backfill_job.ATTEMPT_VARIABLE, raising=False)
    monkeypatch.delenv(backfill_job.TRACE_VARIABLE, raising=False)
    report = RunReport(
        backfill_id="orders-0123abcd",
        plan="p.json",
        warehouse="/w",
        application_id="local-1",
        started_at=datetime(2026, 1, 1, tzinfo=UTC),
        finished_at=datetime(2026, 1, 1, tzinfo=UTC),
        seconds=0,
        steps=[
            StepResult(id="a", transform="a", wave=0, status=StepStatus.SUCCEEDED, seconds=0.0),
        ],
    )
    [line] = [json.loads(x) for x in backfill_job._json_lines(report).splitlines()]
    assert line["attempt"] is None and line["trace_id"] is None
