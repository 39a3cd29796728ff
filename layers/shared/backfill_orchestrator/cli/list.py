"""`backfill list [--state S] [--owner O] [--submitted-by P] [--name N] [--since DATE] [--limit N] [--json]`:
the backfills newest first, read through the status table's indexes (never a scan).

Exit 0 (also when nothing matches), 2 when the table cannot be read.

The table is `render`'s few lines of our own: a table library (tabulate, rich) would replace
them with as many lines of calls and add a dependency to the light client."""

from __future__ import annotations

import argparse
import json
from datetime import datetime

from backfill_orchestrator._compat import UTC
from backfill_orchestrator.cli.common import EXIT_OK
from backfill_orchestrator.cli.status import add_table_option, reading_table, resolve_table
from backfill_orchestrator.client.status import list_backfills
from backfill_orchestrator.parsing import positive
from backfill_orchestrator.status import BackfillState, StatusRecord

COLUMNS = ("BACKFILL", "STATE", "OWNER", "SUBMITTED_BY", "CREATED", "UPDATED")


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("list", help="list backfills, newest first")
    parser.add_argument(
        "--state", type=_state, help=f"only this state ({', '.join(s.value for s in BackfillState)})"
    )
    parser.add_argument("--owner", help="only this owner (the config's owner)")
    parser.add_argument("--submitted-by", dest="submitted_by", help="only uploads by this principal")
    parser.add_argument("--name", help="only this config name")
    parser.add_argument(
        "--since", type=_since, help="created (with --state: updated) on or after YYYY-MM-DD[THH:MM]"
    )
    parser.add_argument("--limit", type=positive, default=50, help="at most this many (default 50)")
    add_table_option(parser)
    parser.add_argument("--json", action="store_true", help="print JSON records")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    table = resolve_table(args.table)
    with reading_table(table):
        records = list_backfills(
            table=table,
            state=args.state,
            owner=args.owner,
            submitted_by=args.submitted_by,
            name=args.name,
            since=args.since,
            limit=args.limit,
        )
    if args.json:
        print(json.dumps([record.as_dict() for record in records], indent=2, default=str))
    else:
        print(render(records))
    return EXIT_OK


def render(records: list[StatusRecord]) -> str:
    if not records:
        return "no backfills match"
    rows = [COLUMNS] + [
        (
            r.backfill_id,
            str(r.state),
            r.owner or "-",
            r.submitted_by or "-",
            r.created_at[:19],
            r.updated_at[:19],
        )
        for r in records
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows
    )


def _state(text: str) -> BackfillState:
    try:
        return BackfillState(text.upper())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"unknown state {text!r}; one of {', '.join(s.value for s in BackfillState)}"
        ) from None


def _since(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected YYYY-MM-DD or YYYY-MM-DDTHH:MM, got {text!r}") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)
