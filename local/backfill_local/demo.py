"""`make demo`: the whole flow on this machine, with embedded defaults, in a few minutes.

1. Services: moto as a local server (S3, DynamoDB, SQS, Secrets Manager; the tables built
   from template.yaml), the Marquez double seeded with the food delivery sample, local Slack
   and PagerDuty receivers (they print what they get), and a real Airflow 3 (api-server,
   scheduler, dag-processor on 127.0.0.1, LocalExecutor) with the `backfill` DAG and the
   sample DAGs. The config bucket's S3 notifications (`incoming/`, `control/`) reach the
   trigger handler through a queue, as in a deployment.
2. Data: the sample pipeline generates raw orders and runs clean (the reference copy is kept),
   then breaks `orders` for some days (one Spark session, kept for the data check).
3. Submit: a config for those days through the Python client, exactly as a notebook would;
   the upload's S3 event reaches the trigger, which validates, plans (Marquez + catalog) and
   starts the DAG in Airflow.
4. While it runs, a second config over the same job and overlapping dates: it waits (QUEUED).
5. Airflow runs the first plan: the generic Spark job locally, the sample DAGs rerun per date.
   Its end releases the claims and drops a `start` control document for the waiting backfill.
6. Prints the first timeline and Slack messages, checks that the warehouse the first backfill
   left equals the clean run (the "result"); the second backfill is started by that `start`
   document's event, runs and succeeds; prints its timeline and `backfill list`, and checks
   that the Backfills page of the Airflow UI (its URL and login are printed when Airflow has
   booted) lists both. Exit 0 only if every stage worked; every process started here is stopped.

Any piece can be a real service instead, by environment variable:
  DEMO_AWS_ENDPOINT_URL   an AWS endpoint (e.g. a LocalStack) instead of moto
  DEMO_MARQUEZ_URL        a Marquez with the food delivery sample loaded, instead of the double
  DEMO_AIRFLOW_URL        an Airflow 3 running dags/ with the [backfill] options set, instead of
                          the local one (DEMO_AIRFLOW_USER / DEMO_AIRFLOW_PASSWORD, default admin)
  DEMO_WORKDIR            where data and logs go (default .demo/ in the repository)
And the sample's size:
  DEMO_SAMPLE_HOURS       the hours of each day with orders, 1 to 24 (default 4); the flow and
                          its checks are the same with more, on more data
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import time
import warnings
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3

from backfill_local.demo_registry import FAULT_FILE_VARIABLE
from backfill_local.demo_spark import SampleShape
from backfill_local.local_spark import use_local_spark_defaults
from backfill_orchestrator.errors import ServiceError, UserError
from backfill_orchestrator.settings.environment import EnvironmentReader

REPO = Path(__file__).resolve().parents[2]
BUCKET = "backfill-configs-local"
TABLE = "backfill-status-local"
CLAIMS_TABLE = "backfill-claims-local"
SLACK_TOKEN = "xoxb-demo-token"
PD_KEY = "R0UT1NGKEY0F32CHARACTERSDEMO0000"
REGION = "us-east-1"
DEMO_TRACE_ID = "1-6740c2a1-0a1b2c3d4e5f60718293a4b5"
# Orders from 00:00 to 03:59 each day: 252 hourly partitions of raw orders (21 days, 3 feeds).
# Every stage and check of the flow is the same with more hours (DEMO_SAMPLE_HOURS), on more
# data for Spark to write and compare: 12 hours put the first result 25 s later on 2 cores.
SAMPLE = SampleShape(start="2021-06-01", days=21, hours_per_day=4)
SAMPLE_HOURS_VARIABLE = "DEMO_SAMPLE_HOURS"
BROKEN_DAYS = "2021-06-04,2021-06-10..2021-06-12"
CONFIG = {
    "version": 1,
    "name": "orders-outage-june",
    "owner": "jane.doe@example.com",
    "description": "orders lost on 4 June and 10-12 June: rerun etl_orders and everything downstream",
    "mode": "batch",
    "jobs": [{"namespace": "food_delivery", "name": "etl_orders"}],
    "dates": ["2021-06-04", {"start": "2021-06-10", "end": "2021-06-12"}],
    "notify": {"slack_channel": "#backfills", "pagerduty": True},
}
# Someone else reruns etl_orders for 11-12 June while the first backfill is running: the same
# job and overlapping dates, so it waits for the first and starts when that one ends.
OVERLAPPING_CONFIG = {
    "version": 1,
    "name": "orders-recheck",
    "owner": "sam.lee@example.com",
    "description": "recheck etl_orders for 11-12 June after the feed fix (downstream: the outage backfill)",
    "mode": "batch",
    "jobs": [{"namespace": "food_delivery", "name": "etl_orders"}],
    "dates": [{"start": "2021-06-11", "end": "2021-06-12"}],
    "downstream": {"enabled": False},
    "notify": {"slack_channel": "#backfills", "pagerduty": True},
}
# Safe publish: a backfill whose etl_orders drops the partner feed (the demo's deliberate bug,
# backfill_local.demo_registry); its config narrows the publish policy so that a partition
# emptied waits for a person. Then a re-run of the broken days after the undo.
BROKEN_TRANSFORM_CONFIG = {
    "version": 1,
    "name": "orders-feed-fix",
    "owner": "sam.lee@example.com",
    "description": "a new etl_orders for 4 June, which (by mistake) drops the partner feed",
    "mode": "batch",
    "jobs": [{"namespace": "food_delivery", "name": "etl_orders"}],
    "dates": ["2021-06-04"],
    "publish": {"allow_emptied_partitions": False, "max_rows_removed_percent": 5},
    "notify": {"slack_channel": "#backfills", "pagerduty": True},
}
DROPPED_FEED = "partner"
RERUN_CONFIG = {
    "version": 1,
    "name": "orders-rerun",
    "owner": "jane.doe@example.com",
    "description": "the outage days again, after the outage backfill was undone",
    "mode": "batch",
    "jobs": [{"namespace": "food_delivery", "name": "etl_orders"}],
    "dates": ["2021-06-04", {"start": "2021-06-10", "end": "2021-06-12"}],
    "downstream": {"enabled": False},
    "notify": {"slack_channel": "#backfills", "pagerduty": True},
}
RUN_TIMEOUT = 900
FAULT_FILE = "demo-fault"  # under the work directory: while it exists, etl_orders drops its feed
EVENT_TIMEOUT = 120  # an upload's S3 event reaching the trigger and its record moving on


class DemoFailure(ServiceError, RuntimeError):
    """A stage of the demo did not do what it should."""


class DemoUsageError(UserError, ValueError):
    """The demo's environment asks for something it cannot do; nothing has started yet."""


