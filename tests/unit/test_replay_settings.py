"""The replay function's settings (the common ones and its own, one frozen object): every bad
or missing variable named at once."""

from __future__ import annotations

import pytest

from backfill_orchestrator.replay.settings import ReplaySettings
from backfill_orchestrator.settings import SettingsError

GOOD = {
    "STATUS_TABLE": "backfill-status",
    "REPLAY_TASKS_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/backfill-replay-tasks",
    "REPLAY_ARCHIVE_BUCKET": "message-archive",
    "IDEMPOTENCY_TABLE": "replay-idempotency",
}


def test_defaults():
    settings = ReplaySettings.from_env(GOOD)
    assert settings.archive_layout.template == "{feed}/{yyyy}/{mm}/{dd}/{hh}/"
    assert (settings.max_receive_count, settings.max_concurrency, settings.max_message_bytes) == (
        5,
        5,
        262144,
    )
    assert settings.status_table == "backfill-status" and settings.notify.slack_secret_id is None


def test_every_problem_is_named():
    with pytest.raises(SettingsError) as caught:
        ReplaySettings.from_env(
            {
                "REPLAY_ARCHIVE_LAYOUT": "{feed}/{date}/",
                "REPLAY_MAX_RECEIVE_COUNT": "0",
                "REPLAY_MAX_CONCURRENCY": "many",
                "REPLAY_MAX_MESSAGE_BYTES": str(2 * 1024 * 1024),
            }
        )
    names = [problem.split(":")[0] for problem in caught.value.problems]
    assert names == [
        "STATUS_TABLE",
        "REPLAY_TASKS_QUEUE_URL",
        "REPLAY_ARCHIVE_BUCKET",
        "IDEMPOTENCY_TABLE",
        "REPLAY_ARCHIVE_LAYOUT",
        "REPLAY_MAX_RECEIVE_COUNT",
        "REPLAY_MAX_CONCURRENCY",
        "REPLAY_MAX_MESSAGE_BYTES",
    ]
