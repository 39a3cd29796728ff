"""Class 3 of "nothing lost": nothing in Slack or PagerDuty handling may fail or page a
backfill. Each problem is counted (`SlackFailures` / `PagerDutyFailures`), logged without
secrets, and the backfill ends exactly as it would with notifications working.

The trigger tests drive the real Lambda handler (trigger/handler.py) on moto, with the
Marquez and Airflow doubles and the local Slack/PagerDuty receivers; metrics are read from
the EMF lines the handler prints, as CloudWatch would."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from pydantic import SecretStr

from backfill_local.receivers import PagerDutyReceiver, SlackReceiver
from backfill_orchestrator.notify import (
    Notifier,
    PagerDutyClient,
    SlackMessage,
    SlackWebApi,
    SlackWebhook,
    build_notifier,
)
from backfill_orchestrator.notify.slack import retry_handlers
from backfill_orchestrator.secrets import SecretReader
from backfill_orchestrator.settings import NotifySettings
from backfill_orchestrator.status import BackfillState
from backfill_orchestrator.trigger import TriggerFailedError
from backfill_orchestrator.trigger import handler as trigger_handler
from tests.support.lambda_context import FakeLambdaContext
from tests.support.trigger import ROUTING_KEY, SLACK_TOKEN, VALID, TriggerHarness, free_port


class SlackAnswering(SlackReceiver):
    """Accepts and records chat.postMessage like Slack, then answers with `body` instead."""

    def __init__(self, body: bytes, **kwargs: Any):
        super().__init__(token=SLACK_TOKEN, **kwargs)
        self.body = body

    def handle(self, path: str, headers: Any, body: bytes) -> tuple[int, str, bytes, dict[str, str]]:
        status, content_type, _, extra = super().handle(path, headers, body)
        return status, content_type, self.body, extra


class Counter:
    def __init__(self) -> None:
        self.counts: dict[str, float] = {}

    def add_metric(self, name: str, unit: Any, value: float, **kwargs: Any) -> None:
        self.counts[name] = self.counts.get(name, 0) + value


def emitted_metrics(printed: str) -> dict[str, float]:
    """Totals of every metric in the EMF documents among the printed lines."""
    totals: dict[str, float] = {}
    for line in printed.splitlines():
        try:
            document = json.loads(line)
        except ValueError:
            continue
        if not isinstance(document, dict) or "_aws" not in document:
            continue
        for directive in document["_aws"]["CloudWatchMetrics"]:
            for metric in directive["Metrics"]:
                value = document[metric["Name"]]
                totals[metric["Name"]] = totals.get(metric["Name"], 0) + sum(
                    value if isinstance(value, list) else [value]
                )
    return totals


@pytest.fixture
def lambda_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Point the real handler at a harness (its environment, a fresh container, no metrics left
    from earlier tests); the handler's JSON log lines, the package's loggers' too (the running
    handler owns them), go to `lambda_env.logs`."""
    log_stream = io.StringIO()
    log_handler = trigger_handler.logger.registered_handler
    previous, log_handler.stream = log_handler.stream, log_stream

    with ExitStack() as containers:

        def apply(harness: TriggerHarness, **overrides: str) -> None:
            for name, value in {**harness.env, **overrides}.items():
                monkeypatch.setenv(name, value)
            containers.enter_context(trigger_handler.trigger_wiring())  # built from this environment
            trigger_handler.metrics.clear_metrics()  # Metrics instances share one store

        apply.logs = log_stream  # type: ignore[attr-defined]
        try:
            yield apply
        finally:
            log_handler.stream = previous


def invoke_handler(event: dict[str, Any]) -> dict[str, Any]:
    return trigger_handler.handler(event, FakeLambdaContext())


SLACK_ANSWERS = {  # what Slack (or something in front of it) answers -> what the log says
    "ok without ts": (json.dumps({"ok": True, "channel": "C0000000001"}).encode(), "without a message ts"),
    "ts null": (
        json.dumps({"ok": True, "channel": "C0000000001", "ts": None}).encode(),
        "without a message ts",
    ),
    "not JSON": (b"<html>gateway says hello</html>", "chat.postMessage refused"),
    "a JSON list": (b"[]", "chat.postMessage refused"),
}


