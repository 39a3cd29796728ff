"""PagerDuty Events API v2: `trigger` an incident, `resolve` it later with the same
`dedup_key` (the backfill id), so repeated failures collapse into one incident.

Hand-written on the shared retrying HTTP session (`backfill_orchestrator.http`) rather than PagerDuty's own client
(`pagerduty`, successor of the deprecated `pdpyras`): its EventsApiV2Client refuses any
base URL that is not https (so it cannot be pointed at a local or proxied endpoint), always
posts to `<base>/v2/enqueue` (PAGERDUTY_EVENTS_URL is the whole URL), retries 429 without
limit by default, and brings a second HTTP stack (httpx2, httpcore2, anyio) into the layer
for one POST."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import SecretStr

from backfill_orchestrator.errors import ServiceError
from backfill_orchestrator.http import HttpSession, retrying_session

Severity = Literal["critical", "error", "warning", "info"]
MAX_SUMMARY = 1024
MAX_DEDUP_KEY = 255


class PagerDutyError(ServiceError, RuntimeError):
    """PagerDuty did not accept the event (after retries); never carries the routing key."""


class PagerDutyClient:
    def __init__(
        self,
        *,
        routing_key: SecretStr,
        events_url: str = "https://events.pagerduty.com/v2/enqueue",
        source: str = "backfill-orchestrator",
        session: HttpSession | None = None,
    ):
        self._routing_key = routing_key
        self._url = events_url
        self._source = source
        self._session = session or retrying_session()

    def trigger(
        self,
        *,
        dedup_key: str,
        summary: str,
        severity: Severity = "critical",
        component: str | None = None,
        group: str | None = None,
        event_class: str | None = None,
        custom_details: dict[str, Any] | None = None,
        links: list[dict[str, str]] | None = None,
    ) -> None:
        payload: dict[str, Any] = {
            "summary": summary[:MAX_SUMMARY],
            "source": self._source,
            "severity": severity,
        }
        for key, value in (
            ("component", component),
            ("group", group),
            ("class", event_class),
            ("custom_details", custom_details),
        ):
            if value:
                payload[key] = value
        event: dict[str, Any] = {
            "event_action": "trigger",
            "dedup_key": dedup_key[:MAX_DEDUP_KEY],
            "payload": payload,
        }
        if links:
            event["links"] = links
        self._send(event)

    def resolve(self, *, dedup_key: str) -> None:
        self._send({"event_action": "resolve", "dedup_key": dedup_key[:MAX_DEDUP_KEY]})

    def _send(self, event: dict[str, Any]) -> None:
        body = {"routing_key": self._routing_key.get_secret_value(), **event}
        action = event["event_action"]
        try:
            response = self._session.post(self._url, json=body)
        except Exception as error:  # an error may quote the request; say only what kind
            raise PagerDutyError(f"PagerDuty unreachable ({action}): {type(error).__name__}") from None
        if response.status_code != 202:
            raise PagerDutyError(f"PagerDuty refused {action}: {response.status_code} {response.text[:300]}")
