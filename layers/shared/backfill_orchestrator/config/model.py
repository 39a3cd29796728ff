"""Backfill config, version 1: the user-facing contract (documented field by field in docs/config.md).

Models validate shapes and per-field rules; the rules that relate fields to each other
(mode requirements, duplicates) live in `rules.py` so that they are reported together with
the shape errors, all located."""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    StrictBool,
    StrictInt,
    Tag,
    ValidationInfo,
    field_validator,
)

from backfill_orchestrator._compat import UTC

DEFAULT_MAX_DAYS = 400
MAX_CONFIG_BYTES = 256 * 1024
NAME_PATTERN = r"^[a-z0-9][a-z0-9-]{0,23}$"
FEED_PATTERN = r"^[a-z0-9_]{1,64}$"
TARGET_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s.]{2,}$")
_SLACK_HANDLE = re.compile(r"^@[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")
_SLACK_CHANNEL = re.compile(r"^(#[a-z0-9][a-z0-9_-]{0,79}|[CG][A-Z0-9]{8,12})$")
_ISO_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")

# Tags of the date-entry union; they are dropped from error locations.
DAY_TAG = "<day>"
RANGE_TAG = "<range>"


def today_utc(info: ValidationInfo | None = None) -> date:
    context = (info.context if info is not None else None) or {}
    return context.get("today") or datetime.now(UTC).date()


def _matches(pattern: str, description: str):
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if not compiled.fullmatch(value):
            raise ValueError(f"must be {description}, got {value!r}")
        return value

    return AfterValidator(check)


def _parse_day(value: Any, info: ValidationInfo) -> date:
    if isinstance(value, datetime):
        raise ValueError(f"expected a date (YYYY-MM-DD), got a date and time {value.isoformat()!r}")
    if isinstance(value, date):
        day = value
    elif isinstance(value, str):
        if not _ISO_DAY.fullmatch(value):
            raise ValueError(f"expected a date as YYYY-MM-DD, got {value!r}")
        try:
            day = date.fromisoformat(value)
        except ValueError:
            raise ValueError(f"not a real calendar date: {value}") from None
    else:
        raise ValueError(f"expected a date as YYYY-MM-DD, got {type(value).__name__} {value!r}")
    today = today_utc(info)
    if day > today:
        raise ValueError(f"{day.isoformat()} is after today ({today.isoformat()}, UTC)")
    return day


Day = Annotated[date, BeforeValidator(_parse_day)]
NonBlank = Annotated[
    str,
    Field(min_length=1, max_length=1024),
    _matches(r"^\S(.*\S)?$", "non-blank text without surrounding spaces"),
]


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class JobRef(StrictModel):
    """A job as Marquez/OpenLineage names it. The namespace may be a URI with ':' and '/'."""

    namespace: NonBlank
    name: NonBlank

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


class DateRange(StrictModel):
    start: Day
    end: Day

    @field_validator("end")
    @classmethod
    def _not_before_start(cls, end: date, info: ValidationInfo) -> date:
        start = info.data.get("start")
        if start is not None and end < start:
            raise ValueError(f"must not be before start ({start.isoformat()})")
        return end


def _date_entry_kind(value: Any) -> str:
    return RANGE_TAG if isinstance(value, dict | DateRange) else DAY_TAG


DateEntry = Annotated[
    Annotated[Day, Tag(DAY_TAG)] | Annotated[DateRange, Tag(RANGE_TAG)],
    Discriminator(_date_entry_kind),
]
Hour = Annotated[StrictInt, Field(ge=0, le=23)]
Feed = Annotated[str, _matches(FEED_PATTERN, "1 to 64 characters of a-z, 0-9 and _")]


class Downstream(StrictModel):
    enabled: StrictBool = True
    max_depth: Annotated[StrictInt, Field(ge=1, le=200)] = 50
    exclude: list[JobRef] = Field(default_factory=list)


DEFAULT_SPARK_PROFILES = frozenset({"small", "medium", "large"})
PROFILE_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,31}$"


class Spark(StrictModel):
    # Which profiles exist is the deployment's list (ConfigPolicy.spark_profiles).
    profile: Annotated[
        str, _matches(PROFILE_PATTERN, "a profile name of a-z, 0-9, '-' and '_' (at most 32)")
    ] = "medium"


Percent = Annotated[float, Field(ge=0, le=100)]


class PublishOverride(StrictModel):
    """This backfill's publish policy, narrower than the deployment's (its policy's
    `publish.defaults`): each field set here replaces the deployment's, and one that would
    loosen it is an error (contracts.publish.PublishPolicy has the same fields and says what
    each means; `within` compares them)."""

    auto_publish: StrictBool | None = None
    require_rules: StrictBool | None = None
    max_rows_removed_percent: Percent | None = None
    max_rows_changed_percent: Percent | None = None
    allow_emptied_partitions: StrictBool | None = None
    allow_new_partitions: StrictBool | None = None

    def changes(self) -> dict[str, Any]:
        """The fields this config sets."""
        return self.model_dump(exclude_none=True)