@pytest.mark.parametrize("answer", list(SLACK_ANSWERS), ids=list(SLACK_ANSWERS))
def test_an_unexpected_slack_answer_neither_fails_nor_pages_the_backfill(
    mocked_aws: None, lambda_env: Any, capsys: pytest.CaptureFixture[str], answer: str
) -> None:
    with ExitStack() as stack:
        body, logged = SLACK_ANSWERS[answer]
        slack = stack.enter_context(SlackAnswering(body))
        harness = TriggerHarness(stack)
        lambda_env(harness, SLACK_API_URL=slack.api_url)
        capsys.readouterr()

        response = invoke_handler(harness.upload(VALID))

        (result,) = response["results"]
        assert (result["disposition"], result["state"], result["retry"]) == ("accepted", "TRIGGERED", False)
        record = harness.status.get(result["backfill_id"])
        assert record.state is BackfillState.TRIGGERED
        assert record.slack_thread_ts is None  # no ts: no thread remembered
        assert not record.pagerduty_open
        assert len(harness.airflow.runs) == 1
        assert harness.result_file()["outcome"] == "accepted"
        assert harness.pagerduty.events == []  # nobody paged
        assert len(slack.messages) == 1  # Slack did get the message
        printed = capsys.readouterr().out
        assert emitted_metrics(printed) == {"Received": 1, "Triggered": 1, "SlackFailures": 1}
        logs = lambda_env.logs.getvalue()
        assert "Slack notification not sent: chat.postMessage" in logs and logged in logs
        assert SLACK_TOKEN not in printed + logs and ROUTING_KEY not in printed + logs


