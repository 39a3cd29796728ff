"""The one notification entry point for every component (trigger, DAG, replay).

    notifier.slack(backfill_id, message)            # first call starts the thread, later ones reply
    notifier.slack(backfill_id, message, record=r)  # the thread from a record in hand: no table read
    notifier.page(backfill_id, summary=..., enabled=config.notify.pagerduty)
    notifier.resolve(backfill_id, enabled=...)

Notifications never fail a backfill: whatever goes wrong in Slack or PagerDuty handling
(a refusal, an outage, an answer we did not expect, a bug) is logged without secrets,
counted in metrics (`SlackFailures`, `PagerDutyFailures`) and reported as False.
Build one with `notify.factory.build_notifier`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from backfill_orchestrator.notify.pagerduty import PagerDutyClient, PagerDutyError, Severity
from backfill_orchestrator.notify.slack import SlackClient, SlackError, SlackMessage
from backfill_orchestrator.status import StatusRecord, StatusStore, StatusStoreError

logger = logging.getLogger(__name__)
MAX_REMEMBERED_THREADS = 1000
Client = TypeVar("Client")


class Deferred(Generic[Client]):
    """A client made on its first use, once (`build` returns None when it cannot be made: that
    channel is off), so a notifier that never pages never reads the pager's secret."""

    def __init__(self, build: Callable[[], Client | None]):
        self._build: Callable[[], Client | None] | None = build
        self._client: Client | None = None
        self._lock = threading.Lock()

    def get(self) -> Client | None:
        with self._lock:
            if self._build is not None:
                self._client, self._build = self._build(), None
            return self._client


class MetricsSink(Protocol):
    """What we need of powertools `Metrics`."""

    def add_metric(self, name: str, unit: Any, value: float) -> None: ...


