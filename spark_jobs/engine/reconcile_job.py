"""The reconciliation job: check every table with rules over a window of days, write a
mismatch report, and turn the mismatches into the fewest backfill configs that repair them.

    python -m spark_jobs.engine.reconcile_job --warehouse W --rules RULES --catalog CATALOG
        --report URI --configs-out PREFIX (--days 2021-05-01..2021-05-09 | --window-days N [--end DAY])
        [--owner OWNER] [--in-flight-plan URI ...] [--registry MODULE:NAME]

Mismatches already repaired by a backfill in flight (`--in-flight-plan`, each a plan.json)
are reported but get no config. Configs go to `<PREFIX>/<name>.yaml`, each validated first;
none are written when nothing needs repair. The report is always written: it is the record
that the check ran.

Exit codes: 0 checked (whatever was found); 1 the tables could not be compared or a document
could not be written; 2 bad arguments, rules, catalog, registry, warehouse or in-flight plans."""

from __future__ import annotations

try:
    from spark_jobs.engine.script_path import make_packages_importable
except ModuleNotFoundError:  # spark-submit runs this file from a checkout: its directory is sys.path[0]
    from script_path import make_packages_importable

make_packages_importable(__file__)

import argparse  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from datetime import UTC, date, datetime, timedelta  # noqa: E402
from typing import Any  # noqa: E402

from backfill_orchestrator.config import InvalidConfigError  # noqa: E402
from backfill_orchestrator.documents import DocumentError, is_s3, write_bytes  # noqa: E402
from backfill_orchestrator.errors import BackfillError  # noqa: E402
from backfill_orchestrator.planner.catalog import JobCatalog  # noqa: E402
from backfill_orchestrator.reconciliation import (  # noqa: E402
    ReconciliationReport,
    backfill_configs,
    explain,
    in_flight_plans,
    load_rules,
    render_yaml,
    reported,
    split_covered,
)
from backfill_orchestrator.reconciliation.report import MAX_LISTED_MISMATCHES, TableSummary, WrittenConfig  # noqa: E402
from spark_jobs.engine import cli_args  # noqa: E402
from spark_jobs.engine.registry import RegistryNotFoundError, load_registry  # noqa: E402
from spark_jobs.engine.storage import resolve_warehouse  # noqa: E402

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
DEFAULT_OWNER = "@data-platform"
SHOWN = 50


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="reconcile_job", description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--rules", required=True, help="reconciliation rules: a path or s3://bucket/key")
    parser.add_argument("--catalog", required=True, help="the job catalog (which job writes which table)")
    parser.add_argument(
        "--report", required=True, help="where the mismatch report goes: a path or s3://bucket/key"
    )
    parser.add_argument("--configs-out", required=True, help="folder or s3:// prefix for the configs")
    window = parser.add_mutually_exclusive_group(required=True)
    window.add_argument("--days", type=cli_args.day_list, help="e.g. 2021-05-01..2021-05-09")
    window.add_argument("--window-days", type=cli_args.positive, help="the N days ending on --end")
    parser.add_argument(
        "--end", type=cli_args.day, help="last day of --window-days (default: yesterday, UTC)"
    )
    parser.add_argument("--owner", default=os.environ.get("BACKFILL_OWNER", DEFAULT_OWNER))
    parser.add_argument(
        "--in-flight-plan", action="append", default=[], help="plan.json of a backfill in flight"
    )
    cli_args.add_registry_option(parser)
    return parser


def window_days(args: argparse.Namespace, today: date) -> tuple[date, ...]:
    if args.days:
        return args.days
    end = args.end or today - timedelta(days=1)
    return tuple(end - timedelta(days=n) for n in reversed(range(args.window_days)))


