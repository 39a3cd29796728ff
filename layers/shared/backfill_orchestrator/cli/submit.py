"""`backfill submit FILE --bucket B [--prefix incoming/] [--marquez-url URL] [--catalog FILE] [--strict]
[--wait [--table T] [--interval S] [--timeout S]]`

FILE is a path or URI (s3://, dbfs:/, file://, /Volumes/...). Validates with the deployment's
allowlists (ALLOWED_NAMESPACES, SPARK_PROFILES), refuses a prefix outside the incoming prefix
(INCOMING_PREFIX), runs the trigger's preflight against Marquez and the catalog when they are
given or set ($MARQUEZ_URL, $BACKFILL_JOB_CATALOG), and only then uploads. Exit 1 for an
invalid or refused config (nothing uploaded), 2 for usage errors and an unreachable bucket;
what could not be checked is printed to stderr. With --wait, follows the backfill like
`backfill watch` and exits as it does."""

from __future__ import annotations

import argparse
import sys

from backfill_orchestrator.cli.common import (
    EXIT_INVALID,
    EXIT_OK,
    add_bucket_option,
    add_json_option,
    add_preflight_options,
    print_json,
    read_file,
    require_bucket,
)
from backfill_orchestrator.cli.status import resolve_table
from backfill_orchestrator.cli.watch import add_watch_options, watch
from backfill_orchestrator.client import (
    DEFAULT_PREFIX,
    check_prefix,
    deployment_policy,
    incoming_prefix,
    preflight_checked,
    prepare_bytes,
    upload_prepared,
)


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "submit",
        help="validate and preflight locally, then upload to the config bucket (never uploads a refused config)",
    )
    parser.add_argument("file", metavar="FILE")
    add_bucket_option(parser)
    parser.add_argument("--prefix", default=DEFAULT_PREFIX, help=f"key prefix (default {DEFAULT_PREFIX})")
    add_preflight_options(parser, refuses="the submission")
    parser.add_argument(
        "--wait", action="store_true", help="then follow the backfill until it ends, like `watch`"
    )
    add_watch_options(parser)
    add_json_option(parser, "the submission (with --wait: then each change, one JSON object a line)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    bucket = require_bucket(args.bucket)
    if args.wait:
        args.table = resolve_table(args.table)  # a usage error before anything is uploaded
    # Errors go to `backfill`'s one report (cli.common): located issues per line, exit code by category.
    body = read_file(args.file)
    prepared = prepare_bytes(body, source=args.file, policy=deployment_policy())
    incoming = incoming_prefix()
    check_prefix(args.prefix, incoming=incoming)
    verdict, _ = preflight_checked(
        prepared, marquez_url=args.marquez_url, catalog=args.catalog, strict=args.strict
    )
    for what in verdict.unchecked:
        print(f"not checked: {what}", file=sys.stderr)
    for finding in verdict.warnings:
        print(f"warning: {finding.location}: {finding.message}", file=sys.stderr)
    if not verdict.accepted:
        for finding in verdict.refusals:
            print(f"{args.file}: {finding.location}: {finding.message}", file=sys.stderr)
        print("backfill: refused by preflight; nothing uploaded", file=sys.stderr)
        return EXIT_INVALID
    submission = upload_prepared(
        prepared, bucket=bucket, prefix=args.prefix, incoming=incoming, verdict=verdict
    )
    if args.json:
        print_json(
            {"backfill_id": submission.backfill_id, "uri": submission.s3_uri, "verdict": verdict.summary()}
        )
    else:
        print(f"{submission.s3_uri}\nbackfill id: {submission.backfill_id}", flush=True)
        print(f"submitted {args.file} as {submission.backfill_id}", file=sys.stderr)
    if args.wait:
        return watch(
            submission.backfill_id,
            table=args.table,
            interval=args.interval,
            timeout=args.timeout,
            as_json=args.json,
        )
    return EXIT_OK
