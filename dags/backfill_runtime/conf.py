"""The `backfill` DAG run's conf: `{backfill_id, config_uri, plan_uri}`, checked before anything
is read or written, so a bad trigger fails at once with every problem named."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# `<config name>-<8 hex>`, as backfill_orchestrator.config.identity makes it.
BACKFILL_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,23}-[0-9a-f]{8}$")
URI_SCHEMES = ("s3://", "file://", "/")
REQUIRED_KEYS = ("backfill_id", "config_uri", "plan_uri")


class InvalidRunConfError(ValueError):
    """The run's conf is missing, malformed or inconsistent; `problems` lists each one."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("invalid DAG run conf: " + "; ".join(problems))


@dataclass(frozen=True, kw_only=True)
class RunConf:
    backfill_id: str
    config_uri: str
    plan_uri: str


def parse_run_conf(conf: Mapping[str, Any] | None) -> RunConf:
    """Check every key at once; raises InvalidRunConfError naming each problem."""
    if not conf:
        raise InvalidRunConfError(
            [f"conf is empty: trigger with {{{', '.join(REQUIRED_KEYS)}}} (the trigger function does this)"]
        )
    if not isinstance(conf, Mapping):
        raise InvalidRunConfError([f"conf must be an object, got {type(conf).__name__}"])
    problems: list[str] = []
    for key in REQUIRED_KEYS:
        value = conf.get(key)
        if value is None:
            problems.append(f"{key}: required")
        elif not isinstance(value, str) or not value.strip():
            problems.append(f"{key}: expected a non-empty string, got {value!r}")
    unknown = sorted(set(conf) - set(REQUIRED_KEYS))
    if unknown:
        problems.append(f"unknown keys {unknown}; expected only {list(REQUIRED_KEYS)}")
    backfill_id = conf.get("backfill_id")
    if isinstance(backfill_id, str) and backfill_id and not BACKFILL_ID.fullmatch(backfill_id):
        problems.append(f"backfill_id: expected <name>-<8 hex digits>, got {backfill_id!r}")
    for key in ("config_uri", "plan_uri"):
        value = conf.get(key)
        if isinstance(value, str) and value.strip() and not value.startswith(URI_SCHEMES):
            problems.append(f"{key}: expected an s3://, file:// or absolute path URI, got {value!r}")
    if problems:
        raise InvalidRunConfError(problems)
    return RunConf(backfill_id=conf["backfill_id"], config_uri=conf["config_uri"], plan_uri=conf["plan_uri"])
