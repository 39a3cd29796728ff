"""The replay function's own deployment settings (environment variables), on top of the
shared `DeploymentSettings` (status table, REPLAY_TARGETS allowlist, REPLAY_TASKS_QUEUE_URL,
Slack, PagerDuty).

Required: REPLAY_ARCHIVE_BUCKET, IDEMPOTENCY_TABLE.
Optional: REPLAY_ARCHIVE_LAYOUT (default `{feed}/{yyyy}/{mm}/{dd}/{hh}/`),
REPLAY_MAX_RECEIVE_COUNT (the tasks queue's redrive maxReceiveCount, default 5),
REPLAY_MAX_CONCURRENCY (the event source's MaximumConcurrency, default 5),
REPLAY_MAX_MESSAGE_BYTES (default 262144; at most 1048576)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from backfill_orchestrator.replay.layout import DEFAULT_LAYOUT, ArchiveLayout, ArchiveLayoutError
from backfill_orchestrator.replay.sender import DEFAULT_MAX_BATCH_BYTES
from backfill_orchestrator.settings import SettingsError

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
        env = os.environ if environ is None else environ
        problems: list[str] = []

        def get(name: str) -> str | None:
            return env.get(name, "").strip() or None

        def required(name: str) -> str:
            value = get(name)
            if value is None:
                problems.append(f"{name}: required")
            return value or ""

        def whole(name: str, default: int, low: int, high: int) -> int:
            text = get(name)
            if text is None:
                return default
            try:
                value = int(text)
            except ValueError:
                value = low - 1
            if not low <= value <= high:
                problems.append(f"{name}: expected a whole number from {low} to {high}, got {text!r}")
                return default
            return value

        bucket = required("REPLAY_ARCHIVE_BUCKET")
        table = required("IDEMPOTENCY_TABLE")
        try:
            layout = ArchiveLayout.parse(get("REPLAY_ARCHIVE_LAYOUT") or DEFAULT_LAYOUT)
        except ArchiveLayoutError as error:
            problems.append(f"REPLAY_ARCHIVE_LAYOUT: {error}")
            layout = ArchiveLayout(DEFAULT_LAYOUT)
        settings = cls(
            archive_bucket=bucket,
            archive_layout=layout,
            idempotency_table=table,
            max_receive_count=whole("REPLAY_MAX_RECEIVE_COUNT", 5, 1, 1000),
            max_concurrency=whole("REPLAY_MAX_CONCURRENCY", 5, 2, 1000),
            max_message_bytes=whole("REPLAY_MAX_MESSAGE_BYTES", DEFAULT_MAX_BATCH_BYTES, 1024, SQS_HARD_MAX_MESSAGE_BYTES),
        )
        if problems:
            raise SettingsError(problems)
        return settings
