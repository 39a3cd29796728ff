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
import os
import sys

from backfill_orchestrator.cli.common import EXIT_INVALID, EXIT_OK, read_file
from backfill_orchestrator.cli.status import resolve_table
from backfill_orchestrator.cli.watch import add_watch_options, watch
from backfill_orchestrator.client import (
    DEFAULT_PREFIX,
    check_prefix,
    deployment_policy,
    incoming_prefix,
    preflight_prepared,
    prepare_bytes,
    upload_prepared,
)
from backfill_orchestrator.lineage import URL_ENV
from backfill_orchestrator.planner import CATALOG_ENV, JobCatalog


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "submit",
        help="validate and preflight locally, then upload to the config bucket (never uploads a refused config)",
    )
    parser.add_argument("file", metavar="FILE")
    parser.add_argument("--bucket", required=True, help="the config bucket")
    parser.add_argument("--prefix", default=DEFAULT_PREFIX, help=f"key prefix (default {DEFAULT_PREFIX})")
    parser.add_argument("--marquez-url", metavar="URL", help=f"Marquez base URL (default ${URL_ENV})")
    parser.add_argument(
        "--catalog", metavar="FILE", help=f"job catalog, a path or s3:// URI (default ${CATALOG_ENV})"
    )
    parser.add_argument("--strict", action="store_true", help="preflight warnings refuse the submission")
    parser.add_argument(
        "--wait", action="store_true", help="then follow the backfill until it ends, like `watch`"
    )
    add_watch_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.wait:
        args.table = resolve_table(args.table)  # a usage error before anything is uploaded
    # Errors go to `backfill`'s one report (cli.common): located issues per line, exit code by category.
    body = read_file(args.file)
    prepared = prepare_bytes(body, source=args.file, policy=deployment_policy())
    incoming = incoming_prefix()
    check_prefix(args.prefix, incoming=incoming)
    catalog_location = args.catalog or os.environ.get(CATALOG_ENV) or None
    catalog = JobCatalog.load(catalog_location) if catalog_location else None
    lineage = None
    if args.marquez_url or os.environ.get(URL_ENV):
        from backfill_orchestrator.lineage import MarquezClient  # requests only when Marquez is used

        lineage = MarquezClient.from_env(base_url=args.marquez_url)
    verdict = preflight_prepared(prepared, lineage=lineage, catalog=catalog, strict=args.strict)
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
        prepared, bucket=args.bucket, prefix=args.prefix, incoming=incoming, verdict=verdict
    )
    print(f"{submission.s3_uri}\nbackfill id: {submission.backfill_id}", flush=True)
    print(f"submitted {args.file} as {submission.backfill_id}", file=sys.stderr)
    if args.wait:
        return watch(submission.backfill_id, table=args.table, interval=args.interval, timeout=args.timeout)
    return EXIT_OK
