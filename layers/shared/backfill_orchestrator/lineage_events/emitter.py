"""Sending events through the openlineage-python client; a failure is logged and counted,
never raised (a lineage backend that is down must not fail a backfill).

Settings: a transport (the client's own config dict: `{"type": "http", "url": ...,
"endpoint": "api/v1/lineage"}`, `{"type": "console"}`, `{"type": "file", "log_file_path": ...,
"append": true}`) and the backfill jobs' namespace. No transport: nothing is emitted."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from backfill_orchestrator.lineage_events.facts import DEFAULT_NAMESPACE, BackfillFacts, FinalState

if TYPE_CHECKING:
    from backfill_orchestrator.contracts import RunReport


TRANSPORT_VARIABLE = "OPENLINEAGE_TRANSPORT"  # JSON, the client's transport config
NAMESPACE_VARIABLE = "OPENLINEAGE_NAMESPACE"
FAILURE_METRIC = "LineageEventsFailed"
DEFAULT_HTTP_TIMEOUT = 5.0  # seconds: a slow Marquez delays a task by at most this per event
DEFAULT_HTTP_RETRY = {"total": 2, "backoff_factor": 0.5}  # the client's default retries 5 times
MAX_CONSECUTIVE_FAILURES = (
    3  # then the emitter stops trying: a dead Marquez costs a task seconds, not minutes
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LineageSettings:
    transport: Mapping[str, Any] | None = None  # None: lineage events are off
    namespace: str = DEFAULT_NAMESPACE
    problem: str | None = None  # why a configured transport was not usable (then it is off)

    @classmethod
    def parse(cls, transport: str | None, namespace: str | None = None) -> LineageSettings:
        """From text settings (an environment variable, an Airflow option). A transport that is
        not a JSON object with a `type` turns events off and says why (see `problem`)."""
        namespace = (namespace or "").strip() or DEFAULT_NAMESPACE
        text = (transport or "").strip()
        if not text:
            return cls(namespace=namespace)
        try:
            value = json.loads(text)
        except json.JSONDecodeError as error:
            return cls(namespace=namespace, problem=f"not JSON ({error.msg} at column {error.colno})")
        if not isinstance(value, dict) or not isinstance(value.get("type"), str):
            return cls(
                namespace=namespace, problem='expected a JSON object with a "type" (http, console, file, ...)'
            )
        if value["type"] == "http":
            value = {
                "timeout": DEFAULT_HTTP_TIMEOUT,
                "endpoint": "api/v1/lineage",
                "retry": DEFAULT_HTTP_RETRY,
                **value,
            }
        return cls(transport=value, namespace=namespace)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> LineageSettings:
        return cls.parse(environ.get(TRANSPORT_VARIABLE), environ.get(NAMESPACE_VARIABLE))


@dataclass
class LineageEmitter:
    """`client` is an OpenLineageClient (anything with `emit(event)`), or None when off."""

    client: Any
    namespace: str = DEFAULT_NAMESPACE
    metrics: Any = None  # add_metric(name=, unit=, value=): the Lambda's or the DAG's sink
    logger: Any = field(default_factory=lambda: log)
    sent: int = 0
    failed: int = 0
    consecutive_failures: int = 0

    @classmethod
    def from_settings(
        cls, settings: LineageSettings, *, metrics: Any = None, logger: Any = None
    ) -> LineageEmitter:
        logger = logger or log
        if settings.problem:
            logger.error(
                "OpenLineage events are off: the transport setting is unusable: %s", settings.problem
            )
        client = None
        if settings.transport is not None:
            try:
                from openlineage.client import OpenLineageClient

                client = OpenLineageClient(config={"transport": dict(settings.transport)})
            except Exception as error:  # a bad transport config: say so, never fail the backfill
                logger.error(
                    "OpenLineage events are off: transport %s: %s", settings.transport.get("type"), error
                )
                cls._count(metrics)
        return cls(client=client, namespace=settings.namespace, metrics=metrics, logger=logger)

    @property
    def enabled(self) -> bool:
        return self.client is not None

    def facts(self, **values: Any) -> BackfillFacts:
        return BackfillFacts(namespace=self.namespace, **values)

    def emit(self, event: Any) -> bool:
        if self.client is None:
            return False
        if self.consecutive_failures >= MAX_CONSECUTIVE_FAILURES:
            self.failed += 1
            self._count(self.metrics)
            return False
        try:
            self.client.emit(event)
        except Exception as error:  # Marquez down, refusing, or slow: the backfill goes on
            self.failed += 1
            self.consecutive_failures += 1
            if self.consecutive_failures == MAX_CONSECUTIVE_FAILURES:
                self.logger.error(
                    "OpenLineage: %d failures in a row; not sending more events from here", self.failed
                )
            self.logger.warning(
                "OpenLineage %s event for %s/%s not sent: %s: %s",
                event.eventType.value,
                event.job.namespace,
                event.job.name,
                type(error).__name__,
                str(error)[:300],
            )
            self._count(self.metrics)
            return False
        self.sent += 1
        self.consecutive_failures = 0
        return True

    @staticmethod
    def _count(metrics: Any) -> None:
        if metrics is not None:
            try:
                metrics.add_metric(name=FAILURE_METRIC, unit="Count", value=1)
            except Exception:  # a metrics sink must not turn a lineage hiccup into a failure
                log.exception("could not count %s", FAILURE_METRIC)


def backfill_started(emitter: LineageEmitter, facts: BackfillFacts, *, when: datetime | None = None) -> bool:
    """START of the backfill run: when the trigger has triggered the DAG run."""
    if not emitter.enabled:
        return False
    from backfill_orchestrator.lineage_events.events import backfill_event

    return emitter.emit(backfill_event(facts, "START", when=when))


def backfill_finished(
    emitter: LineageEmitter,
    facts: BackfillFacts,
    state: FinalState,
    *,
    reason: str | None = None,
    when: datetime | None = None,
) -> bool:
    """COMPLETE, FAIL or ABORT of the backfill run."""
    if not emitter.enabled:
        return False
    from backfill_orchestrator.lineage_events.events import backfill_event

    return emitter.emit(backfill_event(facts, state, when=when, reason=reason))


def backfill_aborted(
    emitter: LineageEmitter, facts: BackfillFacts, *, reason: str | None = None, when: datetime | None = None
) -> bool:
    """ABORT of the backfill run: for the cancel path (a cancelled backfill)."""
    return backfill_finished(emitter, facts, "ABORT", reason=reason or "cancelled", when=when)


def spark_steps(emitter: LineageEmitter, facts: BackfillFacts, report: RunReport, *, warehouse: str) -> int:
    """The Spark steps of one run report as child runs of the backfill run; returns how many
    events were sent."""
    if not emitter.enabled:
        return 0
    from backfill_orchestrator.lineage_events.events import step_events

    return sum(emitter.emit(event) for event in step_events(facts, report, warehouse=warehouse))


def dag_reruns(
    emitter: LineageEmitter, facts: BackfillFacts, *, step_id: str, dag_id: str, dates: dict[str, str]
) -> int:
    """A DAG step's reruns (date -> rerun task state) as child runs of the backfill run."""
    if not emitter.enabled:
        return 0
    from backfill_orchestrator.lineage_events.events import dag_rerun_events

    return sum(emitter.emit(e) for e in dag_rerun_events(facts, step_id=step_id, dag_id=dag_id, dates=dates))


def backfill_undone(
    emitter: LineageEmitter,
    facts: BackfillFacts,
    restored: Mapping[str, Sequence[str]],
    *,
    when: datetime | None = None,
) -> int:
    """An undo as a child run of the backfill run whose outputs are the restored partitions;
    returns how many events were sent (at least once: its run id is fixed per attempt)."""
    if not emitter.enabled:
        return 0
    from backfill_orchestrator.lineage_events.events import undo_events

    return sum(emitter.emit(event) for event in undo_events(facts, restored, when=when))
