"""The trigger's Slack message now goes out before its TRIGGERED write, inside the attempt's
deadline: a Slack that is slow or failing must not hold the outcome past it. Within a
deadline the request's timeout is cut to the time left, retries are dropped when a second
attempt could not end in it, and with no time left nothing is sent."""

from __future__ import annotations

import time

import pytest
from pydantic import SecretStr

from backfill_local.receivers import SlackReceiver
from backfill_orchestrator.deadline import Deadline, deadline_scope
from backfill_orchestrator.notify.slack import SlackError, SlackMessage, SlackWebApi


def test_no_time_left_sends_nothing() -> None:
    with SlackReceiver(token="xoxb-t") as slack:
        api = SlackWebApi(token=SecretStr("xoxb-t"), api_url=slack.api_url)
        with deadline_scope(Deadline.after(0.5)), pytest.raises(SlackError, match="no time left"):
            api.post(SlackMessage("hello"), channel="#c")
        assert slack.requests_seen == 0


def test_a_rate_limited_slack_is_not_retried_past_the_deadline() -> None:
    with SlackReceiver(token="xoxb-t") as slack:
        api = SlackWebApi(token=SecretStr("xoxb-t"), api_url=slack.api_url)
        slack.fail_next(1, status=429, retry_after=0)  # rate limited: retried at once, were there time
        started = time.monotonic()
        with deadline_scope(Deadline.after(5)), pytest.raises(SlackError):
            api.post(SlackMessage("hello"), channel="#c")
        assert (
            slack.requests_seen == 1 and time.monotonic() - started < 5
        )  # one attempt: no time for a second
        # Outside any deadline the configured retries apply again.
        slack.fail_next(1, status=429, retry_after=0)
        assert api.post(SlackMessage("hello"), channel="#c") is not None
        assert slack.requests_seen == 1 + 2 and len(slack.messages) == 1
