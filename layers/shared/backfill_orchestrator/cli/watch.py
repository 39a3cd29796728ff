"""`backfill watch ID [--interval S] [--timeout S]`: follow a backfill to its end.

Prints a progress line each time the status record changes. Exit 0 when it SUCCEEDED (or a
dry run was planned), 1 when it FAILED, was CANCELLED or REJECTED, 2 when the table cannot
be read or the timeout passed first."""

from __future__ import annotations

import argparse
import json
from datetime import datetime

from backfill_orchestrator._compat import UTC
from backfill_orchestrator.cli.common import EXIT_INVALID, EXIT_OK, Progress, add_json_option, exit_code
from backfill_orchestrator.cli.status import add_table_option, reading_table, resolve_table
from backfill_orchestrator.client.status import watch_backfill
from backfill_orchestrator.status import StatusRecord
from backfill_orchestrator.status.watch import WatchTimeoutError, progress_line, succeeded


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("watch", help="follow a backfill until it ends")
    parser.add_argument("backfill_id", metavar="ID", help="backfill id")
    add_watch_options(parser)
    add_json_option(parser, "each change (one JSON record a line)")
    parser.set_defaults(run=run)


def add_watch_options(parser: argparse.ArgumentParser) -> None:
    add_table_option(parser)
    parser.add_argument("--interval", type=float, default=5.0, help="seconds between reads (default 5)")
    parser.add_argument("--timeout", type=float, default=None, help="give up after this many seconds")


def run(args: argparse.Namespace) -> int:
    return watch(
        args.backfill_id, table=args.table, interval=args.interval, timeout=args.timeout, as_json=args.json
    )


def watch(
    backfill_id: str, *, table: str | None, interval: float, timeout: float | None, as_json: bool = False
) -> int:
    """A line per change (on a terminal, a status line kept up to date between them)."""
    table = resolve_table(table)
    progress = Progress()
    last: list[StatusRecord] = []

    def changed(record: StatusRecord) -> None:
        progress.clear()
        print(json.dumps(record.as_dict(), default=str) if as_json else progress_line(record), flush=True)
        last[:] = [record]

    def waiting(_: float) -> None:
        if last:
            progress.show(f"watching: {progress_line(last[0], now=datetime.now(UTC))}")

    try:
        with reading_table(table):
            final = watch_backfill(
                backfill_id,
                table=table,
                interval=interval,
                timeout=timeout,
                on_update=changed,
                on_wait=waiting,
            )
    except WatchTimeoutError as error:  # the answer so far: on stdout, after the progress lines
        progress.clear()
        print(f"backfill: {backfill_id}: {error}")
        return exit_code(error)
    finally:
        progress.clear()
    return EXIT_OK if succeeded(final) else EXIT_INVALID