class Replay(StrictModel):
    target: Annotated[str, _matches(TARGET_PATTERN, "a target name of a-z, 0-9, '-' and '_' (at most 64)")]
    max_messages_per_second: Annotated[StrictInt, Field(ge=1, le=3000)] | None = None


def _check_channel(value: str) -> str:
    if not _SLACK_CHANNEL.fullmatch(value):
        raise ValueError(f"must be a Slack channel such as '#data-oncall' or a channel id, got {value!r}")
    return value


class Notify(StrictModel):
    slack_channel: Annotated[str, AfterValidator(_check_channel)] | None = None
    pagerduty: StrictBool = True


def _check_owner(value: str) -> str:
    if not (_EMAIL.fullmatch(value) or _SLACK_HANDLE.fullmatch(value)):
        raise ValueError(f"must be an email address or a Slack handle (@name), got {value!r}")
    return value


def _check_version(value: Any) -> int:
    if type(value) is not int or value != 1:
        raise ValueError(f"only version 1 is supported, got {value!r}")
    return value


def merge_intervals(intervals: list[tuple[date, date]]) -> list[tuple[date, date]]:
    merged: list[tuple[date, date]] = []
    for start, end in sorted(intervals):
        if merged and start.toordinal() <= merged[-1][1].toordinal() + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _entry_interval(entry: date | DateRange) -> tuple[date, date]:
    return (entry.start, entry.end) if isinstance(entry, DateRange) else (entry, entry)


class BackfillConfig(StrictModel):
    version: Annotated[int, BeforeValidator(_check_version)]
    name: Annotated[
        str, _matches(NAME_PATTERN, "1 to 24 characters of a-z, 0-9 and '-', starting with a letter or digit")
    ]
    description: Annotated[str, Field(max_length=500)] | None = None
    owner: Annotated[str, AfterValidator(_check_owner)]
    mode: Literal["batch", "replay"]
    jobs: Annotated[list[JobRef], Field(min_length=1)] | None = None
    dates: Annotated[list[DateEntry], Field(min_length=1)]
    hours: Annotated[list[Hour], Field(min_length=1)] | None = None
    feeds: Annotated[list[Feed], Field(min_length=1)] | None = None
    downstream: Downstream | None = None
    spark: Spark | None = None
    replay: Replay | None = None
    notify: Notify = Field(default_factory=Notify)
    publish: PublishOverride | None = None  # batch: narrows the deployment's publish policy
    dry_run: StrictBool = False
    strict: StrictBool = False  # preflight warnings refuse the backfill
    require_fresh_upstream: StrictBool = False  # a failed or missing upstream run refuses the backfill

    @field_validator("dates")
    @classmethod
    def _within_day_limit(
        cls, entries: list[date | DateRange], info: ValidationInfo
    ) -> list[date | DateRange]:
        limit = ((info.context or {}).get("max_days")) or DEFAULT_MAX_DAYS
        count = sum(
            end.toordinal() - start.toordinal() + 1
            for start, end in merge_intervals([_entry_interval(e) for e in entries])
        )
        if count > limit:
            raise ValueError(f"covers {count} distinct days; at most {limit} are allowed")
        return entries

    # -- derived views ---------------------------------------------------------------
    @property
    def days(self) -> list[date]:
        """The union of `dates`, sorted, each day once."""
        out: list[date] = []
        for start, end in merge_intervals([_entry_interval(e) for e in self.dates]):
            out.extend(date.fromordinal(o) for o in range(start.toordinal(), end.toordinal() + 1))
        return out

    @property
    def effective_downstream(self) -> Downstream:
        return self.downstream or Downstream()

    @property
    def effective_spark(self) -> Spark:
        return self.spark or Spark()

    def canonical(self) -> dict[str, Any]:
        """The config's meaning, independent of formatting and of order where order means nothing."""
        data = self.model_dump(mode="json", exclude={"dates"})
        for added_later in (
            "strict",
            "require_fresh_upstream",
            "publish",
        ):  # at their defaults they keep older configs' ids
            if not data[added_later]:
                del data[added_later]
        if data.get("publish"):
            data["publish"] = {k: v for k, v in data["publish"].items() if v is not None}
        data["dates"] = [d.isoformat() for d in self.days]
        for key in ("hours", "feeds"):
            if data[key] is not None:
                data[key] = sorted(data[key])
        if data["jobs"] is not None:
            data["jobs"] = sorted(data["jobs"], key=lambda j: (j["namespace"], j["name"]))
        if self.mode == "batch":
            downstream = self.effective_downstream.model_dump(mode="json")
            downstream["exclude"] = sorted(downstream["exclude"], key=lambda j: (j["namespace"], j["name"]))
            data["downstream"] = downstream
            data["spark"] = self.effective_spark.model_dump(mode="json")
        return data


# Where each key set lives, for "did you mean" suggestions on unknown keys.
MODELS_BY_PATH: dict[tuple[str, ...], type[BaseModel]] = {
    (): BackfillConfig,
    ("jobs",): JobRef,
    ("dates",): DateRange,
    ("downstream",): Downstream,
    ("downstream", "exclude"): JobRef,
    ("spark",): Spark,
    ("replay",): Replay,
    ("notify",): Notify,
    ("publish",): PublishOverride,
}
