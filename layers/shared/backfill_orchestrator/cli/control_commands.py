"""What `backfill cancel` and `backfill retry` share: write a control document for the trigger
to act on (`control/<id>/<action>-<time>.json`).

Exit 0 when written, 1 for an invalid request (bad id, blank reason, no usable identity),
2 when the bucket cannot be written."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from backfill_orchestrator.cli.common import EXIT_OK
from backfill_orchestrator.client.control_requests import ControlReceipt, cancel_backfill, retry_backfill

ACTIONS: dict[str, tuple[str, Callable[..., ControlReceipt]]] = {
    "cancel": ("ask the trigger to cancel a backfill", cancel_backfill),
    "retry": ("ask the trigger to run a failed or cancelled backfill again", retry_backfill),
}


def register_action(commands: argparse._SubParsersAction, action: str) -> None:
    help_text, _ = ACTIONS[action]
    parser = commands.add_parser(action, help=help_text, description=help_text)
    parser.add_argument("backfill_id", metavar="ID", help="backfill id")
    parser.add_argument("--reason", required=True, help="why (shown in the status record and in Slack)")
    parser.add_argument("--bucket", required=True, help="the config bucket")
    parser.add_argument(
        "--requested-by", dest="requested_by", help="your email or @handle (default: your AWS identity)"
    )
    parser.set_defaults(run=run, action=action)


def run(args: argparse.Namespace) -> int:
    _, request = ACTIONS[args.action]
    receipt = request(
        args.backfill_id, reason=args.reason, bucket=args.bucket, requested_by=args.requested_by
    )
    print(
        f"{receipt.s3_uri}\n{args.action} of {receipt.request.backfill_id} requested by {receipt.request.requested_by}"
    )
    return EXIT_OK
