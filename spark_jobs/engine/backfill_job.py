"""The generic backfill job: run a plan's spark steps in one Spark application.

    python -m spark_jobs.engine.backfill_job --plan PLAN --warehouse WAREHOUSE [--report REPORT]
        [--registry MODULE:NAME] [--publish-policy POLICY] [--publish-root URI] [--attempt N]
        [--rules RULES] [--catalog none|hive|glue]
    spark-submit spark_jobs/engine/backfill_job.py --plan s3://.../plan.json --warehouse s3a://lake

PLAN is a plan document (plan_version 1) on local disk or S3; the run report goes to
REPORT, by default `run_report.json` next to the plan. The transforms come from the
Registry MODULE:NAME, by default $BACKFILL_SPARK_REGISTRY or else the food delivery sample's.
Each step's output is staged, checked and published when POLICY allows (else held: the step
is `awaiting_publish`); docs/spark.md, "Safe publish".

Exit codes: 0 every spark step succeeded (was published), or every step that did not is held
for publish or waits for one (the run report says awaiting_publish: the job did its part, a
person decides); 1 a step failed or was blocked, or the report could not be written; 2 bad arguments, policy or rules, a registry that cannot be loaded, or an unreadable,
invalid or unrunnable plan (nothing is read or written then)."""

from __future__ import annotations

try:
    from spark_jobs.engine.script_path import make_packages_importable
except ModuleNotFoundError:  # spark-submit runs this file from a checkout: its directory is sys.path[0]
    from script_path import make_packages_importable

make_packages_importable(__file__)

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import Any  # noqa: E402

from backfill_orchestrator.contracts import RunReport, StepStatus  # noqa: E402
from backfill_orchestrator.documents import DocumentError, is_s3, sibling, write_bytes  # noqa: E402
from backfill_orchestrator.publish import PublishError, default_root  # noqa: E402
from spark_jobs.engine.catalogs import CATALOG_MODES  # noqa: E402
from spark_jobs.engine.cli_args import add_registry_option, positive  # noqa: E402
from spark_jobs.engine.job_inputs import InvalidPlanError, load_check_rules, load_plan, load_policy  # noqa: E402
from spark_jobs.engine.registry import RegistryNotFoundError, load_registry  # noqa: E402
from spark_jobs.engine.runner import run_plan  # noqa: E402
from spark_jobs.engine.storage import WarehouseNotFoundError, resolve_warehouse  # noqa: E402

EXIT_OK, EXIT_STEP_FAILED, EXIT_USAGE = 0, 1, 2
REPORT_NAME = "run_report.json"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="backfill_job", description="Run a backfill plan's spark steps in one Spark application."
    )
    parser.add_argument("--plan", required=True, help="plan document: a path or s3://bucket/key")
    parser.add_argument("--warehouse", required=True, help="warehouse root: a directory or a URI (s3a://...)")
    parser.add_argument(
        "--report", help=f"where to write the run report (default: {REPORT_NAME} next to the plan)"
    )
    parser.add_argument(
        "--max-parallel",
        type=positive,
        default=None,
        help="most steps of one wave run at once (default: all)",
    )
    parser.add_argument(
        "--publish-policy",
        metavar="POLICY",
        help="publish policy document (PublishPolicy JSON: a path or s3://); default: publish every "
        "step whose checks pass",
    )
    parser.add_argument(
        "--publish-root",
        metavar="URI",
        help="where staged data, backups, manifests, checks and the partition ledger live "
        "(default: WAREHOUSE/_backfill)",
    )
    parser.add_argument(
        "--attempt",
        type=positive,
        default=_attempt_from_environment(),
        help=f"the backfill's attempt (default: ${ATTEMPT_VARIABLE}, else 1)",
    )
    parser.add_argument(
        "--rules",
        default=os.environ.get(RULES_VARIABLE) or None,
        metavar="RULES",
        help=f"reconciliation rules checked on each staged step (default: ${RULES_VARIABLE}; none: not checked)",
    )
    parser.add_argument(
        "--catalog",
        choices=CATALOG_MODES,
        default="none",
        help="where tables are catalogued: none (every table by path), hive (the session's metastore; "
        "on EMR the Glue Data Catalog as metastore), glue (the Glue API)",
    )
    add_registry_option(parser)
    return parser


def _attempt_from_environment() -> int:
    value = os.environ.get(ATTEMPT_VARIABLE, "")
    return int(value) if value.isdigit() and int(value) > 0 else 1


def _summary(report: RunReport) -> str:
    lines = [f"backfill {report.backfill_id}: {report.status} in {report.seconds:.1f}s"]
    for step in report.steps:
        detail = {
            StepStatus.SUCCEEDED: f"{len(step.partitions_written)} partitions, {step.rows_in} rows in, {step.rows_out} out",
            StepStatus.FAILED: step.error or "",
            StepStatus.BLOCKED: f"upstream {', '.join(step.blocked_by)} did not succeed",
            StepStatus.AWAITING_PUBLISH: step.detail or "",
            StepStatus.PENDING: "",
        }[step.status]
        lines.append(f"  wave {step.wave} {step.id}: {step.status} ({step.seconds:.1f}s) {detail}")
    return "\n".join(lines)


