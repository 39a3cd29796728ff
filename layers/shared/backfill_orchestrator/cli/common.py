"""What the subcommands share: exit codes, reading config files, printing located errors."""

from __future__ import annotations

import sys
from pathlib import Path

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
    file = Path(path)
    try:
        if file.is_dir():
            raise CliError(f"{path}: is a directory")
        if file.stat().st_size > MAX_CONFIG_BYTES:
            # Parsed anyway so the located size error is printed like any other.
            with file.open("rb") as handle:
                return handle.read(MAX_CONFIG_BYTES + 1)
        return file.read_bytes()
    except FileNotFoundError:
        raise CliError(f"{path}: no such file") from None
    except PermissionError:
        raise CliError(f"{path}: permission denied") from None
    except OSError as error:
        raise CliError(f"{path}: cannot read ({error.strerror})") from None


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