def sample_shape(environ: Mapping[str, str]) -> SampleShape:
    """SAMPLE, with DEMO_SAMPLE_HOURS hours a day when that is set (read as every deployment
    setting is: EnvironmentReader, an empty value counts as unset)."""
    reader = EnvironmentReader(environ)
    hours = reader.whole(SAMPLE_HOURS_VARIABLE, SAMPLE.hours_per_day, low=1, high=24, unit=" of hours a day")
    if reader.problems:
        raise DemoUsageError("; ".join(reader.problems))
    return replace(SAMPLE, hours_per_day=hours)


@dataclass
class Clock:
    """Seconds since the demo began, printed with every stage: where the time goes."""

    began: float = field(default_factory=time.monotonic)

    def elapsed(self) -> float:
        return time.monotonic() - self.began


CLOCK = Clock()


def stage(message: str) -> None:
    print(f"\n== {message}  [+{CLOCK.elapsed():.0f} s]", flush=True)


def clock() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# -- services ------------------------------------------------------------------------------------
def start_aws(stack: ExitStack) -> str:
    if endpoint := os.environ.get("DEMO_AWS_ENDPOINT_URL"):
        return endpoint
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one access-log line per AWS call otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    stack.callback(server.stop)
    host, port = server.get_host_and_port()
    return f"http://{host}:{port}"


def prepare_aws(endpoint: str) -> dict[str, str]:
    """Bucket, status and claims tables (as template.yaml defines them), replay queue, catalog
    and secrets; returns secret ARNs by name."""
    from backfill_local.template_tables import create_table

    session = boto3.session.Session(region_name=REGION)
    s3 = session.client("s3", endpoint_url=endpoint)
    s3.create_bucket(Bucket=BUCKET)
    s3.put_object(
        Bucket=BUCKET, Key="catalog/catalog.yaml", Body=(REPO / "examples" / "catalog.yaml").read_bytes()
    )
    dynamodb = session.client("dynamodb", endpoint_url=endpoint)
    create_table(dynamodb, "StatusTable", table_name=TABLE)
    create_table(dynamodb, "ClaimsTable", table_name=CLAIMS_TABLE)
    session.client("sqs", endpoint_url=endpoint).create_queue(QueueName="orders-ingest-local")
    secrets = session.client("secretsmanager", endpoint_url=endpoint)
    user, password = (
        os.environ.get("DEMO_AIRFLOW_USER", "admin"),
        os.environ.get("DEMO_AIRFLOW_PASSWORD", "admin"),
    )
    values = {
        "backfill/slack": {"bot_token": SLACK_TOKEN},
        "backfill/pagerduty": {"routing_key": PD_KEY},
        "backfill/airflow": {"username": user, "password": password},
    }
    return {
        name: secrets.create_secret(Name=name, SecretString=json.dumps(v))["ARN"]
        for name, v in values.items()
    }


def print_received(kind: str, item: dict[str, Any]) -> None:
    if kind == "slack":
        where = f"thread {item['thread_ts']}" if item.get("thread_ts") else "new thread"
        print(f"   [slack {item.get('channel')} {where}] {item.get('text', '')[:200]}", flush=True)
    elif kind == "pagerduty":
        print(
            f"   [pagerduty {item['event_action']} {item['dedup_key']}] {item.get('payload', {}).get('summary', '')}",
            flush=True,
        )
    elif kind.endswith("rejected"):
        print(f"   [{kind}] {item}", flush=True)