def test_pagerduty_refusing_the_resolve_leaves_the_retried_backfill_triggered(
    mocked_aws: None, lambda_env: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Attempt 1 fails (Airflow down) and pages; the retry succeeds while PagerDuty refuses
    events: the backfill is TRIGGERED, the handler returns, the failed resolve is only counted."""
    with ExitStack() as stack:
        harness = TriggerHarness(stack)
        event = harness.upload(VALID)
        harness.airflow.fail_next(3, status=500)  # the first try and both retries of the harness's session
        with pytest.raises(TriggerFailedError):
            harness.invoke(event)
        (page,) = harness.pagerduty.events
        backfill_id = page["dedup_key"]
        assert harness.status.get(backfill_id).pagerduty_open
        harness.pagerduty.fail_next(1, status=400)  # not retried: refused at once
        lambda_env(harness)
        capsys.readouterr()

        response = invoke_handler(event)

        assert [(r["disposition"], r["state"]) for r in response["results"]] == [("accepted", "TRIGGERED")]
        assert harness.status.get(backfill_id).state is BackfillState.TRIGGERED
        assert harness.status.get(backfill_id).pagerduty_open  # still open: the resolve did not go out
        assert [e["event_action"] for e in harness.pagerduty.events] == ["trigger"]
        printed = capsys.readouterr().out
        assert emitted_metrics(printed)["PagerDutyFailures"] == 1
        logs = lambda_env.logs.getvalue()
        assert "PagerDuty resolve not sent" in logs and ROUTING_KEY not in printed + logs


@pytest.mark.parametrize("secret", ["missing", "malformed"])
def test_an_unreadable_slack_secret_turns_slack_off_without_failing(
    mocked_aws: None, lambda_env: Any, capsys: pytest.CaptureFixture[str], secret: str
) -> None:
    with ExitStack() as stack:
        harness = TriggerHarness(stack)
        secret_id = "backfill/does-not-exist"
        if secret == "malformed":
            secret_id = harness.secrets.create_secret(
                Name="backfill/slack-bad", SecretString='{"token": "xoxb-not-here"}'
            )["ARN"]
        lambda_env(harness, SLACK_SECRET_ID=secret_id)
        capsys.readouterr()

        (result,) = invoke_handler(harness.upload(VALID))["results"]

        assert (result["disposition"], result["state"]) == ("accepted", "TRIGGERED")
        assert harness.slack.messages == [] and harness.pagerduty.events == []
        printed = capsys.readouterr().out
        assert emitted_metrics(printed)["SlackFailures"] == 1
        logs = lambda_env.logs.getvalue()
        assert "Slack is off for now" in logs and "xoxb-not-here" not in printed + logs


# -- the Notifier and the factory, without a Lambda ----------------------------------------------
class Exploding:
    """A transport or store that fails in a way nobody planned for."""

    supports_threads = True

    def __init__(self, error: Exception):
        self.error = error

    def post(self, *args: Any, **kwargs: Any) -> None:
        raise self.error

    def trigger(self, **kwargs: Any) -> None:
        raise self.error

    def resolve(self, **kwargs: Any) -> None:
        raise self.error

    def get(self, backfill_id: str) -> None:
        raise self.error


SECRET_IN_MESSAGE = "https://hooks.slack.com/services/T0/B0/s3cr3t"
MENTION_TEXT = "<!channel>"


@pytest.mark.parametrize(
    "error",
    [KeyError("ts"), TypeError("not JSON serializable"), RuntimeError(f"failed POST {SECRET_IN_MESSAGE}")],
)
def test_any_exception_from_slack_or_pagerduty_is_counted_and_logged_without_its_message(
    caplog: pytest.LogCaptureFixture, error: Exception
) -> None:
    counter = Counter()
    notifier = Notifier(
        slack=Exploding(error), pagerduty=Exploding(error), default_channel="#c", metrics=counter
    )  # type: ignore[arg-type]
    with caplog.at_level(logging.INFO):
        assert notifier.slack("b-1", SlackMessage("x")) is False
        assert notifier.page("b-1", summary="x") is False
        assert notifier.resolve("b-1") is False
    assert counter.counts == {"SlackFailures": 1, "PagerDutyFailures": 2}
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert type(error).__name__ in logged and "s3cr3t" not in logged


def test_a_status_store_failing_while_threading_is_a_slack_failure_not_a_crash() -> None:
    counter = Counter()
    notifier = Notifier(
        slack=Exploding(RuntimeError("unused")),  # type: ignore[arg-type]
        pagerduty=None,
        status_store=Exploding(ConnectionError("dynamodb")),  # type: ignore[arg-type]
        metrics=counter,
    )
    assert notifier.slack("b-1", SlackMessage("x"), channel="#c") is False
    assert counter.counts == {"SlackFailures": 1}


def test_a_broken_metrics_sink_does_not_break_the_notifier() -> None:
    class Broken:
        def add_metric(self, **kwargs: Any) -> None:
            raise RuntimeError("EMF buffer full")

    notifier = Notifier(
        slack=Exploding(KeyError("ts")), pagerduty=None, default_channel="#c", metrics=Broken()
    )  # type: ignore[arg-type]
    assert notifier.slack("b-1", SlackMessage("x")) is False


def test_an_unreachable_webhook_never_shows_its_url(caplog: pytest.LogCaptureFixture) -> None:
    url = f"http://127.0.0.1:{free_port()}/services/T0/B0/s3cr3t"  # nothing listens there
    counter = Counter()
    hook = SlackWebhook(url=SecretStr(url), handlers=retry_handlers(max_retries=1, backoff_factor=0.01))
    notifier = Notifier(slack=hook, pagerduty=None, metrics=counter)
    with caplog.at_level(logging.DEBUG):
        assert notifier.slack("b-1", SlackMessage("x")) is False
    assert counter.counts == {"SlackFailures": 1}
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "Slack webhook unreachable: URLError" in logged
    assert "s3cr3t" not in logged


def test_an_unreachable_pagerduty_never_shows_its_routing_key(caplog: pytest.LogCaptureFixture) -> None:
    from backfill_orchestrator.http import retrying_session

    client = PagerDutyClient(
        routing_key=SecretStr(ROUTING_KEY),
        events_url=f"http://127.0.0.1:{free_port()}/v2/enqueue",
        session=retrying_session(retries=1, backoff_factor=0.01),
    )
    counter = Counter()
    with caplog.at_level(logging.DEBUG):
        assert Notifier(slack=None, pagerduty=client, metrics=counter).page("b-1", summary="x") is False
    assert counter.counts == {"PagerDutyFailures": 1}
    assert ROUTING_KEY not in "\n".join(record.getMessage() for record in caplog.records)


class FailingSecrets(SecretReader):
    def __init__(self, error: Exception):
        self.error = error

    def slack(self, secret_id: str):  # noqa: ANN201
        raise self.error

    def pagerduty_routing_key(self, secret_id: str):  # noqa: ANN201
        raise self.error


def test_the_factory_turns_a_channel_off_when_its_secret_cannot_be_read(
    caplog: pytest.LogCaptureFixture,
) -> None:
    counter = Counter()
    settings = NotifySettings(slack_secret_id="s", slack_channel="#c", pagerduty_secret_id="p")
    with caplog.at_level(logging.INFO):
        notifier = build_notifier(
            settings=settings,
            secrets=FailingSecrets(RuntimeError(f"boom {SECRET_IN_MESSAGE}")),
            metrics=counter,
        )
    assert counter.counts == {}  # each client is made, and its secret read, on its first message
    assert notifier.slack("b-1", SlackMessage("x")) is False and notifier.page("b-1", summary="x") is False
    assert counter.counts == {"SlackFailures": 1, "PagerDutyFailures": 1}
    assert notifier.slack("b-1", SlackMessage("x")) is False and notifier.page("b-1", summary="x") is False
    assert counter.counts == {"SlackFailures": 1, "PagerDutyFailures": 1}  # off, not failing again
    assert "s3cr3t" not in caplog.text


def test_the_dags_reporting_survives_an_unreadable_secret_and_slack_without_ts(
    mocked_aws: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The DAG builds its Notifier with the same factory: a PagerDuty secret that is gone and
    a Slack that answers ok without a ts leave the task to finish normally."""
    import boto3
    from backfill_runtime import reporting as reporting_module

    secrets = boto3.client("secretsmanager", region_name="us-east-1")
    slack_arn = secrets.create_secret(
        Name="backfill/slack", SecretString=json.dumps({"bot_token": SLACK_TOKEN})
    )["ARN"]
    body, _ = SLACK_ANSWERS["ok without ts"]
    with SlackAnswering(body) as slack, PagerDutyReceiver(routing_key=ROUTING_KEY) as pagerduty:
        options = {
            "slack_secret_id": slack_arn,
            "slack_api_url": slack.api_url,
            "slack_channel": "#backfills",
            "pagerduty_secret_id": "backfill/pagerduty-gone",
            "pagerduty_events_url": pagerduty.events_url,
        }
        monkeypatch.setattr(reporting_module, "_option", lambda key, default="": options.get(key, default))
        with caplog.at_level(logging.INFO):
            reporting = reporting_module.Reporting.from_options()
            reporting.refused(backfill_id="b-1", problems=[f"conf: {MENTION_TEXT}"], run_url=None)

        (message,) = slack.messages
        assert "&lt;!channel&gt;" in message["text"]
        assert pagerduty.events == [] and pagerduty.requests_seen == 0
        # Nothing paged, so the gone secret was never read (PagerDuty's client is made on first use).
        assert "PagerDuty is off for now" not in caplog.text
        assert "without a message ts" in caplog.text
        assert SLACK_TOKEN not in caplog.text


def test_a_long_slack_rate_limit_is_a_counted_failure_not_a_stalled_invocation() -> None:
    """Retry-After: 3600 is not waited for (bounded at 30 s); a short one is."""
    import time

    counter = Counter()
    with SlackReceiver(token=SLACK_TOKEN) as slack:
        notifier = Notifier(
            slack=SlackWebApi(token=SecretStr(SLACK_TOKEN), api_url=slack.api_url),
            pagerduty=None,
            metrics=counter,
        )
        slack.fail_next(1, status=429, retry_after=3600)
        started = time.monotonic()
        assert notifier.slack("b-1", SlackMessage("x"), channel="#c") is False
        assert time.monotonic() - started < 5
        assert counter.counts == {"SlackFailures": 1} and slack.requests_seen == 1

        slack.fail_next(1, status=429, retry_after=0)
        assert notifier.slack("b-2", SlackMessage("y"), channel="#c") is True
        assert slack.requests_seen == 3 and [m["text"] for m in slack.messages] == ["y"]
