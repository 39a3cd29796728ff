"""`reconciliation`: every day, check the trailing window of days of every table with
reconciliation rules, and submit the backfill configs that repair what does not match.

    in_flight -> reconcile -> submit -> summarise

- `in_flight`: the plans of the backfills planned, triggered or running (status table), so
  that what they already repair is not submitted again;
- `reconcile`: the reconciliation Spark job (`spark_jobs.engine.reconcile_job`, local runner):
  the mismatch report and the configs, staged under `<reconciliation prefix>/<day>/`;
- `submit`: each staged config uploaded to `<incoming prefix>/reconciliation/<name>.yaml`
  with the DAG's own AWS connection, so the trigger plans and runs it like any config, under
  the policy and approval rules that apply to that identity;
- `summarise`: a Slack summary of what was found and what was submitted.

Options are Airflow configuration, section `[backfill]`: see backfill_runtime/reconcile.py
and docs/spark.md. They are read when a task runs, so a missing one fails the run, not the parse."""

from __future__ import annotations

import logging
from datetime import date, timedelta
from typing import Any

import pendulum
from airflow.sdk import DAG, get_current_context, task
from airflow.sdk.exceptions import AirflowFailException

DAG_ID = "reconciliation"
log = logging.getLogger(__name__)


def _options() -> Any:
    from backfill_runtime.options import InvalidOptionError
    from backfill_runtime.reconcile import ReconciliationOptions

    try:
        return ReconciliationOptions.from_config()
    except InvalidOptionError as error:
        raise AirflowFailException(str(error)) from None


def _window_end() -> date:
    """The last day checked: the run conf's `end` (a manual run re-checking a past window), else
    the day before the run's logical date (its run_after when it has none)."""
    context = get_current_context()
    requested = (context["dag_run"].conf or {}).get("end")
    if requested is not None:
        try:
            return date.fromisoformat(str(requested))
        except ValueError:
            raise AirflowFailException(
                f"conf.end: expected a date as YYYY-MM-DD, got {requested!r}"
            ) from None
    moment = context.get("logical_date") or context["dag_run"].run_after
    return pendulum.instance(moment).in_timezone("UTC").date() - timedelta(days=1)


@task(task_id="in_flight")
def in_flight() -> list[str]:
    import boto3

    from backfill_orchestrator.reconciliation import in_flight_ids, plan_uri

    options = _options()
    if not options.status_table:
        log.warning("[backfill] status_table is not set: backfills in flight are unknown, none are skipped")
        return []
    ids = in_flight_ids(dynamodb_client=boto3.client("dynamodb"), table_name=options.status_table)
    log.info("%d backfills in flight", len(ids))
    return [
        plan_uri(bucket=options.bucket, backfills_prefix=options.backfills_prefix, backfill_id=i) for i in ids
    ]


@task(task_id="reconcile")
def reconcile(in_flight_plans: list[str]) -> dict[str, str]:
    from backfill_runtime.reconcile import job_arguments
    from backfill_runtime.spark import SparkInputError, SparkStepsFailedError, run_local

    options = _options()
    end = _window_end()
    try:
        run_local(
            options.command,
            job_arguments(options, end=end, in_flight_plans=in_flight_plans),
            timeout=options.timeout_seconds,
        )
    except SparkInputError as error:  # bad rules, catalog or warehouse: a retry cannot help
        raise AirflowFailException(str(error)) from None
    except SparkStepsFailedError as error:  # exit 1: could not compare or write; retried
        raise RuntimeError(f"the reconciliation job did not finish; see the log above ({error})") from error
    return {"report_uri": options.report_uri(end)}


@task(task_id="submit")
def submit(result: dict[str, str]) -> list[str]:
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook
    from backfill_runtime.reconcile import submit_configs

    options = _options()
    s3 = S3Hook(aws_conn_id=options.aws_conn_id).get_conn()  # the DAG's own identity
    submitted = submit_configs(options, report_uri=result["report_uri"], s3_client=s3)
    for target in submitted:
        log.info("submitted %s", target)
    return submitted


@task(task_id="summarise")
def summarise(result: dict[str, str], submitted: list[str]) -> None:
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook
    from backfill_runtime.reconcile import notifier_from_options

    from backfill_orchestrator.documents import read_bytes
    from backfill_orchestrator.reconciliation import ReconciliationReport
    from backfill_orchestrator.reconciliation.summary import reconciliation_message

    s3 = S3Hook(aws_conn_id=_options().aws_conn_id).get_conn()
    report = ReconciliationReport.from_json(read_bytes(result["report_uri"], s3_client=s3))
    message = reconciliation_message(report=report, report_uri=result["report_uri"], submitted=submitted)
    notifier_from_options().slack(None, message)
    log.info("%d mismatched partitions, %d configs submitted", report.mismatches_found, len(submitted))


with DAG(
    dag_id=DAG_ID,
    description="Daily reconciliation: mismatches become backfill configs",
    schedule="@daily",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    is_paused_upon_creation=True,  # unpaused by hand once its `[backfill]` options are set
    default_args={"retries": 2, "retry_delay": timedelta(minutes=5)},
    tags=["backfill", "reconciliation"],
) as dag:
    # A task's call takes and gives XComArgs, which Airflow's types do not express.
    _result = reconcile(in_flight())  # type: ignore[arg-type]
    summarise(_result, submit(_result))  # type: ignore[arg-type]