def print_delivery(delivery: Any) -> None:
    for result in (delivery.answer or {}).get("results", []) if isinstance(delivery.answer, dict) else []:
        detail = result.get("detail") or result.get("reason") or ""
        print(
            f"   [trigger] {delivery.key}: {result.get('disposition') or result.get('outcome')} "
            f"{result.get('state') or ''} {str(detail)[:160]}".rstrip(),
            flush=True,
        )
    if isinstance(delivery.answer, dict) and "error" in delivery.answer:
        print(f"   [trigger] {delivery.key}: FAILED {delivery.answer['error']}", flush=True)


def airflow_settings(
    *,
    endpoint: str,
    warehouse: Path,
    work: Path,
    secret_arns: dict[str, str],
    slack: Any,
    pagerduty: Any,
    lineage_transport: str,
) -> dict[str, str]:
    """The `[backfill]` options of the local Airflow, and the tuning for a small machine."""
    from backfill_local.demo_spark import submit_args as spark_submit_args

    return {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "demo",
        "AWS_SECRET_ACCESS_KEY": "demo",
        "AIRFLOW__BACKFILL__WAREHOUSE_URI": str(warehouse),
        "AIRFLOW__BACKFILL__STATUS_TABLE": TABLE,
        "AIRFLOW__BACKFILL__CLAIMS_TABLE": CLAIMS_TABLE,
        "AIRFLOW__BACKFILL__CONTROL_URI": f"s3://{BUCKET}/control/",
        "AIRFLOW__BACKFILL__SLACK_SECRET_ID": secret_arns["backfill/slack"],
        "AIRFLOW__BACKFILL__SLACK_API_URL": slack.api_url,
        "AIRFLOW__BACKFILL__SLACK_CHANNEL": "#backfills",
        "AIRFLOW__BACKFILL__PAGERDUTY_SECRET_ID": secret_arns["backfill/pagerduty"],
        "AIRFLOW__BACKFILL__PAGERDUTY_EVENTS_URL": pagerduty.events_url,
        # Round slots for the demo's plans (two rounds): an unused slot still runs two tasks.
        "AIRFLOW__BACKFILL__MAX_ROUNDS": "2",
        "AIRFLOW__BACKFILL__MAX_PARALLEL_DAG_RUNS": "8",
        "AIRFLOW__BACKFILL__RERUN_POKE_SECONDS": "1",
        "AIRFLOW__BACKFILL__RETRY_DELAY_SECONDS": "5",
        "AIRFLOW__BACKFILL__OPENLINEAGE_TRANSPORT": lineage_transport,
        # The Backfills page (the package's Airflow plugin): presses write control documents here.
        "AIRFLOW__BACKFILL__CONFIG_BUCKET": BUCKET,
        "BACKFILL_SAMPLE_OUTPUT_DIR": str(work / "sample_dag_outputs"),
        # The demo's transforms: the sample's, with the bug the safe publish stage switches on.
        "BACKFILL_SPARK_REGISTRY": "backfill_local.demo_registry:DEMO",
        FAULT_FILE_VARIABLE: str(work / FAULT_FILE),
        # The backfill's Spark job (a child of its Airflow task): small data on two cores.
        "PYSPARK_SUBMIT_ARGS": spark_submit_args(),
    }


