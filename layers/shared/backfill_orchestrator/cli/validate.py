"""`backfill validate FILE...`"""

from __future__ import annotations

import argparse

from backfill_orchestrator.cli.common import EXIT_OK, load_config_file, report, summary_line
from backfill_orchestrator.errors import BackfillError


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("validate", help="check configs; print a summary or every located error")
    parser.add_argument("files", nargs="+", metavar="FILE")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    worst = EXIT_OK
    for path in args.files:
        try:
            config = load_config_file(path)
        except BackfillError as error:  # reported, and the next file is checked
            worst = max(worst, report(error))
            continue
        print(summary_line(path, config))
    return worst
