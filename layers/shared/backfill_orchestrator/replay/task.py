"""The replay task document: one feed, one day, one hour of archived messages to re-send.

The trigger splits a `mode: replay` config into tasks and sends each to the replay-tasks
queue as JSON; a DAG may also invoke the replay function directly with one task. The task
names things logically (feed, day, hour, target name); the replay function resolves the
archive prefix and the queue URL from its own deployment settings, so a task can never
point the function at a queue outside the allowlist.

    {"task_version": 1, "backfill_id": "replay-orders-1a2b3c4d", "target": "orders-ingest",
     "feed": "orders", "day": "2021-06-04", "hour": 9, "max_messages_per_second": 100,
     "pagerduty": true}
"""

from __future__ import annotations

import json
from datetime import date
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictInt, ValidationError

from backfill_orchestrator.config import BackfillConfig, backfill_id
from backfill_orchestrator.config.model import FEED_PATTERN, NAME_PATTERN, TARGET_PATTERN
from backfill_orchestrator.errors import ConfigIssue, LocatedIssuesError, UserError, format_location

TASK_VERSION: Final = 1
BACKFILL_ID_PATTERN = NAME_PATTERN[:-1] + r"-[0-9a-f]{8}$"
ALL_HOURS = tuple(range(24))


class InvalidReplayTaskError(LocatedIssuesError, UserError, ValueError):
    """A task document that is not a valid replay task; `issues` are located (`hour: ...`).
    A task is one line of a queue message, so its issues read as one line too."""

    document = "replay task"

    def render(self) -> str:
        return f"invalid {self.document}: " + "; ".join(self.problems)


def _iso_day(value: Any) -> Any:
    # A task is JSON: the day is text, and only YYYY-MM-DD (not a timestamp) is accepted.
    if isinstance(value, str) and len(value) != 10:
        raise ValueError(f"expected a date as YYYY-MM-DD, got {value!r}")
    return value


class ReplayTask(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    task_version: Literal[1] = TASK_VERSION
    backfill_id: Annotated[str, Field(pattern=BACKFILL_ID_PATTERN)]
    target: Annotated[str, Field(pattern=TARGET_PATTERN)]
    feed: Annotated[str, Field(pattern=FEED_PATTERN)]
    day: Annotated[date, BeforeValidator(_iso_day), Field(strict=False)]
    hour: Annotated[StrictInt, Field(ge=0, le=23)]
    max_messages_per_second: Annotated[StrictInt, Field(ge=1, le=3000)] | None = None
    pagerduty: StrictBool = True

    @property
    def task_id(self) -> str:
        """Unique per backfill, feed, day and hour: the idempotency key."""
        return f"{self.backfill_id}/{self.feed}/{self.day.isoformat()}/{self.hour:02d}"

    def to_json(self) -> str:
        return self.model_dump_json(exclude_none=True)


def parse_task(document: str | bytes | dict[str, Any]) -> ReplayTask:
    """JSON text or a mapping to a task; raises InvalidReplayTaskError listing every issue."""
    if isinstance(document, str | bytes):
        try:
            document = json.loads(document)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise InvalidReplayTaskError([ConfigIssue("<root>", f"not JSON: {error}")]) from None
    if not isinstance(document, dict):
        raise InvalidReplayTaskError([ConfigIssue("<root>", "expected a JSON object (a replay task)")])
    try:
        return ReplayTask.model_validate(document)
    except ValidationError as error:
        issues = []
        for problem in error.errors(include_url=False):
            message = problem["msg"].removeprefix("Value error, ")
            if problem["type"] == "missing":
                message = "field required"
            elif problem["type"] == "extra_forbidden":
                message = "unknown key"
            issues.append(ConfigIssue(format_location(problem["loc"]), message[:1].lower() + message[1:]))
        raise InvalidReplayTaskError(issues) from None


def split_tasks(config: BackfillConfig) -> list[ReplayTask]:
    """One task per feed, day and hour of a replay config (absent `hours`: all 24), in a
    stable order: feed, then day, then hour."""
    if config.mode != "replay" or config.replay is None or not config.feeds:
        raise ValueError(f"{config.name}: only a replay config with feeds splits into replay tasks")
    identity = backfill_id(config)
    hours = sorted(config.hours) if config.hours else ALL_HOURS
    return [
        ReplayTask(
            backfill_id=identity,
            target=config.replay.target,
            feed=feed,
            day=day,
            hour=hour,
            max_messages_per_second=config.replay.max_messages_per_second,
            pagerduty=config.notify.pagerduty,
        )
        for feed in sorted(config.feeds)
        for day in config.days
        for hour in hours
    ]
