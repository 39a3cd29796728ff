"""Slack messages and the Notifier's rules, without network: transports are in-memory."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from typing import Any

import pytest

from backfill_local.receivers import check_blocks
from backfill_orchestrator.config import ConfigIssue
from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.notify import (
    Notifier,
    PagerDutyError,
    PostedMessage,
    SlackClient,
    SlackError,
    SlackMessage,
    already_known_message,
    backfill_message,
    rejection_message,
    status_message,
)
from tests.support.configs import NOTIFIED_CONFIG as CONFIG


def make_plan(waves: int, steps_per_wave: int) -> Plan:
    job = {"namespace": "food_delivery", "name": "etl_orders"}
    document = {
        "backfill_id": "orders-fix-1a2b3c4d",
        "name": "orders-fix",
        "owner": "co@example.com",
        "created_at": datetime(2021, 6, 14, tzinfo=UTC),
        "roots": [job],
        "dates": [date(2021, 6, 4)],
        "waves": [
            {
                "index": w,
                "steps": [
                    {
                        "id": f"dag_{w}_{s}_" + "x" * 40,
                        "job": job,
                        "dag_id": f"dag_{w}_{s}",
                        "kind": "airflow_dag",
                        "dates": [date(2021, 6, 4)],
                        "reason": "root" if w == 0 else "downstream",
                    }
                    for s in range(steps_per_wave)
                ],
            }
            for w in range(waves)
        ],
    }
    return Plan.model_validate(document)


class MemorySlack(SlackClient):
    supports_threads = True

    def __init__(self, *, fail: bool = False):
        self.posts: list[dict[str, Any]] = []
        self.fail = fail

    def post(
        self, message: SlackMessage, *, channel: str | None, thread_ts: str | None = None
    ) -> PostedMessage | None:
        if self.fail:
            raise SlackError("chat.postMessage answered 503")
        self.posts.append({"channel": channel, "thread_ts": thread_ts, "message": message})
        return PostedMessage(channel="C42", ts=f"{len(self.posts)}.0")


class MemoryPagerDuty:
    def __init__(self, *, fail: bool = False):
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.fail = fail

    def trigger(self, **event: Any) -> None:
        if self.fail:
            raise PagerDutyError("PagerDuty refused trigger: 500")
        self.events.append(("trigger", event))

    def resolve(self, *, dedup_key: str) -> None:
        self.events.append(("resolve", {"dedup_key": dedup_key}))


class MemoryThreads:
    """The two StatusStore calls the Notifier makes."""

    def __init__(self) -> None:
        self.threads: dict[str, tuple[str, str]] = {}
        self.incidents: dict[str, bool] = {}

    def get(self, backfill_id: str):  # noqa: ANN201
        channel, ts = self.threads.get(backfill_id, (None, None))
        return type("Record", (), {"slack_channel": channel, "slack_thread_ts": ts})()

    def set_slack_thread(self, backfill_id: str, *, channel: str, ts: str) -> str:
        self.threads.setdefault(backfill_id, (channel, ts))
        return self.threads[backfill_id][1]

    def annotate(self, backfill_id: str, attributes: dict[str, Any]) -> None:
        self.incidents[backfill_id] = attributes["pagerduty_open"]


class Counter:
    def __init__(self) -> None:
        self.counts: dict[str, float] = {}

    def add_metric(self, name: str, unit: Any, value: float, **kwargs: Any) -> None:
        self.counts[name] = self.counts.get(name, 0) + value


# -- messages -----------------------------------------------------------------------------------
def test_backfill_message_has_the_facts_and_links_in_valid_block_kit() -> None:
    message = backfill_message(
        config=CONFIG,
        backfill_id="orders-fix-1a2b3c4d",
        plan=make_plan(2, 2),
        state="TRIGGERED",
        run_url="http://airflow/dags/backfill/runs/orders-fix-1a2b3c4d",
        lineage_url="http://marquez/lineage/job/x/y",
    )
    check_blocks(message.block_dicts())
    text = json.dumps(message.block_dicts())
    for fact in (
        "orders-fix-1a2b3c4d",
        "co@example.com",
        "batch",
        "2021-06-04, 06-10..06-12 (4 days)",
        "Wave 1",
        "Wave 2",
        "http://airflow/dags/backfill/runs/",
        "http://marquez/lineage/job/x/y",
    ):
        assert fact in text
    assert "orders-fix-1a2b3c4d" in message.text


def test_a_huge_plan_is_clipped_to_slacks_limits() -> None:
    message = backfill_message(config=CONFIG, backfill_id="b", plan=make_plan(400, 5), state="PLANNED")
    check_blocks(message.block_dicts())
    assert "more waves" in json.dumps(message.block_dicts())


def test_rejection_lists_located_errors_escaped_and_clipped() -> None:
    issues = [ConfigIssue(f"jobs[{i}].name", "<b>not</b> & known") for i in range(30)]
    message = rejection_message(source_uri="s3://b/incoming/x.yaml", issues=issues)
    check_blocks(message.block_dicts())
    text = json.dumps(message.block_dicts())
    assert "jobs[19].name" in text and "jobs[20].name" not in text and "10 more" in text
    assert "&lt;b&gt;not&lt;/b&gt; &amp; known" in text and "<b>" not in text


def test_other_messages_are_valid_block_kit() -> None:
    for message in (
        already_known_message(
            backfill_id="b", state="TRIGGERED", source_uri="s3://b/k", run_url="http://a/r"
        ),
        status_message(backfill_id="b", state="SUCCEEDED", detail="3 waves done"),
    ):
        check_blocks(message.block_dicts())


def test_check_blocks_is_strict() -> None:
    with pytest.raises(ValueError, match="longer than 150"):
        check_blocks([{"type": "header", "text": {"type": "plain_text", "text": "x" * 151}}])
    with pytest.raises(ValueError, match="unknown block type"):
        check_blocks([{"type": "table"}])


# -- notifier -----------------------------------------------------------------------------------
def test_first_message_starts_the_thread_and_later_ones_reply() -> None:
    slack, threads = MemorySlack(), MemoryThreads()
    notifier = Notifier(slack=slack, pagerduty=None, status_store=threads, default_channel="#backfills")

    assert notifier.slack("b-1", SlackMessage("first"), channel="#orders")
    assert notifier.slack("b-1", SlackMessage("second"), channel="#ignored-once-threaded")
    assert [(p["channel"], p["thread_ts"]) for p in slack.posts] == [("#orders", None), ("C42", "1.0")]
    notifier.slack("b-2", SlackMessage("other"))
    assert slack.posts[-1]["channel"] == "#backfills"


def test_open_thread_posts_and_leaves_storing_the_thread_to_the_callers_write() -> None:
    slack, threads, counter = MemorySlack(), MemoryThreads(), Counter()
    notifier = Notifier(
        slack=slack, pagerduty=None, status_store=threads, default_channel="#backfills", metrics=counter
    )

    assert notifier.open_thread("b-1", SlackMessage("triggered"), channel="#orders") == ("C42", "1.0")
    assert threads.threads == {}  # no write of its own: the caller's status write carries it
    assert notifier.slack("b-1", SlackMessage("later"))  # the same notifier replies in it
    assert slack.posts[-1]["thread_ts"] == "1.0"
    # A record that has a thread already: a reply, nothing to store.
    threads.threads["b-2"] = ("C7", "7.0")
    assert notifier.open_thread("b-2", SlackMessage("triggered")) is None
    assert (slack.posts[-1]["channel"], slack.posts[-1]["thread_ts"]) == ("C7", "7.0")
    # Nothing sent: nothing to store, counted, never raised.
    failing = Notifier(slack=MemorySlack(fail=True), pagerduty=None, metrics=counter, default_channel="#x")
    assert failing.open_thread("b-3", SlackMessage("triggered")) is None
    assert counter.counts == {"SlackFailures": 1}


def test_slack_failures_are_counted_and_never_raised() -> None:
    counter = Counter()
    notifier = Notifier(slack=MemorySlack(fail=True), pagerduty=None, metrics=counter, default_channel="#x")
    assert notifier.slack("b-1", SlackMessage("hello")) is False
    assert counter.counts == {"SlackFailures": 1}


def test_pages_use_the_backfill_id_and_respect_notify_pagerduty() -> None:
    pagerduty, threads = MemoryPagerDuty(), MemoryThreads()
    notifier = Notifier(slack=None, pagerduty=pagerduty, status_store=threads)

    assert notifier.page("b-1", summary="Airflow down", enabled=False) is False
    assert pagerduty.events == []
    assert notifier.page("b-1", summary="Airflow down", details={"reason": "500"})
    assert notifier.resolve("b-1")
    (action, event), (action2, resolved) = pagerduty.events
    assert action == "trigger" and event["dedup_key"] == "b-1" and event["severity"] == "critical"
    assert event["custom_details"] == {"backfill_id": "b-1", "reason": "500"}
    assert action2 == "resolve" and resolved == {"dedup_key": "b-1"}
    assert threads.incidents == {"b-1": False}


def test_pagerduty_failures_are_counted_and_never_raised() -> None:
    counter = Counter()
    notifier = Notifier(slack=None, pagerduty=MemoryPagerDuty(fail=True), metrics=counter)
    assert notifier.page("b-1", summary="x") is False
    assert counter.counts == {"PagerDutyFailures": 1}
