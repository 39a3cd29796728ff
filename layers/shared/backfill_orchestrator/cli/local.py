"""`backfill local up|down [--dir DIR] [--json]`: the stand-ins of a deployment on this machine
(moto, the Marquez and Airflow doubles, Slack and PagerDuty receivers, S3 events into the
trigger), to try every command without AWS. `up` prints the environment to export (also in
DIR/env.sh): `eval "$(backfill local up)"`. It needs the repository's development install
(`make setup`): `backfill_local` is not part of the package's wheel."""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from backfill_orchestrator.cli.common import EXIT_OK, CliError, add_json_option, print_json

DEFAULT_DIR = ".backfill-local"


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "local",
        help="start or stop local stand-ins of a deployment (moto, Marquez, Airflow, Slack, the trigger)",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("action", choices=("up", "down"), help="up: start and print the exports; down: stop")
    parser.add_argument(
        "--dir", default=DEFAULT_DIR, help=f"where its files and logs go (default {DEFAULT_DIR})"
    )
    add_json_option(parser, "the environment")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:  # the repository's, not the package's (not in the wheel)
        stack = importlib.import_module("backfill_local.stack")
    except ModuleNotFoundError:
        raise CliError(
            "`backfill local` needs the repository's development install (backfill_local is not part of "
            "the backfill-orchestrator wheel): clone the repository, run `make setup`, then "
            "`.venv/bin/backfill local up`"
        ) from None
    directory = Path(args.dir).resolve()
    if args.action == "down":
        stopped = stack.down(directory)
        print("stopped" if stopped else f"nothing running (no live process in {directory})", file=sys.stderr)
        return EXIT_OK
    print(f"starting the local stand-ins (log: {directory / 'stack.log'}) ...", file=sys.stderr)
    environment = stack.up(directory)  # a StackError (a ServiceError) says why, and where the log is
    if args.json:
        print_json(environment)
    else:
        sys.stdout.write(stack.exports(environment))
        print(
            f'ready: eval "$(cat {directory / "env.sh"})" (or the lines above); '
            f"`backfill local down` stops it; slack messages: {directory / 'slack.log'}",
            file=sys.stderr,
        )
    return EXIT_OK
