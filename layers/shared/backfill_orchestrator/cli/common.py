"""What the subcommands share: exit codes from the error's category, reading config files,
printing errors, `--json`, and progress while waiting (a line rewritten in place on a terminal,
nothing otherwise: piped output stays one line per event)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, TextIO

from backfill_orchestrator import documents
from backfill_orchestrator.config import MAX_CONFIG_BYTES, BackfillConfig, parse_config
from backfill_orchestrator.errors import BackfillError, LocatedIssuesError, UserError
from backfill_orchestrator.lineage import URL_ENV
from backfill_orchestrator.planner import CATALOG_ENV

EXIT_OK = 0
EXIT_INVALID = 1  # the input is invalid or refused: the user's to change
EXIT_USAGE = 2  # bad arguments, an unreadable file, a service failing


# The exit code of each category (errors.BackfillError.category).
EXIT_BY_CATEGORY = {"user": EXIT_INVALID, "refused": EXIT_INVALID, "service": EXIT_USAGE}


class CliError(UserError):
    """A usage error: bad arguments, no status table, a file that cannot be read (exit 2)."""


def exit_code(error: BackfillError) -> int:
    """The one mapping from an error to the exit code: by its category, except that a usage
    error is 2 and a document with located issues is always 1. Every document the CLI reads
    is one its user named (the config, `--catalog`), even one that is the deployment's
    elsewhere: an invalid job catalog is a ServiceError in the trigger (it pages)."""
    if isinstance(error, CliError):
        return EXIT_USAGE
    if isinstance(error, LocatedIssuesError):
        return EXIT_INVALID
    return EXIT_BY_CATEGORY.get(error.category, EXIT_USAGE)


def report(error: BackfillError) -> int:
    """Print the error to stderr the one way every subcommand does, and return its exit code:
    a located issue per line (`config.yaml: dates[1].end: ...`), anything else as one line."""
    if isinstance(error, LocatedIssuesError):
        print(error.render(), file=sys.stderr)
    else:
        print(f"backfill: {error}", file=sys.stderr)
    return exit_code(error)


def read_file(path: str, *, max_bytes: int = MAX_CONFIG_BYTES) -> bytes:
    """A document by path or URI (s3://, dbfs:/, file://). Over the size limit it is read up to
    one byte more and parsed anyway, so the located size error is printed like any other."""
    try:
        return documents.read_bytes(path, max_bytes=max_bytes, over_limit="keep")
    except documents.DocumentError as error:
        raise CliError(str(error)) from None


def load_config_file(path: str) -> BackfillConfig:
    """Read and validate; raises CliError (unreadable) or InvalidConfigError (invalid)."""
    return parse_config(read_file(path), source=path)


def summary_line(path: str, config: BackfillConfig) -> str:
    hours = "all hours" if config.hours is None else f"{len(config.hours)} hours"
    feeds = "all feeds" if config.feeds is None else f"{len(config.feeds)} feeds"
    days = len(config.days)
    return (
        f"{path}: ok: {config.name} ({config.mode}), {days} day{'s' if days != 1 else ''}, {hours}, {feeds}"
    )


BUCKET_ENV = "CONFIG_BUCKET"  # the trigger's own name for the config bucket


def add_json_option(parser: argparse.ArgumentParser, what: str = "the result") -> None:
    parser.add_argument("--json", action="store_true", help=f"print {what} as JSON")


def add_preflight_options(parser: argparse.ArgumentParser, *, refuses: str) -> None:
    """What the preflight checks against (`plan`, `submit`, `validate`): Marquez, the job
    catalog, and whether warnings refuse `refuses`."""
    parser.add_argument(
        "--marquez-url",
        metavar="URL",
        help=f"Marquez base URL, to check the jobs and the plan (default ${URL_ENV})",
    )
    parser.add_argument(
        "--catalog", metavar="FILE", help=f"job catalog, a path or s3:// URI (default ${CATALOG_ENV})"
    )
    parser.add_argument("--strict", action="store_true", help=f"preflight warnings refuse {refuses}")


def add_bucket_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bucket",
        default=os.environ.get(BUCKET_ENV) or None,
        help=f"the config bucket (default ${BUCKET_ENV})",
    )


def require_bucket(bucket: str | None) -> str:
    if not bucket:
        raise CliError(f"no config bucket: pass --bucket or set {BUCKET_ENV}")
    return bucket


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, default=str))


class Progress:
    """A status line while waiting: rewritten in place on a terminal (stderr), silent when
    stderr is not one, so logs and pipes get only the lines that matter."""

    def __init__(self, stream: TextIO | None = None):
        self._stream = stream or sys.stderr
        self._shown = False
        self.enabled = self._stream.isatty()

    def show(self, text: str) -> None:
        if self.enabled:
            self._stream.write("\r\x1b[2K" + text[:200])
            self._stream.flush()
            self._shown = True

    def clear(self) -> None:
        if self._shown:
            self._stream.write("\r\x1b[2K")
            self._stream.flush()
            self._shown = False
