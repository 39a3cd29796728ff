"""`backfill plan FILE [--marquez-url URL] [--catalog FILE] [--json]`

Prints what would rerun, for which dates, in which order. Readable by default; with --json
only the plan document goes to stdout (warnings go to stderr). Exit 0 for a plan; 1 for an
invalid config or catalog, or a refused plan (cycle, unknown root job); 2 for usage errors,
unreadable files and an unreachable Marquez."""

from __future__ import annotations

import argparse
import os
import sys

from backfill_orchestrator.cli.common import EXIT_INVALID, EXIT_OK, CliError, print_invalid, read_file
from backfill_orchestrator.client.plan import LineageClientMissingError, plan_backfill
from backfill_orchestrator.client.sources import prepare_bytes
from backfill_orchestrator.config import InvalidConfigError
from backfill_orchestrator.lineage.errors import InvalidMarquezUrlError, LineageError
from backfill_orchestrator.planner import (
    CATALOG_ENV,
    CatalogUnavailableError,
    InvalidCatalogError,
    PlanRefusedError,
)


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "plan", help="print the lineage-aware plan of a batch config (steps, dates, waves)",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("file", metavar="FILE")
    parser.add_argument("--marquez-url", metavar="URL", help="Marquez base URL (default $MARQUEZ_URL)")
    parser.add_argument("--catalog", metavar="FILE", help=f"job catalog, a path or s3:// URI (default ${CATALOG_ENV})")
    parser.add_argument("--json", action="store_true", help="print the plan document (plan_version 1) only")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    # Everything local is read and checked before Marquez is asked anything (plan_backfill's order).
    try:
        prepared = prepare_bytes(read_file(args.file), source=args.file)
    except InvalidConfigError as error:
        print_invalid(error, args.file)
        return EXIT_INVALID
    catalog_location = args.catalog or os.environ.get(CATALOG_ENV) or None
    try:
        view = plan_backfill(prepared, marquez_url=args.marquez_url, catalog=catalog_location)
    except InvalidCatalogError as error:
        for issue in error.issues:
            print(f"{catalog_location}: {issue.location}: {issue.message}", file=sys.stderr)
        return EXIT_INVALID
    except CatalogUnavailableError as error:
        raise CliError(f"catalog {error}") from None
    except (InvalidMarquezUrlError, LineageClientMissingError) as error:
        raise CliError(str(error)) from None
    except PlanRefusedError as error:
        print(f"backfill: plan refused: {error}", file=sys.stderr)
        return EXIT_INVALID
    except LineageError as error:
        raise CliError(str(error)) from None

    plan = view.plan
    if args.json:
        sys.stdout.write(plan.to_json())
        for warning in plan.warnings:
            print(f"warning: {warning.code}: {warning.message}", file=sys.stderr)
    else:
        sys.stdout.write(str(view))
    return EXIT_OK
