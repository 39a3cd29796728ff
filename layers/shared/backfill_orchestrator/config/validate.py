"""Config text or a mapping to `BackfillConfig`, or one `InvalidConfigError` listing every located issue."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

from backfill_orchestrator.config.errors import InvalidConfigError
from backfill_orchestrator.config.model import (
    DAY_TAG,
    DEFAULT_MAX_DAYS,
    DEFAULT_SPARK_PROFILES,
    MAX_CONFIG_BYTES,
    MODELS_BY_PATH,
    RANGE_TAG,
    BackfillConfig,
)
from backfill_orchestrator.config.rules import cross_field_issues
from backfill_orchestrator.errors import ConfigIssue
from backfill_orchestrator.parsing import DocumentFormat, DocumentKind, format_for, issue_from_pydantic


@dataclass(frozen=True)
class ConfigPolicy:
    """What a deployment allows on top of config v1 (an allowlist of what a config may target)."""

    max_days: int = DEFAULT_MAX_DAYS
    max_bytes: int = MAX_CONFIG_BYTES
    allowed_namespaces: frozenset[str] | None = None  # None: any namespace
    replay_targets: frozenset[str] | None = None  # None: targets are not checked here
    spark_profiles: frozenset[str] = DEFAULT_SPARK_PROFILES  # the profiles the deployment's runner knows
    today: date | None = None  # fixed "today" for tests; None is today in UTC

    def context(self) -> dict[str, Any]:
        return {"max_days": self.max_days, "today": self.today}


DEFAULT_POLICY = ConfigPolicy()


MAX_LISTED_KNOWN = 10  # a suggestion lists at most this many known values


def suggestion(value: str, known: Iterable[str]) -> str:
    """ "; did you mean 'x'?" for the closest known value, else the known values (the first few)."""
    ordered = sorted(set(known))
    close = difflib.get_close_matches(value, ordered, n=1, cutoff=0.5)
    if close:
        return f"; did you mean {close[0]!r}?"
    shown = ", ".join(ordered[:MAX_LISTED_KNOWN]) or "none"
    more = len(ordered) - MAX_LISTED_KNOWN
    return f"; known: {shown}{f' and {more} more' if more > 0 else ''}"


def _suggest(path: tuple[str, ...], key: str) -> str:
    model = MODELS_BY_PATH.get(path)
    if model is None:
        return ""
    close = difflib.get_close_matches(key, list(model.model_fields), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else f"; known keys: {', '.join(model.model_fields)}"


def _issue_from_pydantic(error: Mapping[str, Any]) -> ConfigIssue:
    loc = tuple(part for part in error["loc"] if part not in (DAY_TAG, RANGE_TAG))
    parent = tuple(p for p in loc[:-1] if isinstance(p, str))
    return issue_from_pydantic(
        error, loc=loc, unknown_key=lambda loc: f"unknown key{_suggest(parent, str(loc[-1]))}"
    )


def _policy_issues(config: BackfillConfig, policy: ConfigPolicy) -> list[ConfigIssue]:
    issues: list[ConfigIssue] = []
    if policy.allowed_namespaces is not None:
        refs = [("jobs", i, ref) for i, ref in enumerate(config.jobs or [])]
        for index, ref in enumerate(config.effective_downstream.exclude):
            refs.append(("downstream.exclude", index, ref))
        for path, index, ref in refs:
            if ref.namespace not in policy.allowed_namespaces:
                issues.append(
                    ConfigIssue(
                        f"{path}[{index}].namespace",
                        f"namespace {ref.namespace!r} is not in this deployment's allowlist "
                        f"({', '.join(sorted(policy.allowed_namespaces))})",
                    )
                )
    if config.spark is not None and config.spark.profile not in policy.spark_profiles:
        issues.append(
            ConfigIssue(
                "spark.profile",
                f"unknown profile {config.spark.profile!r}{suggestion(config.spark.profile, policy.spark_profiles)}",
            )
        )
    if policy.replay_targets is not None and config.replay is not None:
        if config.replay.target not in policy.replay_targets:
            known = ", ".join(sorted(policy.replay_targets)) or "none configured"
            issues.append(
                ConfigIssue(
                    "replay.target",
                    f"unknown target {config.replay.target!r}; this deployment allows: {known}",
                )
            )
    return issues


def parse_config(
    data: bytes | str | dict[str, Any],
    *,
    fmt: DocumentFormat | None = None,
    source: str | None = None,
    policy: ConfigPolicy = DEFAULT_POLICY,
) -> BackfillConfig:
    """Bytes, text or an already-parsed mapping to a valid config; raises InvalidConfigError.
    The rules between fields are checked on the raw document, so they are reported with the
    shape errors; the deployment's allowlists only once the config is otherwise valid."""
    kind = DocumentKind(
        BackfillConfig,
        error=InvalidConfigError,
        max_bytes=policy.max_bytes,
        issue=_issue_from_pydantic,
        document_checks=cross_field_issues,
        model_checks=lambda config: _policy_issues(config, policy),
    )
    return kind.parse(data, source=source, fmt=fmt or format_for(source), context=policy.context())
