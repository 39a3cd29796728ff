"""Logs, metrics and lineage events of the backfill DAG's tasks.

- Logs: JSON lines (powertools Logger, which works outside Lambda) carrying `backfill_id`,
  `step`, `attempt` and `trace_id` (the trigger's X-Ray trace id, from the run conf), so one
  backfill can be followed across the Lambda, the DAG and the Spark job.
- Metrics: the Lambdas' kind, by `[backfill] metrics`: `emf` (default; CloudWatch embedded
  metric format on stdout, namespace `[backfill] metrics_namespace`), `statsd` (Airflow's own
  StatsD client and `[metrics]` settings) or `none`.
- Lineage: `[backfill] openlineage_transport` (the openlineage client's transport as JSON;
  empty: off) and `[backfill] openlineage_namespace` (default `backfill`)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from typing import Any

from backfill_orchestrator.contracts import Plan, RunConf
from backfill_orchestrator.lineage_events import BackfillFacts, LineageEmitter, LineageSettings

METRICS_BACKENDS = ("emf", "statsd", "none")
SERVICE = "backfill-dag"
log = logging.getLogger(__name__)


def _option(key: str, default: str = "") -> str:
    from backfill_runtime.options import _get

    return _get(key, default)


def task_logger(
    *,
    backfill_id: str | None,
    attempt: int | None = None,
    trace_id: str | None = None,
    step: str | None = None,
) -> Any:
    """A JSON-lines logger for one task, its keys bound."""
    from aws_lambda_powertools import Logger

    logger = Logger(service=SERVICE, logger_handler=logging.StreamHandler(sys.stdout), name=f"{SERVICE}.task")
    logger.append_keys(backfill_id=backfill_id, attempt=attempt, trace_id=trace_id, step=step)
    return logger


class StatsdSink:
    """`add_metric` over Airflow's StatsD client (names `backfill.<name>`)."""

    def add_metric(self, name: str, unit: Any, value: float, **_: Any) -> None:
        from airflow.sdk.observability import stats

        metric = f"backfill.{name}"
        if str(unit).endswith("Count"):
            stats.Stats.incr(metric, count=int(value))
        else:
            stats.Stats.gauge(metric, value)

    def flush(self) -> None:
        """StatsD sends as it goes."""


class EmfSink:
    """powertools Metrics: EMF JSON on stdout (the task log); CloudWatch extracts the metrics."""

    def __init__(self, namespace: str, dimensions: Mapping[str, str]):
        from aws_lambda_powertools.metrics import EphemeralMetrics

        self._metrics = EphemeralMetrics(namespace=namespace, service=SERVICE)  # no state shared across tasks
        for key, value in dimensions.items():
            self._metrics.add_dimension(name=key, value=value)

    def add_metric(self, name: str, unit: Any, value: float, **_: Any) -> None:
        self._metrics.add_metric(name=name, unit=unit, value=value)

    def flush(self) -> None:
        self._metrics.flush_metrics()


class NoMetrics:
    def add_metric(self, name: str, unit: Any, value: float, **_: Any) -> None:
        """Metrics are off."""

    def flush(self) -> None:
        """Nothing to send."""


def metrics_sink(*, dimensions: Mapping[str, str] | None = None) -> Any:
    backend = _option("metrics", "emf").lower()
    if backend not in METRICS_BACKENDS:
        log.error(
            "[backfill] metrics: expected one of %s, got %r; metrics are off", METRICS_BACKENDS, backend
        )
        return NoMetrics()
    if backend == "statsd":
        return StatsdSink()
    if backend == "emf":
        return EmfSink(_option("metrics_namespace", "BackfillOrchestrator"), dimensions or {})
    return NoMetrics()


def report_metrics(sink: Any, figures: Any, *, seconds: float) -> None:
    """The backfill's outcome as the Lambdas count theirs: steps, duration, partitions, rows."""
    sink.add_metric(name="StepsSucceeded", unit="Count", value=figures.steps_succeeded)
    sink.add_metric(name="StepsFailed", unit="Count", value=figures.steps_failed)
    sink.add_metric(name="StepsNotRun", unit="Count", value=figures.steps_not_run)
    sink.add_metric(name="DagRunsSucceeded", unit="Count", value=figures.dag_runs_succeeded)
    sink.add_metric(name="PartitionsWritten", unit="Count", value=figures.partitions_written)
    sink.add_metric(name="RowsWritten", unit="Count", value=figures.rows_written)
    sink.add_metric(name="BackfillDuration", unit="Seconds", value=round(seconds, 3))


def lineage_settings() -> LineageSettings:
    return LineageSettings.parse(_option("openlineage_transport"), _option("openlineage_namespace"))


def lineage_emitter(*, metrics: Any = None, logger: Any = None) -> LineageEmitter:
    return LineageEmitter.from_settings(lineage_settings(), metrics=metrics, logger=logger)


def backfill_facts(conf: RunConf, plan: Plan, *, namespace: str) -> BackfillFacts:
    """The facts of the run's conf and plan, the same the trigger sent at START."""
    return BackfillFacts(
        backfill_id=conf.backfill_id,
        attempt=conf.attempt,
        namespace=namespace,
        config_uri=conf.config_uri,
        dates=[day.isoformat() for day in plan.dates],
        hours=plan.hours,
        feeds=plan.feeds,
        submitter=plan.owner,
        trace_id=conf.trace_id,
    )
