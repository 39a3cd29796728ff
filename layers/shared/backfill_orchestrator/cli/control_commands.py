"""The control subcommands, one per entry of the client's `CONTROLS` table (cancel, retry,
approve, reject, publish, discard, undo; a new control is one entry there): write a control document, wait for the
trigger's answer, print it.

Exit 0 when the trigger did it (or, with --no-wait, once it is written); 1 when it was
refused (by the status table before writing, or by the trigger: its reason is printed) or
the document rejected, and for an invalid request; 2 when the answer did not come in time,
the trigger failed on it, or the bucket or table cannot be reached."""

from __future__ import annotations

import argparse
import sys

from backfill_orchestrator.cli.common import (
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    Progress,
    add_bucket_option,
    add_json_option,
    print_json,
    require_bucket,
)
from backfill_orchestrator.client.control_requests import (
    CONTROLS,
    DEFAULT_TIMEOUT,
    Control,
    ControlOutcome,
    ControlStatus,
)
from backfill_orchestrator.client.status import TABLE_ENV

# The exit code of each outcome: one table.
EXIT_OF: dict[ControlStatus, int] = {
    ControlStatus.DONE: EXIT_OK,
    ControlStatus.SENT: EXIT_OK,
    ControlStatus.REFUSED: EXIT_INVALID,
    ControlStatus.REJECTED: EXIT_INVALID,
    ControlStatus.FAILED: EXIT_USAGE,
    ControlStatus.TIMED_OUT: EXIT_USAGE,
}


def register_all(commands: argparse._SubParsersAction) -> None:
    for control in CONTROLS.values():
        register_control(commands, control)


def register_control(commands: argparse._SubParsersAction, control: Control) -> None:
    parser = commands.add_parser(control.action, help=control.summary, description=control.summary)
    parser.add_argument("backfill_id", metavar="ID", help="backfill id")
    parser.add_argument(
        "--reason",
        required=control.default_reason is None,
        default=control.default_reason,
        help="why (shown in the status record and in Slack)"
        + (f"; default {control.default_reason!r}" if control.default_reason else ""),
    )
    add_bucket_option(parser)
    parser.add_argument(
        "--requested-by",
        dest="requested_by",
        help="your email or @handle (default: your AWS identity, as the trigger records it)",
    )
    parser.add_argument(
        "--table", help=f"the status table, to refuse what cannot work before writing (default ${TABLE_ENV})"
    )
    parser.add_argument(
        "--no-wait", dest="wait", action="store_false", help="do not wait for the trigger's answer"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help=f"seconds to wait for the trigger's answer (default {DEFAULT_TIMEOUT:.0f})",
    )
    add_json_option(parser, "the outcome")
    parser.set_defaults(run=run, action=control.action)


def run(args: argparse.Namespace) -> int:
    control = CONTROLS[args.action]
    progress = Progress()
    outcome = control(
        args.backfill_id,
        reason=args.reason,
        bucket=require_bucket(args.bucket),
        requested_by=args.requested_by,
        wait=args.wait,
        timeout=args.timeout,
        table=args.table,
        on_wait=lambda waited: progress.show(
            f"{args.action} {args.backfill_id}: waiting for the trigger's answer ({waited:.0f} s)"
        ),
    )
    progress.clear()
    report(outcome, as_json=args.json)
    return EXIT_OF[outcome.status]


def report(outcome: ControlOutcome, *, as_json: bool) -> None:
    if as_json:
        print_json(outcome.as_dict())
        return
    for what in outcome.unchecked:
        print(f"not checked: {what}", file=sys.stderr)
    if outcome.key is not None:
        print(
            f"{outcome.action} of {outcome.backfill_id} requested by {outcome.request.requested_by}: {outcome.s3_uri}"
        )
    if outcome.status is not ControlStatus.SENT:
        print(outcome)
    for error in outcome.errors:
        print(f"  {error}")