class Notifier:
    def __init__(
        self,
        *,
        slack: SlackClient | Deferred[SlackClient] | None,
        pagerduty: PagerDutyClient | Deferred[PagerDutyClient] | None,
        status_store: StatusStore | None = None,
        default_channel: str | None = None,
        metrics: MetricsSink | None = None,
    ):
        """`status_store` keeps each backfill's Slack thread (channel, ts) on its record so
        every component replies in the same thread; without it every message is top-level.
        A `Deferred` client is made when the first message needs it."""
        self._slack_client = slack
        self._pagerduty_client = pagerduty
        self._store = status_store
        self._default_channel = default_channel
        self._metrics = metrics
        self._threads: dict[str, tuple[str, str]] = {}  # threads this notifier started or stored

    @property
    def _slack(self) -> SlackClient | None:
        client = self._slack_client
        return client.get() if isinstance(client, Deferred) else client

    @property
    def _pagerduty(self) -> PagerDutyClient | None:
        client = self._pagerduty_client
        return client.get() if isinstance(client, Deferred) else client

    def slack(
        self,
        backfill_id: str | None,
        message: SlackMessage,
        *,
        channel: str | None = None,
        record: StatusRecord | None = None,
    ) -> bool:
        """Post to the backfill's thread (starting it if there is none yet). `channel`
        (e.g. the config's notify.slack_channel) applies when a thread starts. `record` is the
        backfill's status record as the caller holds it (returned by its own last write): its
        thread is used as is, without reading the table again. True if sent."""
        slack = self._slack
        if slack is None:
            return False
        try:
            thread_channel, thread_ts = self._thread(backfill_id, record)
            target = thread_channel or channel or self._default_channel
            posted = slack.post(message, channel=target, thread_ts=thread_ts)
            if posted and backfill_id and not thread_ts:
                self.remember_thread(backfill_id, posted.channel, posted.ts)
                if self._store is not None:
                    # Another component may have started the thread meanwhile: reply to that one from now on.
                    stored_ts = self._store.set_slack_thread(
                        backfill_id, channel=posted.channel, ts=posted.ts
                    )
                    self._threads[backfill_id] = (posted.channel, stored_ts)
            return True
        except (SlackError, StatusStoreError) as error:
            logger.warning("Slack notification not sent: %s", error)
        except Exception as error:  # noqa: BLE001 - nothing here may fail a backfill
            logger.error("Slack notification not sent: unexpected %s", _describe(error))
        self._count("SlackFailures")
        return False

    def open_thread(
        self,
        backfill_id: str,
        message: SlackMessage,
        *,
        channel: str | None = None,
        record: StatusRecord | None = None,
    ) -> tuple[str, str] | None:
        """Post the message that starts the backfill's thread and leave storing it to the
        caller: the (channel, ts) to carry on the caller's next status write (one round trip
        fewer than `slack`). None when nothing is to be stored: the record already has a
        thread (the message is a reply in it), the transport has no threads, or nothing was
        sent (counted and logged as `slack` does)."""
        slack = self._slack
        if slack is None:
            return None
        try:
            thread_channel, thread_ts = self._thread(backfill_id, record)
            posted = slack.post(
                message, channel=thread_channel or channel or self._default_channel, thread_ts=thread_ts
            )
            if posted is None or thread_ts or not slack.supports_threads:
                return None
            self.remember_thread(backfill_id, posted.channel, posted.ts)
            return posted.channel, posted.ts
        except SlackError as error:
            logger.warning("Slack notification not sent: %s", error)
        except Exception as error:  # noqa: BLE001 - nothing here may fail a backfill
            logger.error("Slack notification not sent: unexpected %s", _describe(error))
        self._count("SlackFailures")
        return None

    def remember_thread(self, backfill_id: str, channel: str | None, ts: str | None) -> None:
        """The thread a write stored for the backfill (it may be another component's)."""
        if not channel or not ts:
            return
        if len(self._threads) >= MAX_REMEMBERED_THREADS:  # a long-lived notifier stays bounded
            self._threads.clear()
        self._threads[backfill_id] = (channel, ts)

    def page(
        self,
        backfill_id: str,
        *,
        summary: str,
        enabled: bool = True,
        severity: Severity = "critical",
        component: str = "trigger",
        details: dict[str, Any] | None = None,
        links: list[dict[str, str]] | None = None,
    ) -> bool:
        """Open (or add to) the backfill's incident. `enabled` is the config's notify.pagerduty."""
        pagerduty = self._pagerduty if enabled else None  # its secret is read only to send
        if pagerduty is None:
            return False
        return self._pagerduty_call(
            "trigger",
            lambda: pagerduty.trigger(
                dedup_key=backfill_id,
                summary=summary,
                severity=severity,
                component=component,
                group="backfill",
                event_class="system_failure",
                custom_details={"backfill_id": backfill_id, **(details or {})},
                links=links,
            ),
            backfill_id=backfill_id,
            incident_open=True,
        )

    def resolve(self, backfill_id: str, *, enabled: bool = True) -> bool:
        """Resolve the backfill's incident (a no-op for PagerDuty when none is open)."""
        pagerduty = self._pagerduty if enabled else None  # its secret is read only to send
        if pagerduty is None:
            return False
        return self._pagerduty_call(
            "resolve",
            lambda: pagerduty.resolve(dedup_key=backfill_id),
            backfill_id=backfill_id,
            incident_open=False,
        )

    # -- internals ---------------------------------------------------------------------
    def _pagerduty_call(
        self, action: str, send: Callable[[], None], *, backfill_id: str, incident_open: bool
    ) -> bool:
        try:
            send()
        except PagerDutyError as error:
            logger.error("PagerDuty %s not sent: %s", action, error)
        except Exception as error:  # noqa: BLE001 - nothing here may fail a backfill
            logger.error("PagerDuty %s not sent: unexpected %s", action, _describe(error))
        else:
            self._mark_incident(backfill_id, open_=incident_open)
            return True
        self._count("PagerDutyFailures")
        return False

    def _thread(self, backfill_id: str | None, record: StatusRecord | None) -> tuple[str | None, str | None]:
        if not backfill_id or self._store is None or not self._slack.supports_threads:  # type: ignore[union-attr]
            return None, None
        if backfill_id in self._threads:
            return self._threads[backfill_id]
        if record is None or record.backfill_id != backfill_id:
            record = self._store.get(backfill_id)
        if record is None or not record.slack_thread_ts:
            return None, None
        return record.slack_channel, record.slack_thread_ts

    def _mark_incident(self, backfill_id: str, *, open_: bool) -> None:
        if self._store is None:
            return
        try:
            self._store.annotate(backfill_id, {"pagerduty_open": open_})
        except Exception as error:  # bookkeeping only; the page itself went out
            logger.warning("could not record the PagerDuty incident state: %s", error)

    def _count(self, name: str) -> None:
        if self._metrics is None:
            return
        try:
            self._metrics.add_metric(name=name, unit="Count", value=1)
        except Exception as error:  # noqa: BLE001 - a metric is not worth a backfill either
            logger.error("could not count %s: %s", name, type(error).__name__)


def _describe(error: Exception) -> str:
    """The type and where it was raised, not the message: a foreign exception (urllib,
    botocore) may quote a URL or body that holds a secret."""
    frame = error.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    where = f" at {frame.tb_frame.f_code.co_filename.rsplit('/', 1)[-1]}:{frame.tb_lineno}" if frame else ""
    return f"{type(error).__name__}{where}"
