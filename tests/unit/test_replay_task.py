"""Replay tasks: splitting a replay config (feed x day x hour) and reading task documents."""

from __future__ import annotations

import json
from datetime import date

import pytest

from backfill_orchestrator.config import backfill_id, parse_config
from backfill_orchestrator.replay.layout import ArchiveLayout, ArchiveLayoutError
from backfill_orchestrator.replay.task import InvalidReplayTaskError, ReplayTask, parse_task, split_tasks
from tests.support.configs import EXAMPLES


def test_split_is_one_task_per_feed_day_and_hour():
    config = parse_config((EXAMPLES / "replay-orders.yaml").read_text(), fmt="yaml")
    tasks = split_tasks(config)
    assert len(tasks) == 2 * 4 * 3  # feeds x days x hours
    assert len({t.task_id for t in tasks}) == len(tasks)
    first = tasks[0]
    assert (first.feed, first.day, first.hour) == ("order_status", date(2021, 6, 1), 9)
    assert first.backfill_id == backfill_id(config)
    assert (
        first.target == "orders-ingest" and first.max_messages_per_second == 100 and first.pagerduty is False
    )
    assert first.task_id == f"{backfill_id(config)}/order_status/2021-06-01/09"
    assert [t.hour for t in tasks[:3]] == [9, 10, 11]


def test_split_without_hours_takes_the_whole_day(replay_config):
    tasks = split_tasks(parse_config(replay_config))
    assert [t.hour for t in tasks] == list(range(24))
    assert all(t.max_messages_per_second is None and t.pagerduty for t in tasks)


def test_split_refuses_a_batch_config(batch_config):
    with pytest.raises(ValueError, match="only a replay config"):
        split_tasks(parse_config(batch_config))


def test_task_document_round_trips(replay_config):
    task = split_tasks(parse_config(replay_config))[5]
    text = task.to_json()
    assert json.loads(text)["day"] == "2021-06-04"
    assert parse_task(text) == task
    assert parse_task(text.encode()) == task
    assert parse_task(json.loads(text)) == task


GOOD = {
    "task_version": 1,
    "backfill_id": "replay-orders-1a2b3c4d",
    "target": "orders-ingest",
    "feed": "orders",
    "day": "2021-06-04",
    "hour": 9,
}


@pytest.mark.parametrize(
    ("change", "location", "fragment"),
    [
        ({"hour": 24}, "hour", "less than or equal to 23"),
        ({"hour": "9"}, "hour", "valid integer"),
        ({"hour": True}, "hour", "valid integer"),
        ({"day": "2021-02-30"}, "day", "day value is outside expected range"),
        ({"day": "2021-06-04T09:00:00"}, "day", "YYYY-MM-DD"),
        ({"feed": "Orders!"}, "feed", "pattern"),
        ({"target": ""}, "target", "pattern"),
        ({"backfill_id": "replay-orders"}, "backfill_id", "pattern"),
        ({"task_version": 2}, "task_version", "1"),
        ({"max_messages_per_second": 0}, "max_messages_per_second", "greater than or equal to 1"),
        ({"pagerduty": "yes"}, "pagerduty", "valid boolean"),
        ({"extra": 1}, "extra", "unknown key"),
    ],
)
def test_invalid_task_documents_are_located(change, location, fragment):
    with pytest.raises(InvalidReplayTaskError) as caught:
        parse_task({**GOOD, **change})
    (issue,) = caught.value.issues
    assert issue.location == location and fragment in issue.message


def test_missing_fields_and_non_objects():
    with pytest.raises(InvalidReplayTaskError) as caught:
        parse_task({"task_version": 1})
    assert {i.location for i in caught.value.issues} == {"backfill_id", "target", "feed", "day", "hour"}
    for document in ("[1, 2]", "not json", b"\xff"):
        with pytest.raises(InvalidReplayTaskError) as caught:
            parse_task(document)
        assert caught.value.issues[0].location == "<root>"


def test_layout_prefixes():
    task = ReplayTask.model_validate(GOOD)
    default = ArchiveLayout.parse("{feed}/{yyyy}/{mm}/{dd}/{hh}/")
    assert default.prefix(feed=task.feed, day=task.day, hour=task.hour) == "orders/2021/06/04/09/"
    dated = ArchiveLayout.parse("archive/feed={feed}/date={date}/hour={hh}/")
    assert (
        dated.prefix(feed="orders", day=date(2021, 6, 4), hour=0)
        == "archive/feed=orders/date=2021-06-04/hour=00/"
    )


@pytest.mark.parametrize(
    ("template", "fragment"),
    [
        ("{feed}/{yyyy}/{mm}/{dd}/", "must contain"),  # no hour: tasks would overlap
        ("{yyyy}/{mm}/{dd}/{hh}/", "must contain"),  # no feed
        ("{feed}/{yyyy}/{mm}/{hh}/", "must contain"),  # no day of month
        ("{feed}/{day}/{hh}/", "unknown placeholder"),
        ("{feed}/{date}/{hh:03d}/", "no format spec"),
        ("/{feed}/{date}/{hh}/", "must not start with '/'"),
        ("{feed}/{date}/{hh", "archive layout"),
    ],
)
def test_bad_layouts_are_refused(template, fragment):
    with pytest.raises(ArchiveLayoutError, match=fragment.replace("(", r"\(")):
        ArchiveLayout.parse(template)
