"""The replay function's deployment settings (environment variables): the common ones
(`CommonSettings`: status table, REPLAY_TARGETS allowlist, Slack, PagerDuty) plus its own. They
live here, not in `settings/`, because they parse the archive layout (`replay.layout`).

Required: STATUS_TABLE, REPLAY_TASKS_QUEUE_URL (continuations), REPLAY_ARCHIVE_BUCKET,
IDEMPOTENCY_TABLE.
Optional: the common ones, REPLAY_ARCHIVE_LAYOUT (default `{feed}/{yyyy}/{mm}/{dd}/{hh}/`),
REPLAY_MAX_RECEIVE_COUNT (the tasks queue's redrive maxReceiveCount, default 5),
REPLAY_MAX_CONCURRENCY (the event source's MaximumConcurrency, default 5),
REPLAY_MAX_MESSAGE_BYTES (default 262144; at most 1048576)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from backfill_orchestrator.replay.layout import DEFAULT_LAYOUT, ArchiveLayout, ArchiveLayoutError
from backfill_orchestrator.replay.sender import DEFAULT_MAX_BATCH_BYTES
from backfill_orchestrator.settings.common import CommonSettings
from backfill_orchestrator.settings.environment import EnvironmentReader

SQS_HARD_MAX_MESSAGE_BYTES = 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class ReplaySettings(CommonSettings):
    replay_tasks_queue_url: str  # required here: a task that runs short of time continues through it
    archive_bucket: str
    archive_layout: ArchiveLayout
    idempotency_table: str
    max_receive_count: int = 5
    max_concurrency: int = 5
    max_message_bytes: int = DEFAULT_MAX_BATCH_BYTES

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ReplaySettings:
        """Raises SettingsError naming every bad or missing variable."""
        env = EnvironmentReader(environ)
        common = CommonSettings.read_fields(env)
        if not common["replay_tasks_queue_url"]:
            env.problems.append("REPLAY_TASKS_QUEUE_URL: required by the replay function (continuations)")
        bucket = env.required("REPLAY_ARCHIVE_BUCKET")
        table = env.required("IDEMPOTENCY_TABLE")
        try:
            layout = ArchiveLayout.parse(env.get("REPLAY_ARCHIVE_LAYOUT") or DEFAULT_LAYOUT)
        except ArchiveLayoutError as error:
            env.problems.append(f"REPLAY_ARCHIVE_LAYOUT: {error}")
            layout = ArchiveLayout(DEFAULT_LAYOUT)
        settings = cls(
            **{**common, "replay_tasks_queue_url": common["replay_tasks_queue_url"] or ""},
            archive_bucket=bucket,
            archive_layout=layout,
            idempotency_table=table,
            max_receive_count=env.whole("REPLAY_MAX_RECEIVE_COUNT", 5, low=1, high=1000),
            max_concurrency=env.whole("REPLAY_MAX_CONCURRENCY", 5, low=2, high=1000),
            max_message_bytes=env.whole(
                "REPLAY_MAX_MESSAGE_BYTES", DEFAULT_MAX_BATCH_BYTES, low=1024, high=SQS_HARD_MAX_MESSAGE_BYTES
            ),
        )
        env.check()
        return settings