# -- the flow ------------------------------------------------------------------------------------
def main() -> int:
    CLOCK.began = time.monotonic()
    try:
        shape = sample_shape(os.environ)
    except DemoUsageError as error:
        print(f"demo: {error}")
        return 2
    work = Path(os.environ.get("DEMO_WORKDIR", REPO / ".demo")).resolve()
    clear_last_run(work)
    (work / "logs").mkdir(parents=True)
    failures: list[str] = []
    figures: dict[str, float] = {}
    cpu_before = os.times()
    signal.signal(signal.SIGTERM, _interrupt)  # a TERM stops like Ctrl-C: every process is stopped
    use_local_spark_defaults()  # every Spark JVM of the demo (its own, Airflow's tasks') reads it
    with ExitStack() as stack:
        try:
            run_flow(stack, work, shape, figures)
        except KeyboardInterrupt:
            failures.append("interrupted")
        except DemoFailure as error:
            failures.append(str(error))
        except Exception as error:  # the demo reports any crash as a failed stage, then cleans up
            import traceback

            traceback.print_exc()
            failures.append(f"{type(error).__name__}: {error}")
        stage("stopping every process the demo started")
    cpu = os.times()
    cpu_seconds = sum(
        getattr(cpu, a) - getattr(cpu_before, a)
        for a in ("user", "system", "children_user", "children_system")
    )
    if "first_verified" in figures:
        print(
            f"   the first backfill was repaired and verified {figures['first_verified']:.0f} s after the demo began "
            f"({figures['first_verified'] - figures['first_uploaded']:.0f} s after its config was dropped)"
        )
    print(
        f"   CPU time of the demo and the processes it waited for: {cpu_seconds:.0f} s; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    stage(f"done after {CLOCK.elapsed():.0f} s")
    if failures:
        for failure in failures:
            print(f"FAILED: {failure}")
        return 1
    print(
        "demo passed: the backfill repaired the data to equal a clean run; the overlapping one waited, then ran"
    )
    return 0


def clear_last_run(work: Path) -> None:
    """The last run's work directory (thousands of small files: tens of seconds to delete on a
    busy machine) is moved aside at once and deleted by a thread while this run goes on; the
    process waits for that thread before it exits. Leftovers of a run killed meanwhile go too."""
    leftovers = list(work.parent.glob(f"{work.name}.old-*"))
    if work.exists():
        aside = work.with_name(f"{work.name}.old-{os.getpid()}")
        work.rename(aside)
        leftovers.append(aside)
    if leftovers:
        threading.Thread(
            target=lambda: [shutil.rmtree(path, ignore_errors=True) for path in leftovers],
            name="demo-clear-last-run",
        ).start()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run_flow(stack: ExitStack, work: Path, shape: SampleShape, figures: dict[str, float]) -> None:
    from backfill_local.airflow_local import LocalAirflow, demo_dags_folder
    from backfill_local.demo_spark import demo_spark, link_or_copy, load_sample
    from backfill_local.marquez_double import MarquezDouble
    from backfill_local.receivers import PagerDutyReceiver, SlackReceiver

    stage("services: moto (S3, DynamoDB, SQS, Secrets Manager), Marquez double, Slack/PagerDuty receivers")
    endpoint = start_aws(stack)
    os.environ.update(
        {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ACCESS_KEY_ID": "demo",
            "AWS_SECRET_ACCESS_KEY": "demo",
        }
    )
    secret_arns = prepare_aws(endpoint)
    marquez_url = os.environ.get("DEMO_MARQUEZ_URL")
    if not marquez_url:
        marquez_url = stack.enter_context(MarquezDouble(seed="food_delivery", strict_spec=True)).url
    lineage_transport = json.dumps({"type": "http", "url": marquez_url})  # OpenLineage events of the backfill
    slack = stack.enter_context(SlackReceiver(token=SLACK_TOKEN, on_record=print_received))
    pagerduty = stack.enter_context(PagerDutyReceiver(routing_key=PD_KEY, on_record=print_received))
    print(
        f"   AWS {endpoint}; Marquez {marquez_url}; Slack {slack.api_url}; PagerDuty {pagerduty.events_url}"
    )

    warehouse, reference = work / "warehouse", work / "reference"
    airflow_url = os.environ.get("DEMO_AIRFLOW_URL")
    airflow: LocalAirflow | None = None
    if not airflow_url:
        stage("Airflow 3: api-server, scheduler, dag-processor on 127.0.0.1 (LocalExecutor)")
        airflow = LocalAirflow(
            dags_folder=demo_dags_folder(
                REPO / "dags", work / "dags", dag_files=["backfill_dag.py", "food_delivery"]
            ),
            home=work / "airflow",
            # The rerun round: one task (its `prepare`) waits on 8 DAG runs whose tasks take 8 slots.
            parallelism=10,
            responsive=True,
            extra_env=airflow_settings(
                endpoint=endpoint,
                warehouse=warehouse,
                work=work,
                secret_arns=secret_arns,
                slack=slack,
                pagerduty=pagerduty,
                lineage_transport=lineage_transport,
            ),
        )
        stack.callback(airflow.stop)
        # Airflow boots while Spark prepares the data: the two are the slow parts.
        booting = ThreadPoolExecutor(max_workers=1, thread_name_prefix="airflow-boot")
        stack.callback(booting.shutdown)
        boot = booting.submit(_boot, airflow)
        stack.callback(lambda: print(f"   Airflow logs: {airflow.logs_dir} and {work / 'airflow' / 'logs'}"))

    stage(
        f"sample data: generate {shape.days} days from {shape.start} ({shape.hours_per_day} hours a day), "
        f"run clean (the reference), break orders {BROKEN_DAYS}"
    )
    spark_log = work / "logs" / "demo_spark.log"
    spark_scope = ExitStack()
    stack.enter_context(spark_scope)
    # The JVM starts while the sample is copied from the cache (when it is there).
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="spark-start") as starting:
        session = starting.submit(spark_scope.enter_context, demo_spark(log=spark_log))
        cached = load_sample(warehouse=warehouse, reference=reference, shape=shape)
        spark = session.result()
    sample = cached or spark.clean_sample(warehouse=warehouse, reference=reference, shape=shape)
    broken = spark.break_orders(warehouse=warehouse, days=BROKEN_DAYS)
    broken_files = data_files(warehouse)  # what `backfill undo` of everything must give back
    made = "copied from this virtualenv's cache" if sample.cached else "generated and cached"
    print(
        f"   {sample.raw_rows} raw orders; clean run {sample.written} ({made}); "
        f"dropped {len(broken)} partitions of orders"
    )
    print(f"   warehouse {warehouse} (broken), reference {reference}; Spark log {spark_log}")

    if airflow is not None:
        boot.result()  # raises what booting raised
        airflow_url = airflow.url
        print(
            f"   Airflow {airflow_url} booted in {airflow.boot_seconds:.0f} s, {airflow.memory_rss_bytes() / 2**20:.0f} MiB"
        )
        print(f"   {page_line(airflow)} (open while the demo runs)", flush=True)
    else:
        airflow = LocalAirflow(
            dags_folder=REPO / "dags",
            external_url=airflow_url,
            user=os.environ.get("DEMO_AIRFLOW_USER", "admin"),
            password=os.environ.get("DEMO_AIRFLOW_PASSWORD", "admin"),
        )

    # The clean run's tables are read while Airflow starts the plan (its first tasks and the
    # Spark job's start leave a core free) and kept for both data checks
    # (`DemoSpark.keep_reference`); not earlier, where they slow Airflow's boot.
    checking = ThreadPoolExecutor(max_workers=1, thread_name_prefix="keep-reference")
    stack.callback(checking.shutdown)
    kept = checking.submit(spark.keep_reference, reference)

    stage("S3 notifications of the config bucket (incoming/, control/) -> queue -> trigger handler")
    os.environ.update(
        trigger_settings(
            airflow_url=airflow_url,
            marquez_url=marquez_url,
            secret_arns=secret_arns,
            slack=slack,
            pagerduty=pagerduty,
            lineage_transport=lineage_transport,
        )
    )
    s3 = boto3.client("s3")
    after_first = work / "warehouse-after-first"
    second_id = _backfill_id(OVERLAPPING_CONFIG)

    def before_handler(key: str) -> None:
        # The second backfill starts from the `start` document the first one's end drops: keep
        # the warehouse exactly as the first left it, to check it while the second runs.
        # Hard links, not copies: the backfills replace files (write new ones, rename, delete),
        # never write into one, so the linked files keep the first backfill's bytes.
        if key.startswith(f"control/{second_id}/start-") and not after_first.exists():
            shutil.copytree(warehouse, after_first, copy_function=link_or_copy)

    from backfill_orchestrator.trigger.handler import trigger_wiring

    stack.enter_context(trigger_wiring())  # the handler's container, built from the environment just set
    pump = stack.enter_context(_event_pump(s3, on_event=before_handler))
    print(
        f"   s3://{BUCKET}/incoming/ and /control/ -> sqs {pump.queue_name} -> trigger (CLAIMS_TABLE {CLAIMS_TABLE}, ON_OVERLAP=wait)"
    )

    from backfill_orchestrator.client import submit_backfill
    from backfill_orchestrator.status import StatusStore

    store = StatusStore(table_name=TABLE, dynamodb_client=boto3.client("dynamodb"))
    stage("submit the config from Python, as a notebook would; its S3 event reaches the trigger")
    first = submit_backfill(CONFIG, bucket=BUCKET, s3_client=s3)
    figures["first_uploaded"] = CLOCK.elapsed()
    timeline: list[tuple[str, str]] = [(clock(), f"uploaded {first.s3_uri}")]
    print(f"   {first.backfill_id} -> {first.s3_uri}")
    record = wait_for_state(store, first.backfill_id, {"TRIGGERED", "RUNNING"}, pump=pump)
    print(f"   {record.state}: DAG run {record.dag_run_id}; plan {record.plan_uri}")

    stage("while it runs, someone submits an overlapping backfill (same job, 11-12 June)")
    second = submit_backfill(OVERLAPPING_CONFIG, bucket=BUCKET, s3_client=s3)
    second_timeline: list[tuple[str, str]] = [(clock(), f"uploaded {second.s3_uri}")]
    print(f"   {second.backfill_id} -> {second.s3_uri}")
    waiting = wait_for_state(store, second.backfill_id, {"QUEUED"}, pump=pump)
    print(f"   {waiting.state}: {waiting.reason}")
    if first.backfill_id not in (waiting.reason or ""):
        raise DemoFailure(f"the second backfill should wait for {first.backfill_id}: {waiting.reason}")

    stage("Airflow runs the first plan")
    state = wait_for_dag_run(airflow, record.dag_run_id)
    record = store.get(first.backfill_id)
    print_timeline(timeline, record, airflow, record.dag_run_id)
    stage("Slack messages")
    for message in slack.messages:
        print(f"   {'  ↳ ' if message.get('thread_ts') else ''}{message['text'][:300]}")
    if pagerduty.events:
        print(f"   PagerDuty: {[(e['event_action'], e['dedup_key']) for e in pagerduty.events]}")
    if state != "success" or record.state != "SUCCEEDED":
        raise DemoFailure(f"the DAG run ended {state}, the record is {record.state}: {record.reason or ''}")
    result = read_result_file(s3, first.key)
    if result.state != "SUCCEEDED" or result.figures is None or result.plan is None:
        raise DemoFailure(
            f"the result file beside the config says {result.state}, not SUCCEEDED with figures"
        )
    print(
        f"   result file beside the config: {result.state}, {result.figures.text(total_steps=result.plan.steps)}"
    )
    stage("the backfill in the lineage graph, read back from Marquez")
    from backfill_local.lineage_report import LineageMissingError, backfill_lineage

    try:
        for line in backfill_lineage(marquez_url, namespace="backfill", backfill_id=first.backfill_id):
            print(f"   {line}")
    except LineageMissingError as error:
        raise DemoFailure(str(error)) from None

    # Its end released the claims and dropped `control/<second>/start-*.json`; that upload's
    # event starts the second backfill (the copy above was taken before it could write).
    started = wait_for_state(
        store, second.backfill_id, {"TRIGGERED", "RUNNING", "SUCCEEDED", "FAILED"}, pump=pump
    )
    stage("data check: the warehouse the first backfill left equals the clean run")
    if not after_first.exists():  # the copy is made before the `start` event reaches the trigger
        raise DemoFailure(f"{second.backfill_id} was started without a `start` document event")
    kept.result()  # raises what reading the clean run raised
    differences = spark.differences(repaired=after_first, reference=reference)
    if differences:
        raise DemoFailure("the repaired data differs from the clean run: " + "; ".join(differences))
    figures["first_verified"] = CLOCK.elapsed()
    stage(
        f"result after {figures['first_verified']:.0f} s: config dropped, warehouse repaired and verified "
        f"({figures['first_verified'] - figures['first_uploaded']:.0f} s after the upload)"
    )

    stage(
        f"the waiting backfill was started by {_start_document(pump, second.backfill_id)}: `backfill watch`"
    )
    print(f"   {started.state}: DAG run {started.dag_run_id}")
    from backfill_orchestrator.client import watch_backfill

    final = watch_backfill(second.backfill_id, table=TABLE, interval=2, timeout=RUN_TIMEOUT)
    print_timeline(second_timeline, final, airflow, final.dag_run_id or started.dag_run_id)
    if final.state != "SUCCEEDED":
        raise DemoFailure(f"the overlapping backfill ended {final.state}: {final.reason or ''}")

    from backfill_orchestrator.cli import main as backfill_cli

    safe_publish(
        store=store,
        s3=s3,
        pump=pump,
        spark=spark,
        work=work,
        warehouse=warehouse,
        reference=reference,
        broken_files=broken_files,
        done=[first.backfill_id, second.backfill_id],
        figures=figures,
    )
    spark_scope.close()
    stage("backfill list")
    backfill_cli(["list", "--table", TABLE])
    stage("the Backfills page in the Airflow UI")
    check_page(airflow, [first.backfill_id, second.backfill_id])
    if pump.failures:
        raise DemoFailure(f"the trigger failed on some S3 events: {pump.failures}")


