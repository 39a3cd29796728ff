"""`backfill plan FILE [--marquez-url URL] [--catalog FILE] [--warehouse URI] [--strict] [--format F]`

Prints what would rerun, for which dates, in which order, and its estimate, after the same
preflight the trigger runs (the deployment's limits from the same variables, docs/planner.md).
Formats: text (default), json (the plan document; warnings go to stderr), mermaid, dot, html.
Exit 0 for a plan; 1 for an invalid config or catalog, or a refused plan (cycle, unknown root
job, a preflight refusal); 2 for usage errors, unreadable files and an unreachable Marquez."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from backfill_orchestrator.cli.common import EXIT_INVALID, EXIT_OK, add_preflight_options, read_file
from backfill_orchestrator.client.plan import load_catalog
from backfill_orchestrator.client.preflight import deployment_policy, marquez_client, preflight_checked
from backfill_orchestrator.client.sources import prepare_bytes
from backfill_orchestrator.preflight.render import FORMATS, render
from backfill_orchestrator.settings.environment import EnvironmentReader
from backfill_orchestrator.settings.preflight import WAREHOUSE_ENV, PreflightLimits


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "plan",
        help="print the lineage-aware plan of a batch config (steps, dates, waves)",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("file", metavar="FILE")
    add_preflight_options(parser, refuses="the plan")
    parser.add_argument(
        "--warehouse", metavar="URI", help=f"warehouse root to list inputs in (default ${WAREHOUSE_ENV})"
    )
    parser.add_argument("--format", choices=FORMATS, default=None, help="output form (default text)")
    parser.add_argument("--json", action="store_true", help="the same as --format json")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    # Everything local is read and checked before Marquez is asked anything (plan_backfill's order).
    # Errors go to `backfill`'s one report (cli.common): located issues per line, exit code by category.
    prepared = prepare_bytes(read_file(args.file), source=args.file, policy=deployment_policy())
    limits = deployment_limits()
    if args.warehouse:
        limits = replace(limits, warehouse_uri=args.warehouse)
    catalog = load_catalog(args.catalog)
    # Marquez is required here (marquez_client: its URL); a refused plan
    # (an unknown root job, a cycle) is reported with every other problem of the file, located.
    verdict, plan = preflight_checked(
        prepared,
        lineage=marquez_client(args.marquez_url),
        catalog=catalog if len(catalog) else None,
        limits=limits,
        strict=args.strict,
        lineage_errors_raise=True,
    )
    for what in verdict.unchecked:
        print(f"not checked: {what}", file=sys.stderr)
    if not verdict.accepted or plan is None:
        for finding in verdict.refusals:
            print(f"{args.file}: {finding.location}: {finding.message}", file=sys.stderr)
        print(f"backfill: plan refused ({len(verdict.refusals)} problems)", file=sys.stderr)
        return EXIT_INVALID

    fmt = "json" if args.json else (args.format or "text")
    sys.stdout.write(render(plan, fmt))
    if fmt != "text":
        for warning in plan.warnings:
            print(f"warning: {warning.code}: {warning.message}", file=sys.stderr)
    return EXIT_OK


def deployment_limits() -> PreflightLimits:
    """The deployment's preflight limits from the same variables the trigger reads."""
    env = EnvironmentReader()
    limits = PreflightLimits.read(env)
    env.check()
    return limits
