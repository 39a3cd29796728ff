"""What the subcommands share: exit codes, reading config files, printing located errors."""

from __future__ import annotations

import sys

from backfill_orchestrator import documents
from backfill_orchestrator.config import BackfillConfig, InvalidConfigError, parse_config
from backfill_orchestrator.config.loader import MAX_CONFIG_BYTES

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_USAGE = 2


class CliError(Exception):
    """A usage error or an unreachable/unreadable resource: exit 2 unless told otherwise."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE):
        super().__init__(message)
        self.exit_code = exit_code


def read_file(path: str) -> bytes:
    """A config by path or URI (s3://, dbfs:/, file://). Over the size limit it is read up to
    one byte more and parsed anyway, so the located size error is printed like any other."""
    try:
        return documents.read_bytes(path, max_bytes=MAX_CONFIG_BYTES, over_limit="keep")
    except documents.DocumentError as error:
        raise CliError(str(error)) from None


def load_config_file(path: str) -> BackfillConfig:
    """Read and validate; raises CliError (unreadable) or InvalidConfigError (invalid)."""
    return parse_config(read_file(path), source=path)


def print_invalid(error: InvalidConfigError, path: str) -> None:
    for issue in error.issues:
        print(f"{path}: {issue.location}: {issue.message}", file=sys.stderr)


def summary_line(path: str, config: BackfillConfig) -> str:
    hours = "all hours" if config.hours is None else f"{len(config.hours)} hours"
    feeds = "all feeds" if config.feeds is None else f"{len(config.feeds)} feeds"
    days = len(config.days)
    return f"{path}: ok: {config.name} ({config.mode}), {days} day{'s' if days != 1 else ''}, {hours}, {feeds}"
