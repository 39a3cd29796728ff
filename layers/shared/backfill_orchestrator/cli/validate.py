"""`backfill validate FILE...`"""

from __future__ import annotations

import argparse
import sys

from backfill_orchestrator.cli.common import (
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    load_config_file,
    print_invalid,
    summary_line,
)
from backfill_orchestrator.config import InvalidConfigError


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("validate", help="check configs; print a summary or every located error")
    parser.add_argument("files", nargs="+", metavar="FILE")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    worst = EXIT_OK
    for path in args.files:
        try:
            config = load_config_file(path)
        except CliError as error:
            print(f"backfill: {error}", file=sys.stderr)
            worst = max(worst, EXIT_USAGE)
            continue
        except InvalidConfigError as error:
            print_invalid(error, path)
            worst = max(worst, EXIT_INVALID)
            continue
        print(summary_line(path, config))
    return worst