def safe_publish(
    *,
    store: Any,
    s3: Any,
    pump: Any,
    spark: Any,
    work: Path,
    warehouse: Path,
    reference: Path,
    broken_files: dict[str, str],
    done: list[str],
    figures: dict[str, float],
) -> None:
    """The first backfill's diff (published by the policy at once); a backfill with a broken
    transform held AWAITING_PUBLISH and discarded, the warehouse unchanged; `backfill undo` of
    the earlier backfills (the later first, as the refusal says) gives the broken warehouse
    back; a re-run repairs it again. Each checked."""
    from backfill_orchestrator.cli import main as backfill_cli
    from backfill_orchestrator.client import submit_backfill, watch_backfill
    from backfill_orchestrator.contracts import HeldStep
    from backfill_orchestrator.publish import FileDataStore, Publisher, PublishLayout, default_root

    began = CLOCK.elapsed()
    first, second = done
    publisher = Publisher(layout=PublishLayout(default_root(str(warehouse))), store=FileDataStore())
    stage(f"safe publish: what {first} changed, step by step (its checks; published by the policy at once)")
    for manifest in publisher.manifests(first):
        checks = publisher.load_checks(manifest)
        if checks is not None:
            print(
                f"   {HeldStep.of(checks).text().splitlines()[0]}; {checks.verdict}, by {manifest.published_by}"
            )

    stage(
        f"a backfill whose etl_orders drops the {DROPPED_FEED} feed (a deliberate bug): held, not published"
    )
    fault = work / FAULT_FILE
    fault.write_text(DROPPED_FEED)
    before = data_files(warehouse)
    broken = submit_backfill(BROKEN_TRANSFORM_CONFIG, bucket=BUCKET, s3_client=s3)
    try:
        held = wait_for_state(
            store, broken.backfill_id, {"AWAITING_PUBLISH", "SUCCEEDED"}, pump=pump, timeout=RUN_TIMEOUT
        )
    finally:
        fault.unlink()
    if held.state != "AWAITING_PUBLISH":
        raise DemoFailure(f"{broken.backfill_id} is {held.state}: its lost rows were not caught")
    print(f"   {held.state}: {held.reason}")
    for step in (held.publish or {}).get("held", []):
        for line in HeldStep.model_validate(step).text().splitlines():
            print(f"   {line}")
    if data_files(warehouse) != before:
        raise DemoFailure("the held backfill changed the warehouse")

    stage(f"`backfill discard {broken.backfill_id}`")
    code = backfill_cli(
        ["discard", broken.backfill_id, "--reason", f"drops the {DROPPED_FEED} feed", "--table", TABLE]
    )
    if code != 0 or str(store.get(broken.backfill_id).state) != "DISCARDED":
        raise DemoFailure(f"the discard of {broken.backfill_id} did not end DISCARDED (exit {code})")
    if data_files(warehouse) != before:
        raise DemoFailure("the discarded backfill changed the warehouse")
    print("   the warehouse is unchanged: every data file as it was (verified)")

    stage(f"`backfill undo {first}`: refused while a later backfill republished some of its partitions")
    if backfill_cli(["undo", first, "--reason", "the outage fix was wrong", "--table", TABLE]) != 1:
        raise DemoFailure(f"the undo of {first} should be refused: {second} republished its partitions")
    for backfill_id in (second, first):
        if backfill_cli(["undo", backfill_id, "--reason", "put the data back", "--table", TABLE]) != 0:
            raise DemoFailure(f"the undo of {backfill_id} failed")
    if data_files(warehouse) != broken_files:
        raise DemoFailure("after the undos the warehouse is not the broken one it was")
    print("   the warehouse is the broken one again: every data file as before the first backfill (verified)")

    stage("a re-run of the outage days repairs it again")
    rerun = submit_backfill(RERUN_CONFIG, bucket=BUCKET, s3_client=s3)
    final = watch_backfill(rerun.backfill_id, table=TABLE, interval=2, timeout=RUN_TIMEOUT)
    if final.state != "SUCCEEDED":
        raise DemoFailure(f"the re-run ended {final.state}: {final.reason or ''}")
    differences = spark.differences(repaired=warehouse, reference=reference)
    if differences:
        raise DemoFailure("the re-run data differs from the clean run: " + "; ".join(differences))
    figures["safe_publish_seconds"] = CLOCK.elapsed() - began
    print(
        f"   repaired and verified: equal to the clean run, table by table ({figures['safe_publish_seconds']:.0f} s for this part)"
    )


