"""Slack and PagerDuty clients against the local receivers, which check the documented shapes."""

from __future__ import annotations

import pytest
from pydantic import SecretStr
from slack_sdk.models.blocks import Block

from backfill_local.receivers import PagerDutyReceiver, SlackReceiver
from backfill_orchestrator.http import retrying_session
from backfill_orchestrator.notify import (
    PagerDutyClient,
    PagerDutyError,
    SlackError,
    SlackMessage,
    SlackWebApi,
    SlackWebhook,
    status_message,
)
from backfill_orchestrator.notify.slack import retry_handlers

KEY = "R0UT1NGKEY0F32CHARACTERSTEST0000"


def session():  # noqa: ANN201
    return retrying_session(retries=2, backoff_factor=0.01, backoff_max=0.05)


def fast():  # noqa: ANN201 - slack_sdk's retry handlers with a short backoff
    return retry_handlers(max_retries=2, backoff_factor=0.01)


def test_web_api_posts_and_replies_in_a_thread() -> None:
    with SlackReceiver(token="xoxb-t") as slack:
        api = SlackWebApi(token=SecretStr("xoxb-t"), api_url=slack.api_url, handlers=fast())
        first = api.post(status_message(backfill_id="b", state="TRIGGERED"), channel="#backfills")
        reply = api.post(SlackMessage("later"), channel=first.channel, thread_ts=first.ts)

        assert reply.channel == first.channel
        assert [m["text"] for m in slack.thread(first.ts)] == ["b: TRIGGERED", "later"]


@pytest.mark.parametrize(
    ("token", "message", "thread_ts", "error"),
    [
        ("xoxb-wrong", SlackMessage("x"), None, "invalid_auth"),
        (
            "xoxb-t",
            SlackMessage(
                "x", blocks=(Block.parse({"type": "header", "text": {"type": "mrkdwn", "text": "x"}}),)
            ),
            None,
            "invalid_blocks",
        ),
        ("xoxb-t", SlackMessage(""), None, "no_text"),
        ("xoxb-t", SlackMessage("x"), "999.000001", "thread_not_found"),
    ],
)
def test_web_api_errors_become_slack_errors(
    token: str, message: SlackMessage, thread_ts: str | None, error: str
) -> None:
    with SlackReceiver(token="xoxb-t") as slack:
        api = SlackWebApi(token=SecretStr(token), api_url=slack.api_url, handlers=fast())
        with pytest.raises(SlackError, match=error) as raised:
            api.post(message, channel="#backfills", thread_ts=thread_ts)
        assert "xoxb" not in str(raised.value)
        assert slack.messages == []


def test_webhook_posts_without_threads() -> None:
    with SlackReceiver() as slack:
        hook = SlackWebhook(url=SecretStr(slack.webhook_url), handlers=fast())
        assert hook.post(status_message(backfill_id="b", state="FAILED", detail="x"), channel=None) is None
        (message,) = slack.messages
        assert message["via"] == "webhook" and message["blocks"]


def test_slack_429_is_retried_after_retry_after() -> None:
    with SlackReceiver(token="xoxb-t") as slack:
        slack.fail_next(2, status=429, retry_after=0)
        SlackWebApi(token=SecretStr("xoxb-t"), api_url=slack.api_url, handlers=fast()).post(
            SlackMessage("x"), channel="#c"
        )
        assert slack.requests_seen == 3 and len(slack.messages) == 1


def test_pagerduty_trigger_then_resolve_one_incident() -> None:
    with PagerDutyReceiver(routing_key=KEY) as pagerduty:
        client = PagerDutyClient(
            routing_key=SecretStr(KEY), events_url=pagerduty.events_url, session=session()
        )
        client.trigger(
            dedup_key="b-1",
            summary="Airflow unreachable",
            custom_details={"reason": "500"},
            links=[{"href": "http://airflow", "text": "Airflow"}],
        )
        client.trigger(dedup_key="b-1", summary="Airflow unreachable again")
        assert pagerduty.incidents == {"b-1": "triggered"}
        client.resolve(dedup_key="b-1")

        assert pagerduty.incidents == {"b-1": "resolved"}
        assert [e["event_action"] for e in pagerduty.events] == ["trigger", "trigger", "resolve"]
        assert all("routing_key" not in e for e in pagerduty.events)


def test_pagerduty_refusals_are_named_without_the_key() -> None:
    with PagerDutyReceiver(routing_key=KEY) as pagerduty:
        wrong = PagerDutyClient(
            routing_key=SecretStr("W" * 32), events_url=pagerduty.events_url, session=session()
        )
        with pytest.raises(PagerDutyError, match="Invalid routing key") as raised:
            wrong.trigger(dedup_key="b-1", summary="x")
        assert "W" * 32 not in str(raised.value)
        assert pagerduty.events == []
