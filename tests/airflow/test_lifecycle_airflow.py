"""Managed backfills end to end on a real Airflow 3 and local Spark: the trigger service (in
this process, as the Lambda runs it) plans through the Marquez double and starts the DAG on
the real api-server; control documents are S3 uploads delivered to it as S3 events, and the
`start-*.json` documents the DAG's `finish` drops are delivered the same way, as the platform
would. One Airflow, one moto server and one warehouse serve every case of the module.

Spark: the `[backfill] spark_command` is a small dispatcher (written by the fixture) that
runs the real job (`spark_jobs.engine.backfill_job`) for plans of the `large` profile, the real
job with `etl_orders` slowed down (to cancel it mid-write) for the `small` profile, and the fake
job (tests/airflow/fake_spark_job.py) for the default `medium`. The cancel
and retry cases need the real job: what they show is that Spark's own partitions survive
Airflow killing the task, and that a retry leaves the warehouse equal to a clean run; the
overlap, rerun and resubmission cases only need the DAG to run, so they skip the JVM."""

from __future__ import annotations

import itertools
import json
import logging
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from backfill_local.airflow_local import LocalAirflow
from backfill_orchestrator.status import BackfillState, StatusRecord
from tests.support.airflow import (
    BUCKET,
    REPO,
    TABLE,
    AwsLocal,
    airflow_extra_env,
    dags_folder,
    spark_dispatcher,
    spark_pid,
    status_store,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
CLAIMS = "backfill-claims-airflow"
DATA_START, DATA_DAYS, ORDERS_PER_HOUR = date(2021, 6, 1), 7, 2  # 7 days: one 7-day window from 06-01
GATED_JOBS = ("gated_report", "late_report")  # runs hold while <outputs>/hold exists (tests/airflow/dags)
POLL = 0.3
log = logging.getLogger(__name__)


# -- the platform: trigger service, Airflow, Marquez, warehouse ------------------------------
@dataclass
class Platform:
    aws: AwsLocal
    airflow: LocalAirflow
    marquez: Any
    warehouse: Path
    reference: Path
    outputs: Path
    pids: Path
    spark: Any
    env: dict[str, str]
    _wirings: dict[str, Any] = field(default_factory=dict)
    _sequence: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    # the trigger function, as the Lambda runs it: one wiring per ON_OVERLAP setting
    def invoke(self, key: str, *, on_overlap: str = "wait") -> Any:
        from aws_lambda_powertools.metrics import EphemeralMetrics

        from backfill_orchestrator.settings import DeploymentSettings
        from backfill_orchestrator.trigger.wiring import TriggerWiring
        from tests.support.trigger import s3_event

        if on_overlap not in self._wirings:
            settings = DeploymentSettings.from_env({**self.env, "ON_OVERLAP": on_overlap})
            self._wirings[on_overlap] = TriggerWiring(
                settings,
                s3_client=self.aws.client("s3"),
                dynamodb_client=self.aws.client("dynamodb"),
                secrets_client=self.aws.client("secretsmanager"),
            )
        head = self.aws.client("s3").head_object(Bucket=BUCKET, Key=key)
        event = s3_event(
            key,
            size=head["ContentLength"],
            version_id=None,
            etag=head["ETag"],
            sequencer=f"{next(self._sequence):016X}",
            bucket=BUCKET,
        )
        service = self._wirings[on_overlap].service(
            metrics=EphemeralMetrics(namespace="LifecycleTest"), logger=log
        )
        (result,) = service.handle_event(event, lease_seconds=120)
        return result

    def submit(self, config: dict[str, Any], *, on_overlap: str = "wait") -> Any:
        key = f"incoming/{config['name']}.json"
        self.aws.client("s3").put_object(Bucket=BUCKET, Key=key, Body=json.dumps(config).encode())
        return self.invoke(key, on_overlap=on_overlap)

    def control(self, backfill_id: str, action: str, *, reason: str = "test") -> tuple[Any, dict[str, Any]]:
        document = {
            "control_version": 1,
            "action": action,
            "backfill_id": backfill_id,
            "reason": reason,
            "requested_by": "@oncall",
            "requested_at": datetime.now(UTC).isoformat(),
        }
        key = f"control/{backfill_id}/{action}-{datetime.now(UTC):%Y%m%dT%H%M%S%f}.json"
        self.aws.client("s3").put_object(Bucket=BUCKET, Key=key, Body=json.dumps(document).encode())
        result = self.invoke(key)
        body = (
            self.aws.client("s3").get_object(Bucket=BUCKET, Key=f"results/{key}.result.json")["Body"].read()
        )
        return result, json.loads(body)

    # reading state
    def record(self, backfill_id: str) -> StatusRecord:
        record = status_store(self.aws).get(backfill_id)
        assert record is not None, backfill_id
        return record

    def wait_for_state(self, backfill_id: str, *states: BackfillState, timeout: float = 240) -> StatusRecord:
        return wait_until(
            lambda: (r := self.record(backfill_id)).state in states and r,
            timeout=timeout,
            what=lambda: f"{backfill_id} in {states}: {self.record(backfill_id).state}",
        )

    def claims(self) -> dict[str, list[str]]:
        from backfill_orchestrator.claims import registry_for

        return registry_for(
            dynamodb_client=self.aws.client("dynamodb"),
            table_name=CLAIMS,
            status_store=status_store(self.aws),
            s3_client=self.aws.client("s3"),
        ).holders()

    def spark_pid(self, backfill_id: str) -> int | None:
        return spark_pid(self.pids, backfill_id)

    def dag_run_state(self, dag_id: str, run_id: str) -> str:
        return self.airflow.run_state(dag_id, run_id)


def wait_until(
    check: Callable[[], Any], *, timeout: float, what: Callable[[], str] | str, poll: float = POLL
) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached in {timeout:.0f} s: {what() if callable(what) else what}")
        time.sleep(poll)


def config(
    name: str,
    jobs: list[str],
    dates: list[str],
    *,
    downstream: dict[str, Any] | None = None,
    profile: str | None = None,
) -> dict[str, Any]:
    document: dict[str, Any] = {
        "version": 1,
        "name": name,
        "owner": "@jane",
        "mode": "batch",
        "jobs": [{"namespace": "food_delivery", "name": job} for job in jobs],
        "dates": dates,
        "downstream": downstream or {"enabled": False},
        "notify": {"slack_channel": "#backfills"},
    }
    if profile:
        document["spark"] = {"profile": profile}
    return document


def gated_events(job: str) -> list[dict[str, Any]]:
    from backfill_local.marquez_double import run_events

    return run_events("food_delivery", job, inputs=[f"public.{job}_input"], outputs=[f"public.{job}"])


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """A SparkSession in this process for the warehouse's data and the comparisons (the one of
    tests/spark when it is up: getOrCreate; stopped only if this module made it)."""
    from tests.support.spark import small_session

    with small_session("lifecycle-airflow-tests") as session:
        yield session


@pytest.fixture(scope="module")
def platform(
    tmp_path_factory: pytest.TempPathFactory, aws: AwsLocal, receivers: tuple[Any, Any], spark: Any
) -> Iterator[Platform]:
    from backfill_local.marquez_double import MarquezDouble
    from spark_jobs.engine.runner import run_everything
    from spark_jobs.sample.data import GeneratorSettings, generate
    from spark_jobs.sample.transforms import FOOD_DELIVERY
    from tests.support.aws import create_table
    from tests.support.spark import HOURS_PER_DAY

    slack, pagerduty = receivers
    tmp = tmp_path_factory.mktemp("lifecycle")
    warehouse, reference, outputs, pids = (
        tmp / "warehouse",
        tmp / "reference",
        tmp / "outputs",
        tmp / "spark-pids.jsonl",
    )
    dispatcher = spark_dispatcher(tmp / "spark_dispatch.py", pids=pids)
    folder = dags_folder(tmp)  # with the gated jobs (tests/airflow/dags/gated_jobs.py)
    extra = {
        **airflow_extra_env(aws=aws, slack=slack, pagerduty=pagerduty, warehouse=warehouse, outputs=outputs),
        "AIRFLOW__BACKFILL__SPARK_COMMAND": f"{sys.executable} {dispatcher}",
        "AIRFLOW__BACKFILL__CLAIMS_TABLE": CLAIMS,
        "AIRFLOW__BACKFILL__CONTROL_URI": f"s3://{BUCKET}/control/",
        "AIRFLOW__BACKFILL__TASK_RETRIES": "0",  # a failed Spark step fails its attempt at once
        "AIRFLOW__BACKFILL__MAX_ROUNDS": "1",  # every plan here is one round: no idle round slots to skip
    }
    airflow = LocalAirflow(dags_folder=folder, home=tmp / "home", parallelism=4, extra_env=extra)
    with ThreadPoolExecutor(max_workers=1) as booting, MarquezDouble(seed="food_delivery") as marquez:
        boot = booting.submit(lambda: (airflow.start(), airflow.wait_for_dags(["backfill", *GATED_JOBS])))
        try:
            # while Airflow boots: the warehouse (raw data and its clean run: the reference) and AWS
            generate(
                spark=spark,
                warehouse=str(reference),
                settings=GeneratorSettings(
                    start=DATA_START,
                    days=DATA_DAYS,
                    orders_per_hour=ORDERS_PER_HOUR,
                    hours_per_day=HOURS_PER_DAY,
                ),
            )
            run_everything(spark=spark, warehouse=str(reference), registry=FOOD_DELIVERY)
            shutil.copytree(reference, warehouse)
            create_table(aws.client("dynamodb"), "ClaimsTable", table_name=CLAIMS)
            s3 = aws.client("s3")
            s3.put_object(
                Bucket=BUCKET,
                Key="catalog/catalog.yaml",
                Body=(REPO / "examples" / "catalog.yaml").read_bytes(),
            )
            aws.client("secretsmanager").create_secret(
                Name="backfill/airflow",
                SecretString=json.dumps({"username": airflow.user, "password": airflow.password}),
            )
            marquez.store.ingest_all(gated_events("gated_report"))  # late_report comes later (resubmission)
            boot.result()
            env = {
                "CONFIG_BUCKET": BUCKET,
                "STATUS_TABLE": TABLE,
                "CLAIMS_TABLE": CLAIMS,
                "MARQUEZ_URL": marquez.url,
                "AIRFLOW_URL": airflow.url,
                "AIRFLOW_SECRET_ID": "backfill/airflow",
                "BACKFILL_DAG_ID": "backfill",
                "BACKFILL_MAX_ROUNDS": "1",
                "SLACK_API_URL": slack.api_url,
                "SLACK_SECRET_ID": "backfill/slack",
                "SLACK_CHANNEL": "#backfills",
                "PAGERDUTY_EVENTS_URL": pagerduty.events_url,
                "PAGERDUTY_SECRET_ID": "backfill/pagerduty",
                "JOB_CATALOG_URI": f"s3://{BUCKET}/catalog/catalog.yaml",
            }
            yield Platform(
                aws=aws,
                airflow=airflow,
                marquez=marquez,
                warehouse=warehouse,
                reference=reference,
                outputs=outputs,
                pids=pids,
                spark=spark,
                env=env,
            )
        finally:
            airflow.stop()


def explain(platform: Platform, run_id: str) -> str:
    from tests.support.airflow import explain as task_report

    return task_report(platform.airflow, run_id)


def process_tree(pid: int) -> list[Any]:
    import psutil

    try:
        parent = psutil.Process(pid)
        return [parent, *parent.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def alive(processes: list[Any]) -> list[Any]:
    import psutil

    living = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                living.append(process)
        except psutil.NoSuchProcess:
            continue
    return living


def table_files(root: Path, location: str) -> dict[str, int]:
    """Data files of one table (what readers see: nothing hidden): relative path -> mtime (ns)."""
    base = root / location
    return {
        str(p.relative_to(base)): p.stat().st_mtime_ns
        for p in base.rglob("*")
        if p.is_file() and not any(part.startswith((".", "_")) for part in p.relative_to(base).parts)
    }


def assert_tables_equal(platform: Platform, tables: Any = None) -> None:
    from tests.support.spark import assert_tables_equal as equal

    equal(platform.spark, platform.warehouse, platform.reference, tables)


# -- a. cancel during a Spark step -------------------------------------------------------------
def test_cancel_during_a_spark_step_kills_the_job_and_leaves_every_partition_intact(
    platform: Platform,
) -> None:
    from spark_jobs.sample.tables import PROCESSED_TABLES

    began = time.monotonic()
    orders = platform.warehouse / "processed" / "orders"
    before = table_files(platform.warehouse, "processed/orders")
    result = platform.submit(
        config("cancel-spark", ["etl_orders"], ["2021-06-02", "2021-06-03", "2021-06-04"], profile="small")
    )
    assert result.disposition == "accepted", result
    backfill_id = result.backfill_id
    assert platform.claims()["active"] == [backfill_id]
    # the job is writing etl_orders' partitions: under safe publish into the backfill's staging
    # (`<warehouse>/_backfill/staging/<id>/a<attempt>/<step>`), never into the live table
    staging = platform.warehouse / "_backfill" / "staging" / backfill_id
    wait_until(
        lambda: any(p.is_file() for p in staging.rglob("*")),
        timeout=300,
        what=lambda: f"the Spark job writing; record {platform.record(backfill_id).state}",
    )
    pid = platform.spark_pid(backfill_id)
    assert pid is not None
    processes = process_tree(pid)  # the job, its JVM and Python workers
    assert alive(processes)

    cancelled_at = time.monotonic()
    outcome, written = platform.control(backfill_id, "cancel", reason="wrong dates")
    assert outcome.disposition == "accepted" and written["outcome"] == "done", written
    wait_until(
        lambda: not alive(processes), timeout=60, what=lambda: f"Spark processes gone: {alive(processes)}"
    )
    gone_after = time.monotonic() - cancelled_at

    record = platform.record(backfill_id)
    assert record.state is BackfillState.CANCELLED and "wrong dates" in record.reason
    assert platform.dag_run_state("backfill", record.dag_run_id) == "failed"
    assert backfill_id not in platform.claims()["active"]
    # Every partition is as before or fully rewritten: the same partition directories, each
    # with its old files untouched or only new ones, and the rows of the clean run (a rewrite of
    # a clean day gives the same rows). Airflow stops the task's whole process group, the JVM
    # included, so a hidden `.spark-staging-*` directory may stay behind until the next write.
    assert not [
        p
        for p in orders.rglob("_temporary")
        if not p.relative_to(orders).parts[0].startswith(".spark-staging")
    ]
    after = table_files(platform.warehouse, "processed/orders")
    partitions = lambda files: {path.rsplit("/", 1)[0] for path in files}  # noqa: E731
    assert partitions(after) == partitions(before)
    for partition in partitions(before):
        old = {path: mtime for path, mtime in before.items() if path.startswith(partition + "/")}
        new = {path: mtime for path, mtime in after.items() if path.startswith(partition + "/")}
        assert new == old or not set(new) & set(old), (
            f"{partition} half-written: {sorted(old)} -> {sorted(new)}"
        )
    assert_tables_equal(platform, [t for t in PROCESSED_TABLES if t.name == "orders"])
    # the cancelled job discarded what it staged; the retry stages, checks and publishes again
    assert not [p for p in staging.rglob("*") if p.is_file() and "/a1/" in str(p)]
    outcome, written = platform.control(backfill_id, "retry", reason="dates fixed")
    assert outcome.disposition == "accepted", written
    record = platform.wait_for_state(backfill_id, BackfillState.SUCCEEDED, BackfillState.FAILED, timeout=600)
    assert record.state is BackfillState.SUCCEEDED, explain(platform, record.dag_run_id)
    assert not any(orders.rglob(".spark-staging*")) and not any(orders.rglob("_temporary"))
    assert not [p for p in staging.rglob("*") if p.is_file()]  # nothing staged is left
    print(
        f"\nTIMING cancel-spark: Spark gone {gone_after:.1f} s after the cancel; case {time.monotonic() - began:.0f} s"
    )
    assert gone_after < 30, f"the Spark job took {gone_after:.0f} s to stop"


# -- b. cancel during DAG reruns ---------------------------------------------------------------
def test_cancel_during_dag_reruns_fails_the_running_ones_and_never_starts_the_queued(
    platform: Platform,
) -> None:
    began = time.monotonic()
    days = ["2021-06-01", "2021-06-02", "2021-06-03", "2021-06-04"]
    gated = platform.outputs / "gated_report"
    hold = platform.outputs / "hold"
    platform.outputs.mkdir(parents=True, exist_ok=True)
    hold.write_text("held by the test")
    try:
        result = platform.submit(config("cancel-reruns", ["gated_report"], days))
        assert result.disposition == "accepted", result
        backfill_id = result.backfill_id
        # [backfill] max_parallel_dag_runs = 2: two reruns run (and hold), two wait their turn
        wait_until(
            lambda: len(list(gated.glob("*.pid"))) == 2,
            timeout=240,
            what=lambda: f"two reruns running: {sorted(p.name for p in gated.glob('*'))}",
        )
        running = {p.stem: int(p.read_text()) for p in gated.glob("*.pid")}
        processes = [proc for pid in running.values() for proc in process_tree(pid)]
        cancelled_at = time.monotonic()
        outcome, written = platform.control(backfill_id, "cancel", reason="rerun storm")
        assert outcome.disposition == "accepted" and written["outcome"] == "done", written
        for day in running:
            assert f"gated_report/backfill__{backfill_id}__{day}" in written["reason"], written["reason"]
        wait_until(
            lambda: not alive(processes), timeout=60, what=lambda: f"rerun tasks gone: {alive(processes)}"
        )
        gone_after = time.monotonic() - cancelled_at

        record = platform.record(backfill_id)
        assert record.state is BackfillState.CANCELLED and backfill_id not in platform.claims()["active"]
        assert platform.dag_run_state("backfill", record.dag_run_id) == "failed"
        runs = {run["logical_date"][:10]: run for run in platform.airflow.dag_runs("gated_report")}
        assert {day: runs[day]["state"] for day in running} == dict.fromkeys(running, "failed")
        # the backfill run's rerun tasks have all ended; the two that waited never started a run
        wait_until(
            lambda: all(
                ti["state"] not in ("running", "queued", "scheduled", "up_for_retry")
                for ti in platform.airflow.task_instances("backfill", record.dag_run_id)
            ),
            timeout=60,
            what="the backfill run's tasks ended",
        )
        waiting = sorted(set(days) - set(running))
        assert not [day for day in waiting if day in runs], runs.keys()
        assert not [day for day in days if (gated / f"{day}.done").exists()]  # none got to finish its work
    finally:
        hold.unlink(missing_ok=True)
    print(
        f"\nTIMING cancel-reruns: rerun tasks gone {gone_after:.1f} s after the cancel; case {time.monotonic() - began:.0f} s"
    )


# -- c. retry failed work after an injected step failure ---------------------------------------
def test_retry_reruns_only_failed_and_blocked_steps_and_the_warehouse_equals_a_clean_run(
    platform: Platform,
) -> None:
    from spark_jobs.sample.tables import PROCESSED_TABLES
    from tests.support.airflow import read_s3_json

    began = time.monotonic()
    warehouse = platform.warehouse
    # the damage to repair: a day of orders and every day of the 7-day tables gone
    shutil.rmtree(warehouse / "processed" / "orders" / "day=2021-06-01")
    for table in ("orders_7_days", "delivery_7_days"):
        for day in range(1, 8):  # the plan's days of the 7-day steps: 2021-06-01..07
            shutil.rmtree(warehouse / "processed" / table / f"day=2021-06-0{day}", ignore_errors=True)
    # the injected failure: a malformed menu item landed (raw JSON is read FAILFAST), so
    # etl_orders_7_days fails and the step after it is blocked
    bad = warehouse / "raw" / "menu_items" / "zz-malformed.json"
    bad.write_text('{"id": 1, "name": \n')
    # the smallest plan with a step that succeeds, one that fails and one it blocks:
    # etl_orders (1 day) -> etl_orders_7_days (7 days) -> etl_delivery_7_days (7 days)
    excluded = [
        {"namespace": "food_delivery", "name": n}
        for n in ("delivery_times_7_days", "orders_popular_day_of_week", "email_discounts")
    ]
    document = config(
        "retry-failed", ["etl_orders"], ["2021-06-01"], downstream={"exclude": excluded}, profile="large"
    )
    try:
        result = platform.submit(document)
        assert result.disposition == "accepted", result
        backfill_id = result.backfill_id
        record = platform.wait_for_state(
            backfill_id, BackfillState.FAILED, BackfillState.SUCCEEDED, timeout=600
        )
        assert record.state is BackfillState.FAILED, explain(platform, record.dag_run_id)
    finally:
        bad.unlink(missing_ok=True)  # the cause is fixed
    report_uri = record.plan_uri.replace("plan.json", "backfill_report.json")
    first = {step: entry["status"] for step, entry in read_s3_json(platform.aws, report_uri)["steps"].items()}
    assert first == {
        "etl_orders": "succeeded",
        "etl_orders_7_days": "failed",
        "etl_delivery_7_days": "blocked",
    }, first
    orders_after_first = table_files(warehouse, "processed/orders")
    first_seconds = time.monotonic() - began

    outcome, written = platform.control(backfill_id, "retry", reason="menu fixed")
    assert outcome.disposition == "accepted" and "reruns 2 of 3 steps" in written["reason"], written
    record = platform.wait_for_state(backfill_id, BackfillState.SUCCEEDED, BackfillState.FAILED, timeout=600)
    assert record.state is BackfillState.SUCCEEDED, explain(platform, record.dag_run_id)
    assert record.run_attempt == 2 and record.dag_run_id == f"{backfill_id}__attempt2"
    # attempt 2 submitted only the failed and blocked steps; etl_orders' files were not touched
    sub_plan = read_s3_json(platform.aws, record.plan_uri.replace("plan.json", "rounds/0/plan.json"))
    assert sorted(s["id"] for w in sub_plan["waves"] for s in w["steps"]) == [
        "etl_delivery_7_days",
        "etl_orders_7_days",
    ]
    assert table_files(warehouse, "processed/orders") == orders_after_first
    second = read_s3_json(platform.aws, report_uri)
    assert second["status"] == "succeeded" and "attempt before 2" in second["steps"]["etl_orders"]["detail"]
    assert (
        record.progress["steps_done"] == 3
        and record.progress["dates_done"] == record.progress["dates_total"] == 15
    )
    assert backfill_id not in platform.claims()["active"]
    # the repaired warehouse equals the clean run, row for row, in every processed table
    assert_tables_equal(platform, PROCESSED_TABLES)
    print(f"\nTIMING retry-failed: attempt 1 {first_seconds:.0f} s; case {time.monotonic() - began:.0f} s")


# -- d. two overlapping backfills: wait, and refuse --------------------------------------------
def test_an_overlapping_backfill_waits_and_starts_when_the_first_ends_or_is_refused(
    platform: Platform,
) -> None:
    began = time.monotonic()
    days = ["2021-06-05"]
    first = platform.submit(config("overlap-first", ["etl_orders"], days))
    assert first.disposition == "accepted", first
    second = platform.submit(config("overlap-second", ["etl_orders"], days))
    assert second.disposition == "queued" and first.backfill_id in platform.record(second.backfill_id).reason
    refused = platform.submit(config("overlap-refused", ["etl_orders"], days), on_overlap="refuse")
    assert refused.disposition == "rejected", refused
    result_body = platform.aws.client("s3").get_object(
        Bucket=BUCKET, Key="results/overlap-refused.json.result.json"
    )["Body"]
    error = json.loads(result_body.read())["errors"][0]
    assert error["location"] == "dates" and first.backfill_id in error["message"], error
    claims = platform.claims()
    assert first.backfill_id in claims["active"] and claims["queued"] == [second.backfill_id]

    record = platform.wait_for_state(first.backfill_id, BackfillState.SUCCEEDED, BackfillState.FAILED)
    assert record.state is BackfillState.SUCCEEDED, explain(platform, record.dag_run_id)
    assert platform.record(second.backfill_id).state is BackfillState.QUEUED
    # the first's finish released its claims and dropped a start document for the second:
    # its S3 event reaches the trigger as any upload would
    s3 = platform.aws.client("s3")

    def start_document() -> str | None:
        listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=f"control/{second.backfill_id}/start-").get(
            "Contents", []
        )
        return listed[0]["Key"] if listed else None

    key = wait_until(start_document, timeout=60, what="the start document")
    started = platform.invoke(key)
    assert started.disposition == "accepted", started
    record = platform.wait_for_state(second.backfill_id, BackfillState.SUCCEEDED, BackfillState.FAILED)
    assert record.state is BackfillState.SUCCEEDED, explain(platform, record.dag_run_id)
    # no PLANNED: QUEUED carried the plan (only a dry run or a policy stops at PLANNED)
    assert [h["state"] for h in record.history][:4] == ["RECEIVED", "QUEUED", "TRIGGERED", "RUNNING"]
    assert record.progress["dates_done"] == record.progress["dates_total"] == 1
    # the second's Spark work ran after the first's had finished
    sent = [json.loads(line) for line in (platform.warehouse / "submissions.jsonl").read_text().splitlines()]
    ran = {
        bid: next(e for e in sent if f"/{bid}/" in e["plan"])
        for bid in (first.backfill_id, second.backfill_id)
    }
    assert ran[first.backfill_id]["finished_at"] < ran[second.backfill_id]["started_at"]
    claims = platform.claims()
    assert not {first.backfill_id, second.backfill_id} & {*claims["active"], *claims["queued"]}
    print(f"\nTIMING overlap: case {time.monotonic() - began:.0f} s")


# -- e. resubmission after the rejection's cause was fixed -------------------------------------
def test_resubmitting_a_rejected_config_once_its_cause_is_fixed_runs_it(platform: Platform) -> None:
    import requests

    began = time.monotonic()
    document = config("late-report", ["late_report"], ["2021-06-05"])
    rejected = platform.submit(document)
    assert rejected.disposition == "rejected", rejected
    result = json.loads(
        platform.aws.client("s3")
        .get_object(Bucket=BUCKET, Key="results/late-report.json.result.json")["Body"]
        .read()
    )
    assert "late_report" in json.dumps(result["errors"]), result
    # the cause is fixed elsewhere: the job's lineage reaches Marquez
    for event in gated_events("late_report"):
        requests.post(f"{platform.marquez.url}/api/v1/lineage", json=event, timeout=10).raise_for_status()
    again = platform.submit(document)  # the identical config, uploaded again
    assert again.disposition == "accepted", again
    assert again.backfill_id == rejected.backfill_id
    record = platform.wait_for_state(again.backfill_id, BackfillState.SUCCEEDED, BackfillState.FAILED)
    assert record.state is BackfillState.SUCCEEDED, explain(platform, record.dag_run_id)
    states = [h["state"] for h in record.history]
    assert states[:4] == ["RECEIVED", "PLANNED", "REJECTED", "RECEIVED"] or states[:3] == [
        "RECEIVED",
        "REJECTED",
        "RECEIVED",
    ], states
    assert (platform.outputs / "late_report" / "2021-06-05.done").exists()
    print(f"\nTIMING resubmit: case {time.monotonic() - began:.0f} s")
