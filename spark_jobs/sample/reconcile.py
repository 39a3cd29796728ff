"""Reconcile raw and processed orders; write a backfill config for what does not match.

    python -m spark_jobs.sample.reconcile --warehouse DIR --out FILE [--days 2021-05-01..2021-05-31]
        [--name NAME] [--owner OWNER] [--namespace food_delivery]

FILE may be a path or s3://bucket/key (e.g. the config bucket's incoming/ prefix). The config
is validated with the same rules as every config before it is written.

Exit codes: 0 mismatches found and the config written; 0 everything matches (nothing is
written, and an existing FILE is left alone); 2 bad arguments, unreadable data or a config
that could not be written."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import Any

from backfill_orchestrator.config import InvalidConfigError, parse_config
from backfill_orchestrator.documents import DocumentError, is_s3, write_bytes
from spark_jobs.engine import cli_args
from spark_jobs.engine.scope import Scope
from spark_jobs.engine.storage import WarehouseNotFoundError, resolve_warehouse
from spark_jobs.sample.reconciliation import (
    MissingRawLayerError,
    backfill_config,
    covered_partitions,
    find_mismatches,
    render_yaml,
)

EXIT_OK, EXIT_ERROR = 0, 2
DEFAULT_OWNER = "@data-platform"
SHOWN_MISMATCHES = 50


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="reconcile", description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--out", required=True, help="where to write the config: a path or s3://bucket/key")
    parser.add_argument("--days", type=cli_args.day_list, help="only these days, e.g. 2021-05-01..2021-05-31 (default: all)")
    parser.add_argument("--name", help="config name (default: reconcile-YYYYMMDD, today in UTC)")
    parser.add_argument(
        "--owner", default=os.environ.get("BACKFILL_OWNER", DEFAULT_OWNER),
        help=f"email or @slack-handle (default: $BACKFILL_OWNER or {DEFAULT_OWNER})",
    )
    parser.add_argument("--namespace", default="food_delivery", help="lineage namespace of etl_orders")
    return parser


def main(argv: Sequence[str] | None = None, *, s3_client: Any = None, today: date | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    today = today or datetime.now(UTC).date()
    name = args.name or f"reconcile-{today:%Y%m%d}"
    try:
        warehouse = resolve_warehouse(args.warehouse)
    except WarehouseNotFoundError as error:
        print(f"reconcile: {error}", file=sys.stderr)
        return EXIT_ERROR

    from spark_jobs.engine.session import spark_session  # pyspark only once the arguments are good

    with spark_session("reconcile") as spark:
        try:
            mismatches = find_mismatches(spark=spark, warehouse=warehouse, scope=Scope(days=args.days))
        except MissingRawLayerError as error:
            print(f"reconcile: {error}", file=sys.stderr)
            return EXIT_ERROR
        except Exception as error:  # Spark's many error types all mean "could not read the layers"
            print(f"reconcile: cannot compare the layers: {str(error).strip().splitlines()[0]}", file=sys.stderr)
            return EXIT_ERROR
    if not mismatches:
        print("reconcile: raw and processed orders match; no config written")
        return EXIT_OK
    for mismatch in mismatches[:SHOWN_MISMATCHES]:
        print(f"mismatch {mismatch}")
    if len(mismatches) > SHOWN_MISMATCHES:
        print(f"... and {len(mismatches) - SHOWN_MISMATCHES} more")

    document = backfill_config(mismatches, name=name, owner=args.owner, namespace=args.namespace, checked_on=today)
    text = render_yaml(document, header=f"Written by spark_jobs.sample.reconcile on {today.isoformat()}.")
    try:
        config = parse_config(text, fmt="yaml", source=args.out)
    except InvalidConfigError as error:  # e.g. a --name or --owner the config rules refuse
        print(f"reconcile: the config would not be valid:\n{error}", file=sys.stderr)
        return EXIT_ERROR
    if s3_client is None and is_s3(args.out):
        import boto3

        s3_client = boto3.client("s3")
    try:
        write_bytes(args.out, text.encode(), s3_client=s3_client, content_type="application/yaml")
    except DocumentError as error:
        print(f"reconcile: {error}", file=sys.stderr)
        return EXIT_ERROR
    hours = len(config.hours) if config.hours is not None else 24
    print(
        f"reconcile: {len(mismatches)} mismatched partitions; wrote {args.out} ({config.name}: "
        f"{len(config.days)} days x {hours} hours x {len(config.feeds or ())} feeds = "
        f"{covered_partitions(document, len(config.days))} partitions to rerun)"
    )
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
