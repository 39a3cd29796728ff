"""`backfill status ID [--table T] [--json]`: print a backfill's status record.

ID is a backfill id (`<name>-<8 hex>`) or, for a rejected upload, the `status_id` from its
result file. Exit 0 when found, 1 when there is no such record, 2 when the table cannot
be read (no table given, credentials, network)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from contextlib import contextmanager

from backfill_orchestrator.cli.common import EXIT_OK, CliError, exit_code
from backfill_orchestrator.client.status import (
    TABLE_ENV,
    BackfillNotFoundError,
    NoStatusTableError,
    backfill_status,
    status_table,
)
from backfill_orchestrator.status import StatusRecord, StatusStoreError


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("status", help="print the status record of a backfill")
    parser.add_argument("backfill_id", metavar="ID", help="backfill id, or a rejected upload's status_id")
    add_table_option(parser)
    parser.add_argument("--json", action="store_true", help="print the whole record as JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    table = resolve_table(args.table)
    try:
        with reading_table(table):
            record = backfill_status(args.backfill_id, table=table)
    except BackfillNotFoundError as error:  # the answer to the question: on stdout, like a record
        print(f"backfill: {error}")
        return exit_code(error)
    print(json.dumps(record.as_dict(), indent=2, default=str) if args.json else render(record))
    return EXIT_OK


def add_table_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--table", help=f"the status table (default ${TABLE_ENV})")


@contextmanager
def reading_table(table: str) -> Iterator[None]:
    """A failure to read the status table, said with the table's name."""
    from botocore.exceptions import BotoCoreError

    try:
        yield
    except (StatusStoreError, BotoCoreError) as error:
        raise StatusStoreError(f"cannot read the status table {table}: {error}") from None


def resolve_table(table: str | None) -> str:
    """--table, else $STATUS_TABLE; a usage error without either."""
    try:
        return status_table(table)
    except NoStatusTableError:
        raise CliError(f"no status table: pass --table or set {TABLE_ENV}") from None


def render(record: StatusRecord) -> str:
    """A few lines for people; `--json` has everything."""
    lines = [f"{record.backfill_id}: {record.state}"]
    if record.name:
        lines.append(
            f"  name {record.name} ({record.mode}{', dry run' if record.dry_run else ''}), owner {record.owner}"
        )
    if record.submitted_by:
        lines.append(f"  submitted by {record.submitted_by}")
    if record.approval_requested_at:
        lines.append(
            f"  approval requested {record.approval_requested_at}"
            + (f" from {', '.join(record.approvers)}" if record.approvers else "")
        )
    if record.approval:
        lines.append(
            f"  {record.approval.get('outcome')} by {record.approval.get('by')} at {record.approval.get('at')}"
        )
    for label, value in (
        ("source", record.source_uri),
        ("config", record.config_uri),
        ("plan", record.plan_uri),
        ("dag run", f"{record.dag_id}/{record.dag_run_id}" if record.dag_run_id else None),
        ("dag run url", record.dag_run_url),
        ("reason", record.reason),
    ):
        if value:
            lines.append(f"  {label}: {value}")
    if record.plan_summary:
        waves = record.plan_summary.get("waves", [])
        lines.append(f"  plan: {len(waves)} waves, {record.plan_summary.get('steps', 0)} steps")
        lines.extend(f"    wave {index + 1}: {', '.join(steps)}" for index, steps in enumerate(waves))
    for error in record.errors:
        lines.append(f"  error: {error.get('location')}: {error.get('message')}")
    lines.append("  history:")
    lines.extend(
        f"    {entry.get('at')} {entry.get('state')}{': ' + entry['detail'] if entry.get('detail') else ''}"
        f"{' (by ' + entry['by'] + ')' if entry.get('by') else ''}"
        for entry in record.history
    )
    return "\n".join(lines)