def data_files(warehouse: Path) -> dict[str, str]:
    """Every data file readers see (the publish root and staging, `_backfill`, left out): path
    -> its SHA-256."""
    import hashlib

    return {
        str(path.relative_to(warehouse)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(warehouse.rglob("*"))
        if path.is_file() and "_backfill" not in path.relative_to(warehouse).parts
    }


def page_line(airflow: Any) -> str:
    return f"the Backfills page: {airflow.url}/backfills/ (Airflow login {airflow.user} / {airflow.password})"


def check_page(airflow: Any, backfill_ids: list[str]) -> None:
    """The page's list, read as the demo's Airflow user, shows every backfill of the demo."""
    import requests

    answer = requests.get(
        f"{airflow.url}/backfills/api/backfills",
        headers={"Authorization": f"Bearer {airflow.token()}"},
        timeout=30,
    )
    if answer.status_code == 404 and os.environ.get("DEMO_AIRFLOW_URL"):
        print(f"   {airflow.url} has no Backfills page: install the package there (docs/airflow.md)")
        return
    listed = [row["backfill_id"] for row in answer.json().get("backfills", [])] if answer.ok else []
    missing = [backfill_id for backfill_id in backfill_ids if backfill_id not in listed]
    if missing:
        raise DemoFailure(f"the Backfills page does not list {missing} (HTTP {answer.status_code})")
    print(f"   {page_line(airflow)} lists {', '.join(backfill_ids)}")


def trigger_settings(
    *,
    airflow_url: str,
    marquez_url: str,
    secret_arns: dict[str, str],
    slack: Any,
    pagerduty: Any,
    lineage_transport: str,
) -> dict[str, str]:
    """The trigger function's environment, as template.yaml sets it."""
    return {
        "CONFIG_BUCKET": BUCKET,
        "STATUS_TABLE": TABLE,
        "CLAIMS_TABLE": CLAIMS_TABLE,
        "ON_OVERLAP": "wait",
        "MARQUEZ_URL": marquez_url,
        "AIRFLOW_URL": airflow_url,
        "AIRFLOW_UI_URL": airflow_url,
        "AIRFLOW_SECRET_ID": secret_arns["backfill/airflow"],
        "BACKFILL_DAG_ID": "backfill",
        "SLACK_API_URL": slack.api_url,
        "SLACK_SECRET_ID": secret_arns["backfill/slack"],
        "SLACK_CHANNEL": "#backfills",
        "PAGERDUTY_EVENTS_URL": pagerduty.events_url,
        "PAGERDUTY_SECRET_ID": secret_arns["backfill/pagerduty"],
        "JOB_CATALOG_URI": f"s3://{BUCKET}/catalog/catalog.yaml",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "WARNING",  # each delivery's answer is printed instead
        "POWERTOOLS_METRICS_NAMESPACE": "BackfillOrchestratorDemo",
        "OPENLINEAGE_TRANSPORT": lineage_transport,
        "_X_AMZN_TRACE_ID": f"Root={DEMO_TRACE_ID};Sampled=1",  # as Lambda sets it: followed into the DAG's logs
    }


def _event_pump(s3: Any, *, on_event: Any) -> Any:
    from backfill_local.s3_events import S3EventPump
    from backfill_orchestrator.trigger import handler as trigger_handler

    # The bucket's s3:TestEvent (sent when notifications are configured) announces nothing.
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    return S3EventPump(
        s3_client=s3,
        sqs_client=boto3.client("sqs"),
        bucket=BUCKET,
        prefixes=["incoming/", "control/"],
        handler=trigger_handler.handler,
        on_event=on_event,
        on_delivery=print_delivery,
        principal_id=f"AWS:{boto3.client('sts').get_caller_identity()['UserId']}",  # who uploads, as S3 says
    )


def _backfill_id(config: dict[str, Any]) -> str:
    from backfill_orchestrator.config import backfill_id, parse_config

    return backfill_id(parse_config(json.dumps(config), source="demo"))


def _start_document(pump: Any, backfill_id: str) -> str:
    """The `start` control document that reached the trigger for `backfill_id` (the handler
    may still be finishing that delivery)."""
    deadline = time.monotonic() + EVENT_TIMEOUT
    while not (delivered := pump.delivered(f"control/{backfill_id}/start-")):
        if time.monotonic() > deadline:
            raise DemoFailure(f"no `start` control document reached the trigger for {backfill_id}")
        time.sleep(0.5)
    return f"s3://{BUCKET}/{delivered[0].key}"


def wait_for_state(
    store: Any, backfill_id: str, states: set[str], *, pump: Any, timeout: float = EVENT_TIMEOUT
) -> Any:
    """The backfill's record once its state is one of `states` (the trigger runs in the pump)."""
    deadline = time.monotonic() + timeout
    while True:
        record = store.get(backfill_id)
        if record is not None and str(record.state) in states:
            return record
        if pump.failures:
            raise DemoFailure(f"the trigger failed on an S3 event: {pump.failures[-1]}")
        if record is not None and str(record.state) in {"REJECTED", "FAILED", "CANCELLED"} - states:
            raise DemoFailure(f"{backfill_id} is {record.state}, not {sorted(states)}: {record.reason or ''}")
        if time.monotonic() > deadline:
            raise DemoFailure(
                f"{backfill_id} not {sorted(states)} after {timeout:.0f} s: {record and record.as_dict()}"
            )
        time.sleep(0.5)


def _boot(airflow: Any) -> None:
    airflow.start()
    airflow.wait_for_dags(["backfill", "orders_popular_day_of_week", "email_discounts"])


def read_result_file(s3: Any, key: str) -> Any:
    """The result file beside the dropped config, read through its contract: what someone with
    only S3 access sees."""
    from backfill_orchestrator.contracts import ResultFile
    from backfill_orchestrator.trigger.events import Upload
    from backfill_orchestrator.trigger.storage import TriggerStorage

    storage = TriggerStorage(
        s3_client=s3,
        bucket=BUCKET,
        incoming_prefix="incoming/",
        results_prefix="results/",
        backfills_prefix="backfills/",
    )
    result_key = storage.result_key(Upload(BUCKET, key))
    body = s3.get_object(Bucket=BUCKET, Key=result_key)["Body"].read()
    return ResultFile.from_json(body, source=f"s3://{BUCKET}/{result_key}")


def wait_for_dag_run(airflow: Any, run_id: str) -> str:
    deadline = time.monotonic() + RUN_TIMEOUT
    seen: set[tuple[str, int, str]] = set()
    while True:
        state = airflow.run_state("backfill", run_id)
        for ti in airflow.task_instances("backfill", run_id):
            key = (ti["task_id"], ti["map_index"], ti["state"] or "")
            if ti["state"] in ("success", "failed", "up_for_retry") and key not in seen:
                seen.add(key)
                label = ti.get("rendered_map_index") or (ti["map_index"] if ti["map_index"] >= 0 else "")
                print(f"   {ti['task_id']} {label} {ti['state']}".rstrip(), flush=True)
        if state in ("success", "failed"):
            return state
        if time.monotonic() > deadline:
            raise DemoFailure(f"the DAG run {run_id} is still {state} after {RUN_TIMEOUT} s")
        time.sleep(2)


def print_timeline(timeline: list[tuple[str, str]], record: Any, airflow: Any, run_id: str | None) -> None:
    stage(f"timeline of {record.backfill_id}")
    events = list(timeline)
    names = {
        "RECEIVED": "received",
        "PLANNED": "validated and planned",
        "TRIGGERED": "triggered",
        "QUEUED": "queued",
    }
    planned = any(entry["state"] == "PLANNED" for entry in record.history)
    for entry in record.history:
        name = names.get(entry["state"], entry["state"].lower())
        if not planned and entry["state"] in ("TRIGGERED", "QUEUED"):
            # No PLANNED on the way (only a dry run or a policy stops there): this state carried the plan.
            planned, summary = True, record.plan_summary or {}
            size = f" ({summary.get('waves_total') or len(summary.get('waves') or [])} waves, {summary.get('steps')} steps)"
            name = f"validated, planned{size if summary else ''} and {name}"
        events.append((entry["at"], f"{name}: {entry.get('detail') or ''}"))
    if airflow is not None and run_id:
        for ti in airflow.task_instances("backfill", run_id):
            if ti["state"] == "skipped" or not ti.get("start_date"):
                continue
            label = ti.get("rendered_map_index") or ""
            events.append((ti["start_date"], f"step {ti['task_id']} {label} started".replace("  ", " ")))
            events.append(
                (
                    ti["end_date"] or ti["start_date"],
                    f"step {ti['task_id']} {label} {ti['state']}".replace("  ", " "),
                )
            )
    for at, what in sorted(events, key=lambda item: _instant(item[0])):
        print(f"   {at[:19]}  {what[:220]}")


def _instant(text: str) -> datetime:
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=UTC)


if __name__ == "__main__":
    raise SystemExit(main())
