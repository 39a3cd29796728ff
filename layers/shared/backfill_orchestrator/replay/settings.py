"""The replay function's own deployment settings (environment variables), on top of
`CommonSettings` (status table, REPLAY_TARGETS allowlist, REPLAY_TASKS_QUEUE_URL, Slack,
PagerDuty).

Required: REPLAY_ARCHIVE_BUCKET, IDEMPOTENCY_TABLE.
Optional: REPLAY_ARCHIVE_LAYOUT (default `{feed}/{yyyy}/{mm}/{dd}/{hh}/`),
REPLAY_MAX_RECEIVE_COUNT (the tasks queue's redrive maxReceiveCount, default 5),
REPLAY_MAX_CONCURRENCY (the event source's MaximumConcurrency, default 5),
REPLAY_MAX_MESSAGE_BYTES (default 262144; at most 1048576)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from backfill_orchestrator.replay.layout import DEFAULT_LAYOUT, ArchiveLayout, ArchiveLayoutError
from backfill_orchestrator.replay.sender import DEFAULT_MAX_BATCH_BYTES
from backfill_orchestrator.settings.environment import EnvironmentReader

SQS_HARD_MAX_MESSAGE_BYTES = 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class ReplaySettings:
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
        bucket = env.required("REPLAY_ARCHIVE_BUCKET")
        table = env.required("IDEMPOTENCY_TABLE")
        try:
            layout = ArchiveLayout.parse(env.get("REPLAY_ARCHIVE_LAYOUT") or DEFAULT_LAYOUT)
        except ArchiveLayoutError as error:
            env.problems.append(f"REPLAY_ARCHIVE_LAYOUT: {error}")
            layout = ArchiveLayout(DEFAULT_LAYOUT)
        settings = cls(
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
