"""`backfill watch ID [--interval S] [--timeout S]`: follow a backfill to its end.

Prints a progress line each time the status record changes. Exit 0 when it SUCCEEDED (or a
dry run was planned), 1 when it FAILED, was CANCELLED or REJECTED, 2 when the table cannot
be read or the timeout passed first."""

from __future__ import annotations

import argparse
import os

from backfill_orchestrator.cli.common import EXIT_INVALID, EXIT_OK, EXIT_USAGE, CliError
from backfill_orchestrator.status import StatusStore, StatusStoreError
from backfill_orchestrator.status.watch import WatchTimeoutError, follow, progress_line, succeeded

TABLE_ENV = "STATUS_TABLE"


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("watch", help="follow a backfill until it ends")
    parser.add_argument("backfill_id", metavar="ID", help="backfill id")
    add_watch_options(parser)
    parser.set_defaults(run=run)


def add_watch_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--table", help=f"the status table (default ${TABLE_ENV})")
    parser.add_argument("--interval", type=float, default=5.0, help="seconds between reads (default 5)")
    parser.add_argument("--timeout", type=float, default=None, help="give up after this many seconds")


def run(args: argparse.Namespace) -> int:
    return watch(args.backfill_id, table=args.table, interval=args.interval, timeout=args.timeout)


def watch(backfill_id: str, *, table: str | None, interval: float, timeout: float | None) -> int:
    table = table or os.environ.get(TABLE_ENV)
    if not table:
        raise CliError(f"no status table: pass --table or set {TABLE_ENV}")
    import boto3

    store = StatusStore(table_name=table, dynamodb_client=boto3.client("dynamodb"))
    last = None
    try:
        for record in follow(lambda: store.get(backfill_id), interval=interval, timeout=timeout):
            last = record
            print(progress_line(record), flush=True)
    except StatusStoreError as error:
        raise CliError(f"cannot read the status table {table}: {error}") from None
    except WatchTimeoutError as error:
        print(f"backfill: {backfill_id}: {error}")
        return EXIT_USAGE
    return EXIT_OK if last is not None and succeeded(last) else EXIT_INVALID
