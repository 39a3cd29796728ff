"""The food delivery sample pipeline, for the demo, the tests and the benchmarks.

    python -m spark_jobs.sample.pipeline generate --warehouse DIR --start 2021-05-01 --days 90
    python -m spark_jobs.sample.pipeline break --warehouse DIR --days 2021-06-04,2021-06-10..2021-06-12
    python -m spark_jobs.sample.pipeline run-clean --warehouse DIR

`generate` replaces the raw layer (`raw/orders`, `raw/menu_items`); `run-clean` runs every
transform over every day and rewrites the processed layer (the reference); `break` damages
partitions (see --help). Exit codes: 0 done; 2 bad arguments or nothing to break."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from backfill_orchestrator.documents import has_scheme
from spark_jobs.engine import cli_args
from spark_jobs.engine.scope import Scope
from spark_jobs.engine.storage import WarehouseNotFoundError, resolve_warehouse
from spark_jobs.sample.data import (
    FEEDS,
    GeneratorSettings,
    NothingToBreakError,
    UnsupportedBreakError,
    break_partitions,
    generate,
)
from spark_jobs.sample.tables import PROCESSED_TABLES, RAW_ORDERS

EXIT_OK, EXIT_USAGE = 0, 2
_PROCESSED = {table.name: table for table in PROCESSED_TABLES}


def _hours_per_day(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 24:
        raise argparse.ArgumentTypeError(f"hours per day are 1 to 24, got {text!r}")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sample_pipeline", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    gen = commands.add_parser("generate", help="write deterministic raw orders and menu items")
    gen.add_argument("--warehouse", required=True)
    gen.add_argument("--start", required=True, type=cli_args.day, help="first day, YYYY-MM-DD")
    gen.add_argument("--days", required=True, type=cli_args.positive, help="number of days")
    gen.add_argument(
        "--orders-per-hour", type=cli_args.positive, default=20, help="per feed, on average (20)"
    )
    gen.add_argument(
        "--hours-per-day", type=_hours_per_day, default=24, help="orders in each day's first N hours (24)"
    )
    gen.add_argument("--seed", type=int, default=7)
    gen.add_argument("--feeds", type=cli_args.feed_list, default=FEEDS, help=f"default {','.join(FEEDS)}")

    brk = commands.add_parser(
        "break",
        help="damage partitions so a backfill has something to repair",
        description="processed layer: drop (delete) or corrupt (lose every other row) a table's partitions; "
        "raw layer: drop partitions or add late-arriving orders to them (the processed layer falls behind).",
    )
    brk.add_argument("--warehouse", required=True)
    brk.add_argument(
        "--days", required=True, type=cli_args.day_list, help="e.g. 2021-06-04,2021-06-10..2021-06-12"
    )
    brk.add_argument("--hours", type=cli_args.hour_list, help="default: every hour")
    brk.add_argument("--feeds", type=cli_args.feed_list, help="default: every feed")
    brk.add_argument("--layer", choices=("processed", "raw"), default="processed")
    brk.add_argument("--table", choices=sorted(_PROCESSED), default="orders", help="processed table (orders)")
    brk.add_argument(
        "--mode", choices=("drop", "corrupt", "late"), help="default: drop (processed), late (raw)"
    )

    clean = commands.add_parser("run-clean", help="run the whole pipeline over every day (the reference)")
    clean.add_argument("--warehouse", required=True)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    mode = None
    if args.command == "break":
        mode = args.mode or ("late" if args.layer == "raw" else "drop")
    if args.command == "break" and (args.layer, mode) in (("processed", "late"), ("raw", "corrupt")):
        print(f"sample_pipeline: --mode {mode} does not apply to the {args.layer} layer", file=sys.stderr)
        return EXIT_USAGE
    if args.command == "generate" and not has_scheme(args.warehouse):
        Path(args.warehouse).mkdir(parents=True, exist_ok=True)
    try:
        warehouse = resolve_warehouse(args.warehouse)
    except WarehouseNotFoundError as error:
        print(f"sample_pipeline: {error}", file=sys.stderr)
        return EXIT_USAGE

    from spark_jobs.engine.runner import run_everything  # pyspark only once the arguments are good
    from spark_jobs.engine.session import spark_session
    from spark_jobs.sample.transforms import FOOD_DELIVERY

    with spark_session(f"sample-pipeline-{args.command}") as spark:
        if args.command == "generate":
            settings = GeneratorSettings(
                start=args.start,
                days=args.days,
                orders_per_hour=args.orders_per_hour,
                hours_per_day=args.hours_per_day,
                seed=args.seed,
                feeds=args.feeds,
            )
            rows = generate(spark=spark, warehouse=warehouse, settings=settings)
            print(
                f"generated {rows} raw orders: {args.days} days from {args.start}, feeds {','.join(args.feeds)}"
            )
        elif args.command == "run-clean":
            for table, rows in run_everything(
                spark=spark, warehouse=warehouse, registry=FOOD_DELIVERY
            ).items():
                print(f"{table}: {rows} rows")
        else:
            table = RAW_ORDERS if args.layer == "raw" else _PROCESSED[args.table]
            scope = Scope(days=args.days, hours=args.hours, feeds=args.feeds)
            try:
                paths = break_partitions(
                    spark=spark, warehouse=warehouse, table=table, scope=scope, mode=mode
                )
            except (NothingToBreakError, UnsupportedBreakError) as error:
                print(f"sample_pipeline: {error}", file=sys.stderr)
                return EXIT_USAGE
            print(f"{mode}: {len(paths)} partitions of {table.name}")
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
