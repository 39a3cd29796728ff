"""`backfill submit FILE --bucket B [--prefix incoming/] [--wait [--table T] [--interval S] [--timeout S]]`

FILE is a path or URI (s3://, dbfs:/, file://, /Volumes/...). With --wait, follows the
backfill like `backfill watch` and exits as it does."""

from __future__ import annotations

import argparse
import sys

from backfill_orchestrator.cli.common import EXIT_INVALID, EXIT_OK, CliError, print_invalid, read_file
from backfill_orchestrator.cli.status import resolve_table
from backfill_orchestrator.cli.watch import add_watch_options, watch
from backfill_orchestrator.client import DEFAULT_PREFIX, SubmitError, prepare_bytes, upload_prepared
from backfill_orchestrator.config import InvalidConfigError


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "submit", help="validate locally, then upload to the config bucket (never uploads an invalid config)"
    )
    parser.add_argument("file", metavar="FILE")
    parser.add_argument("--bucket", required=True, help="the config bucket")
    parser.add_argument("--prefix", default=DEFAULT_PREFIX, help=f"key prefix (default {DEFAULT_PREFIX})")
    parser.add_argument("--wait", action="store_true", help="then follow the backfill until it ends, like `watch`")
    add_watch_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.wait:
        args.table = resolve_table(args.table)  # a usage error before anything is uploaded
    body = read_file(args.file)
    try:
        prepared = prepare_bytes(body, source=args.file)
    except InvalidConfigError as error:
        print_invalid(error, args.file)
        return EXIT_INVALID
    try:
        submission = upload_prepared(prepared, bucket=args.bucket, prefix=args.prefix)
    except SubmitError as error:
        raise CliError(str(error)) from None
    print(f"{submission.s3_uri}\nbackfill id: {submission.backfill_id}", flush=True)
    print(f"submitted {args.file} as {submission.backfill_id}", file=sys.stderr)
    if args.wait:
        return watch(submission.backfill_id, table=args.table, interval=args.interval, timeout=args.timeout)
    return EXIT_OK