def main(argv: Sequence[str] | None = None, *, s3_client: Any = None, today: date | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    today = today or datetime.now(UTC).date()
    uris = [args.rules, args.catalog, args.report, args.configs_out, *args.in_flight_plan]
    if s3_client is None and any(is_s3(uri) for uri in uris):
        import boto3

        s3_client = boto3.client("s3")
    try:
        registry = load_registry(args.registry)
        warehouse = resolve_warehouse(args.warehouse)
        rules = load_rules(args.rules, s3_client=s3_client)
        catalog = JobCatalog.load(args.catalog, s3_client=s3_client)
        plans = in_flight_plans(args.in_flight_plan, s3_client=s3_client)
        from spark_jobs.engine.reconciliation import (  # pyspark only once the inputs are good
            reconcile_table,
            subjects,
        )

        checked = subjects(rules, registry=registry, catalog=catalog, source=args.rules)
    except BackfillError as error:  # every input problem is located in its message
        label = "--registry " if isinstance(error, RegistryNotFoundError) else ""
        print(f"reconcile_job: {label}{error}", file=sys.stderr)
        return EXIT_USAGE
    days = window_days(args, today)

    from spark_jobs.engine.scope import Scope
    from spark_jobs.engine.session import spark_session

    checked_at = datetime.now(UTC).isoformat(timespec="seconds")
    outcomes = []
    with spark_session("reconcile") as spark:
        try:
            for subject in checked:
                outcomes.append(
                    reconcile_table(spark=spark, warehouse=warehouse, subject=subject, scope=Scope(days=days))
                )
        except Exception as error:  # Spark's many error types all mean "could not compare"
            print(
                f"reconcile_job: cannot compare {subject.rules.table}: {str(error).strip().splitlines()[0]}",
                file=sys.stderr,
            )
            return EXIT_FAILED

    nodes = {subject.rules.table: subject.node for subject in checked}
    found = [mismatch for outcome in outcomes for mismatch in outcome.mismatches]
    uncovered, covered = split_covered(found, nodes=nodes, plans=plans)
    roles = explain(uncovered, nodes=nodes)
    roots = [mismatch for mismatch in uncovered if roles[mismatch] is None]
    for mismatch in sorted(found)[:SHOWN]:
        state = (
            f"in flight in {covered[mismatch]}"
            if mismatch in covered
            else (f"explained by {roles[mismatch]}" if roles[mismatch] else "root")
        )
        print(f"mismatch {mismatch} [{state}]")
    if len(found) > SHOWN:
        print(f"... and {len(found) - SHOWN} more (see the report)")

    try:
        configs = backfill_configs(
            roots, nodes=nodes, owner=args.owner, checked_on=today, report_uri=args.report
        )
    except InvalidConfigError as error:  # e.g. an --owner the config rules refuse
        print(f"reconcile_job: the configs would not be valid:\n{error}", file=sys.stderr)
        return EXIT_USAGE
    written = []
    prefix = args.configs_out.rstrip("/")
    try:
        for config, document in configs:
            uri = f"{prefix}/{config.name}.yaml"
            text = render_yaml(
                document, header=f"Written by reconciliation on {today.isoformat()}; report: {args.report}"
            )
            write_bytes(uri, text.encode(), s3_client=s3_client, content_type="application/yaml")
            in_config = [m for m in roots if nodes[m.table].job in config.jobs]
            written.append(
                WrittenConfig(
                    name=config.name,
                    uri=uri,
                    jobs=[job.name for job in config.jobs or ()],
                    days=len(config.days),
                    hours=config.hours,
                    feeds=config.feeds,
                    mismatches=len(in_config),
                )
            )
            print(f"config {uri}: {', '.join(j.name for j in config.jobs or ())} for {len(config.days)} days")
        report = ReconciliationReport(
            checked_at=checked_at,
            warehouse=warehouse,
            days=list(days),
            tables=[
                TableSummary(
                    table=o.table,
                    job=nodes[o.table].job.name,
                    partitions_compared=o.partitions_compared,
                    mismatches=len(o.mismatches),
                )
                for o in outcomes
            ],
            mismatches_found=len(found),
            mismatches_in_flight=len(covered),
            mismatches_listed=[
                reported(m, job=nodes[m.table].job.name, explained_by=roles.get(m), in_flight=covered.get(m))
                for m in sorted(found)[:MAX_LISTED_MISMATCHES]
            ],
            mismatches_not_listed=max(0, len(found) - MAX_LISTED_MISMATCHES),
            configs=written,
        )
        write_bytes(args.report, report.to_json().encode(), s3_client=s3_client)
    except DocumentError as error:
        print(f"reconcile_job: {error}", file=sys.stderr)
        return EXIT_FAILED
    print(
        f"reconcile_job: {len(found)} mismatched partitions in {len(days)} days ({len(covered)} already in flight); "
        f"{len(written)} configs written; report {args.report}"
    )
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
