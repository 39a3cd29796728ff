"""`backfill`: validate, plan, submit and act on backfills.

Exit codes, for every subcommand, from the error's category (cli.common.exit_code): 0 success;
1 an invalid config or a refused plan or control; 2 usage errors, unreadable files,
unreachable services and answers that did not come in time."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from backfill_orchestrator import __version__
from backfill_orchestrator.cli import (
    completion,
    control_commands,
    local,
    plan,
    schema,
    status,
    submit,
    validate,
    watch,
)
from backfill_orchestrator.cli import list as list_command
from backfill_orchestrator.cli.common import report
from backfill_orchestrator.errors import BackfillError

# In the order `backfill --help` lists them; the controls (cancel, retry, approve, reject)
# come from the client's CONTROLS table.
COMMANDS = (validate, schema, plan, submit, status, list_command, watch)
EXIT_BROKEN_PIPE = 141  # what a shell reports for a process killed by SIGPIPE (128 + 13)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="backfill", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        module.register(commands)
    control_commands.register_all(commands)
    local.register(commands)
    completion.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    completion.autocomplete(parser)  # answers the shell's completion request and exits, if it is one
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse: 0 for --help and --version, 2 for usage errors
        return int(exit_.code or 0)
    try:
        return int(args.run(args))
    except BackfillError as error:
        return report(error)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `backfill list | head`: the reader left; say nothing more
        _silence_stdout()
        return EXIT_BROKEN_PIPE


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a real file (a test's capture)
        pass


if __name__ == "__main__":
    raise SystemExit(main())