ATTEMPT_VARIABLE, TRACE_VARIABLE = "BACKFILL_ATTEMPT", "BACKFILL_TRACE_ID"  # set by the DAG's local runner
RULES_VARIABLE = "BACKFILL_RECONCILIATION_RULES"
STOP_WITH_PARENT_VARIABLE = "BACKFILL_STOP_WITH_PARENT"  # likewise (dags/backfill_runtime/runners/local.py)
PARENT_POLL_SECONDS = 1.0


def stop_on_sigterm(spark: Any) -> threading.Event:
    """A cancelled backfill's Spark job gets SIGTERM (the runner waits a grace period before
    SIGKILL). Every partition then stays as it was or is fully rewritten: no new step starts,
    and the running Spark jobs are cancelled, which aborts their writes before the commit
    (dynamic partition overwrite stages output and moves it into place only at job commit);
    a commit already under way runs on the driver and completes."""
    stop = threading.Event()

    def cancel(why: str) -> None:
        print(
            f"backfill_job: {why}: cancelling the running Spark jobs; no new step starts",
            file=sys.stderr,
            flush=True,
        )
        stop.set()
        spark.sparkContext.cancelAllJobs()

    signal.signal(signal.SIGTERM, lambda signum, frame: cancel("SIGTERM"))
    if os.environ.get(STOP_WITH_PARENT_VARIABLE) == "1":
        # The DAG's local runner starts the job in its own session (runners/local.py): if the
        # task process dies before it could send SIGTERM, stop as if it had.
        parent = os.getppid()

        def watch_parent() -> None:
            while not stop.wait(PARENT_POLL_SECONDS):
                if os.getppid() != parent:
                    cancel("its task process is gone")
                    return

        threading.Thread(target=watch_parent, name="stop-with-parent", daemon=True).start()
    return stop


def _json_lines(report: RunReport) -> str:
    """One JSON line per step, with the keys the Lambdas and the DAG log (backfill_id, step,
    attempt, trace_id), so a log search follows one backfill into the Spark job."""
    attempt = os.environ.get(ATTEMPT_VARIABLE)
    common = {
        "service": "backfill-spark",
        "backfill_id": report.backfill_id,
        "application_id": report.application_id,
        "attempt": int(attempt) if attempt and attempt.isdigit() else None,
        "trace_id": os.environ.get(TRACE_VARIABLE) or None,
    }
    return "\n".join(
        json.dumps(
            {
                "level": "INFO" if step.succeeded else "ERROR",
                "message": f"step {step.status}",
                **common,
                "step": step.id,
                "status": step.status,
                "seconds": step.seconds,
                "rows_out": step.rows_out,
                "partitions_written": step.partitions_written_count,
                "error": step.error,
            }
        )
        for step in report.steps
    )


def main(argv: Sequence[str] | None = None, *, s3_client: Any = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:  # argparse: 0 for --help, 2 for usage errors
        return int(exit_.code or 0)
    report_uri = args.report or sibling(args.plan, REPORT_NAME)
    if s3_client is None and (is_s3(args.plan) or is_s3(report_uri)):
        import boto3

        s3_client = boto3.client("s3")
    try:
        registry = load_registry(args.registry)
        warehouse = resolve_warehouse(args.warehouse)
        plan = load_plan(args.plan, registry=registry, s3_client=s3_client)
        policy = load_policy(args.publish_policy, s3_client=s3_client)
        rules = load_check_rules(args.rules, s3_client=s3_client)
    except RegistryNotFoundError as error:
        print(f"backfill_job: --registry {error}", file=sys.stderr)
        return EXIT_USAGE
    except (InvalidPlanError, WarehouseNotFoundError) as error:
        print(f"backfill_job: {error}", file=sys.stderr)
        return EXIT_USAGE

    from spark_jobs.engine.catalogs import Catalogs
    from spark_jobs.engine.publishing import PublishSettings
    from spark_jobs.engine.session import spark_session  # pyspark only once there is something to run

    with spark_session(f"backfill-{plan.backfill_id}") as spark:
        stop = stop_on_sigterm(spark)
        try:
            catalogs = Catalogs(spark, args.catalog)
        except PublishError as error:  # --catalog hive in a session without Hive support
            print(f"backfill_job: --catalog {args.catalog}: {error}", file=sys.stderr)
            return EXIT_USAGE
        publishing = PublishSettings.build(
            spark=spark,
            backfill_id=plan.backfill_id,
            attempt=args.attempt,
            root=args.publish_root or default_root(warehouse),
            warehouse=warehouse,
            policy=policy,
            catalogs=catalogs,
            rules=rules,
            stop=stop,
            s3_client=s3_client,
        )
        report = run_plan(
            spark=spark,
            plan=plan,
            warehouse=warehouse,
            registry=registry,
            max_parallel=args.max_parallel,
            plan_uri=args.plan,
            stop=stop,
            publishing=publishing,
        )
    print(_summary(report))
    print(_json_lines(report), flush=True)
    try:
        write_bytes(report_uri, report.to_json().encode(), s3_client=s3_client)
    except DocumentError as error:
        print(f"backfill_job: run report not written: {error}", file=sys.stderr)
        return EXIT_STEP_FAILED
    print(f"run report: {report_uri}")
    # A held step is not a failure to retry: the job did its part, and a person decides.
    return EXIT_OK if report.status in ("succeeded", "awaiting_publish") else EXIT_STEP_FAILED


if __name__ == "__main__":
    raise SystemExit(main())
