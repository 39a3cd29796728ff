"""Rules that relate fields to each other, checked on the raw document so that they are
reported alongside shape errors (all errors of a file at once), each with its location."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from backfill_orchestrator.errors import ConfigIssue, format_location

_BATCH_ONLY = ("jobs", "downstream", "spark", "publish")


def _duplicates(items: Any, path: tuple[str | int, ...], key=lambda item: item) -> Iterator[ConfigIssue]:
    if not isinstance(items, list):
        return
    seen: dict[Any, int] = {}
    for index, item in enumerate(items):
        try:
            marker = key(item)
            hash(marker)
        except (TypeError, KeyError, AttributeError):
            continue
        if marker is None:
            continue
        if marker in seen:
            first = format_location((*path, seen[marker]))
            yield ConfigIssue(format_location((*path, index)), f"duplicate of {first}")
        else:
            seen[marker] = index


def _job_key(item: Any) -> tuple[Any, Any] | None:
    if (
        isinstance(item, dict)
        and isinstance(item.get("namespace"), str)
        and isinstance(item.get("name"), str)
    ):
        return (item["namespace"], item["name"])
    return None


def _scalar_key(item: Any) -> Any:
    # 1 and True are equal in Python; a bool is a type error reported elsewhere.
    return None if isinstance(item, bool) else item


def cross_field_issues(document: Mapping[str, Any]) -> list[ConfigIssue]:
    issues: list[ConfigIssue] = []
    mode = document.get("mode")
    if mode == "batch":
        if "jobs" not in document:
            issues.append(
                ConfigIssue("jobs", "required for mode batch (the broken jobs where the backfill starts)")
            )
        if "replay" in document:
            issues.append(ConfigIssue("replay", "not allowed for mode batch (it belongs to mode replay)"))
    elif mode == "replay":
        for key, why in (("feeds", "which feeds to replay"), ("replay", "the target queue")):
            if key not in document:
                issues.append(ConfigIssue(key, f"required for mode replay ({why})"))
        for key in _BATCH_ONLY:
            if key in document:
                issues.append(ConfigIssue(key, "not allowed for mode replay (it belongs to mode batch)"))

    issues.extend(_duplicates(document.get("hours"), ("hours",), _scalar_key))
    issues.extend(_duplicates(document.get("feeds"), ("feeds",), _scalar_key))
    issues.extend(_duplicates(document.get("jobs"), ("jobs",), _job_key))
    downstream = document.get("downstream")
    if isinstance(downstream, dict):
        issues.extend(_duplicates(downstream.get("exclude"), ("downstream", "exclude"), _job_key))
    return issues
