"""`backfill`: validate, submit, plan and inspect backfill configs.

Exit codes, for every subcommand, from the error's category (cli.common.exit_code): 0 success;
1 an invalid config or a refused plan; 2 usage errors, unreadable files and unreachable services."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from backfill_orchestrator.cli import cancel, plan, retry, schema, status, submit, validate, watch
from backfill_orchestrator.cli import list as list_command
from backfill_orchestrator.cli.common import report
from backfill_orchestrator.errors import BackfillError

SUBCOMMANDS = (validate, schema, submit, plan, status, list_command, watch, cancel, retry)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="backfill", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse: 0 for --help, 2 for usage errors
        return int(exit_.code or 0)
    try:
        return int(args.run(args))
    except BackfillError as error:
        return report(error)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
