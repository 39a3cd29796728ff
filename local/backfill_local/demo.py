"""`make demo`: the whole flow on this machine, with embedded defaults, in a few minutes.

1. Services: moto as a local server (S3, DynamoDB, SQS, Secrets Manager), the Marquez double
   seeded with the food delivery sample, local Slack and PagerDuty receivers (they print what
   they get), and a real Airflow 3 (api-server, scheduler, dag-processor on 127.0.0.1,
   LocalExecutor) with the `backfill` DAG and the sample DAGs.
2. Data: the sample pipeline generates raw orders and runs clean (the reference copy is kept),
   then breaks `orders` for some days.
3. Submit: a config for those days through the Python client, exactly as a notebook would.
4. Trigger: the S3 event (shaped like events/s3-put-valid.json) goes to the trigger handler,
   which validates, plans (Marquez + catalog) and starts the DAG in Airflow.
5. Airflow runs the plan: the generic Spark job locally, the sample DAGs rerun per date.
6. Prints the timeline, the Slack messages, and checks the repaired warehouse equals the
   clean run. Exit 0 only if every stage worked; every process started here is stopped.

Any piece can be a real service instead, by environment variable:
  DEMO_AWS_ENDPOINT_URL   an AWS endpoint (e.g. a LocalStack) instead of moto
  DEMO_MARQUEZ_URL        a Marquez with the food delivery sample loaded, instead of the double
  DEMO_AIRFLOW_URL        an Airflow 3 running dags/ with the [backfill] options set, instead of
                          the local one (DEMO_AIRFLOW_USER / DEMO_AIRFLOW_PASSWORD, default admin)
  DEMO_WORKDIR            where data and logs go (default .demo/ in the repository)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3

REPO = Path(__file__).resolve().parents[2]
BUCKET = "backfill-configs-local"
TABLE = "backfill-status-local"
SLACK_TOKEN = "xoxb-demo-token"
PD_KEY = "R0UT1NGKEY0F32CHARACTERSDEMO0000"
REGION = "us-east-1"
DEMO_TRACE_ID = "1-6740c2a1-0a1b2c3d4e5f60718293a4b5"
DATA_START, DATA_DAYS = "2021-06-01", 21
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
RUN_TIMEOUT = 900


class DemoFailure(RuntimeError):
    """A stage of the demo did not do what it should."""


def stage(message: str) -> None:
    print(f"\n== {message}", flush=True)


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
    """Bucket, status table, replay queue, catalog and secrets; returns secret ARNs by name."""
    session = boto3.session.Session(region_name=REGION)
    s3 = session.client("s3", endpoint_url=endpoint)
    s3.create_bucket(Bucket=BUCKET)
    s3.put_object(Bucket=BUCKET, Key="catalog/catalog.yaml", Body=(REPO / "examples" / "catalog.yaml").read_bytes())
    session.client("dynamodb", endpoint_url=endpoint).create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "backfill_id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "backfill_id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    session.client("sqs", endpoint_url=endpoint).create_queue(QueueName="orders-ingest-local")
    secrets = session.client("secretsmanager", endpoint_url=endpoint)
    user, password = os.environ.get("DEMO_AIRFLOW_USER", "admin"), os.environ.get("DEMO_AIRFLOW_PASSWORD", "admin")
    values = {
        "backfill/slack": {"bot_token": SLACK_TOKEN},
        "backfill/pagerduty": {"routing_key": PD_KEY},
        "backfill/airflow": {"username": user, "password": password},
    }
    return {name: secrets.create_secret(Name=name, SecretString=json.dumps(v))["ARN"] for name, v in values.items()}


def print_received(kind: str, item: dict[str, Any]) -> None:
    if kind == "slack":
        where = f"thread {item['thread_ts']}" if item.get("thread_ts") else "new thread"
        print(f"   [slack {item.get('channel')} {where}] {item.get('text', '')[:200]}", flush=True)
    elif kind == "pagerduty":
        print(f"   [pagerduty {item['event_action']} {item['dedup_key']}] {item.get('payload', {}).get('summary', '')}", flush=True)
    elif kind.endswith("rejected"):
        print(f"   [{kind}] {item}", flush=True)


# -- data ----------------------------------------------------------------------------------------
def sample_pipeline(*args: str, log: Path) -> None:
    command = [sys.executable, "-m", "spark_jobs.sample.pipeline", *args]
    with log.open("ab") as out:
        result = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False, cwd=REPO)
    if result.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
        raise DemoFailure(f"sample_pipeline {args[0]} exited {result.returncode}:\n{tail}")


def processed_tables_equal(*, repaired: Path, reference: Path) -> list[str]:
    """Differences between the processed layers (empty: equal), compared row by row in Spark."""
    from spark_jobs.engine.session import spark_session
    from spark_jobs.engine.table_io import read_table
    from spark_jobs.sample.tables import PROCESSED_TABLES

    differences = []
    with spark_session("demo-data-check") as spark:
        for table in PROCESSED_TABLES:
            got = read_table(spark=spark, warehouse=str(repaired), table=table)
            want = read_table(spark=spark, warehouse=str(reference), table=table)
            missing, extra = want.exceptAll(got).count(), got.exceptAll(want).count()
            rows = want.count()
            print(f"   {table.name}: {rows} rows in the clean run; missing {missing}, unexpected {extra}")
            if missing or extra or rows == 0:
                differences.append(f"{table.name}: missing {missing}, unexpected {extra}, clean rows {rows}")
    return differences


# -- the flow ------------------------------------------------------------------------------------
def main() -> int:
    began = time.monotonic()
    work = Path(os.environ.get("DEMO_WORKDIR", REPO / ".demo")).resolve()
    shutil.rmtree(work, ignore_errors=True)
    (work / "logs").mkdir(parents=True)
    timeline: list[tuple[str, str]] = []
    failures: list[str] = []
    with ExitStack() as stack:
        try:
            run_flow(stack, work, timeline)
        except DemoFailure as error:
            failures.append(str(error))
        except Exception as error:  # the demo reports any crash as a failed stage, then cleans up
            import traceback

            traceback.print_exc()
            failures.append(f"{type(error).__name__}: {error}")
        stage("stopping every process the demo started")
    stage(f"result after {time.monotonic() - began:.0f} s")
    if failures:
        for failure in failures:
            print(f"FAILED: {failure}")
        return 1
    print("demo passed: the backfill repaired the data to equal a clean run")
    return 0


def run_flow(stack: ExitStack, work: Path, timeline: list[tuple[str, str]]) -> None:
    from backfill_local.airflow_local import LocalAirflow
    from backfill_local.marquez_double import MarquezDouble
    from backfill_local.receivers import PagerDutyReceiver, SlackReceiver

    stage("services: moto (S3, DynamoDB, SQS, Secrets Manager), Marquez double, Slack/PagerDuty receivers")
    endpoint = start_aws(stack)
    os.environ.update(
        {"AWS_ENDPOINT_URL": endpoint, "AWS_DEFAULT_REGION": REGION, "AWS_ACCESS_KEY_ID": "demo", "AWS_SECRET_ACCESS_KEY": "demo"}
    )
    secret_arns = prepare_aws(endpoint)
    marquez_url = os.environ.get("DEMO_MARQUEZ_URL")
    if not marquez_url:
        marquez_url = stack.enter_context(MarquezDouble(seed="food_delivery", strict_spec=True)).url
    lineage_transport = json.dumps({"type": "http", "url": marquez_url})  # OpenLineage events of the backfill
    slack = stack.enter_context(SlackReceiver(token=SLACK_TOKEN, on_record=print_received))
    pagerduty = stack.enter_context(PagerDutyReceiver(routing_key=PD_KEY, on_record=print_received))
    print(f"   AWS {endpoint}; Marquez {marquez_url}; Slack {slack.api_url}; PagerDuty {pagerduty.events_url}")

    warehouse, reference = work / "warehouse", work / "reference"
    airflow_url = os.environ.get("DEMO_AIRFLOW_URL")
    airflow: LocalAirflow | None = None
    if not airflow_url:
        stage("Airflow 3: api-server, scheduler, dag-processor on 127.0.0.1 (LocalExecutor)")
        airflow = LocalAirflow(
            dags_folder=REPO / "dags",
            home=work / "airflow",
            parallelism=4,
            extra_env={
                "AWS_ENDPOINT_URL": endpoint,
                "AWS_DEFAULT_REGION": REGION,
                "AWS_ACCESS_KEY_ID": "demo",
                "AWS_SECRET_ACCESS_KEY": "demo",
                "AIRFLOW__BACKFILL__WAREHOUSE_URI": str(warehouse),
                "AIRFLOW__BACKFILL__STATUS_TABLE": TABLE,
                "AIRFLOW__BACKFILL__SLACK_SECRET_ID": secret_arns["backfill/slack"],
                "AIRFLOW__BACKFILL__SLACK_API_URL": slack.api_url,
                "AIRFLOW__BACKFILL__SLACK_CHANNEL": "#backfills",
                "AIRFLOW__BACKFILL__PAGERDUTY_SECRET_ID": secret_arns["backfill/pagerduty"],
                "AIRFLOW__BACKFILL__PAGERDUTY_EVENTS_URL": pagerduty.events_url,
                "AIRFLOW__BACKFILL__MAX_PARALLEL_DAG_RUNS": "3",
                "AIRFLOW__BACKFILL__RERUN_POKE_SECONDS": "1",
                "AIRFLOW__BACKFILL__RETRY_DELAY_SECONDS": "5",
                "AIRFLOW__BACKFILL__OPENLINEAGE_TRANSPORT": lineage_transport,
                "BACKFILL_SAMPLE_OUTPUT_DIR": str(work / "sample_dag_outputs"),
            },
        )
        stack.callback(airflow.stop)
        # Airflow boots while Spark prepares the data: the two are the slow parts.
        booting = ThreadPoolExecutor(max_workers=1, thread_name_prefix="airflow-boot")
        stack.callback(booting.shutdown)
        boot = booting.submit(_boot, airflow)
        stack.callback(lambda: print(f"   Airflow logs: {airflow.logs_dir} and {work / 'airflow' / 'logs'}"))

    stage(f"sample data: generate {DATA_DAYS} days from {DATA_START}, run clean (the reference), break orders {BROKEN_DAYS}")
    data_log = work / "logs" / "sample_pipeline.log"
    sample_pipeline("generate", "--warehouse", str(warehouse), "--start", DATA_START, "--days", str(DATA_DAYS), log=data_log)
    sample_pipeline("run-clean", "--warehouse", str(warehouse), log=data_log)
    shutil.copytree(warehouse, reference)
    sample_pipeline("break", "--warehouse", str(warehouse), "--days", BROKEN_DAYS, log=data_log)
    print(f"   warehouse {warehouse} (broken), reference {reference}; log {data_log}")

    if airflow is not None:
        boot.result()  # raises what booting raised
        airflow_url = airflow.url
        print(f"   Airflow {airflow_url} booted in {airflow.boot_seconds:.0f} s, {airflow.memory_rss_bytes() / 2**20:.0f} MiB")

    stage("submit the config from Python, as a notebook would")
    from backfill_orchestrator.client import submit_backfill

    s3 = boto3.client("s3")
    submission = submit_backfill(CONFIG, bucket=BUCKET, s3_client=s3)
    timeline.append((clock(), f"uploaded {submission.s3_uri}"))
    print(f"   {submission.backfill_id} -> {submission.s3_uri}")

    stage("deliver the S3 event to the trigger handler (as `sam local invoke` would)")
    trigger_env = {
        "CONFIG_BUCKET": BUCKET,
        "STATUS_TABLE": TABLE,
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
        "POWERTOOLS_METRICS_NAMESPACE": "BackfillOrchestratorDemo",
        "OPENLINEAGE_TRANSPORT": lineage_transport,
        "_X_AMZN_TRACE_ID": f"Root={DEMO_TRACE_ID};Sampled=1",  # as Lambda sets it: followed into the DAG's logs
    }
    os.environ.update(trigger_env)
    answer = invoke_trigger(s3, submission.key)
    print(f"   handler answered: {json.dumps(answer)[:400]}")

    from backfill_orchestrator.status import StatusStore

    store = StatusStore(table_name=TABLE, dynamodb_client=boto3.client("dynamodb"))
    record = store.get(submission.backfill_id)
    if record is None or record.state != "TRIGGERED":
        raise DemoFailure(f"the trigger did not start the DAG: record {record and record.as_dict()}")
    print(f"   {record.state}: DAG run {record.dag_run_id}; plan {record.plan_uri}")

    stage("Airflow runs the plan")
    state = wait_for_dag_run(airflow_url, airflow, record.dag_run_id)
    record = store.get(submission.backfill_id)
    print_timeline(timeline, record, airflow, record.dag_run_id)
    stage("Slack messages")
    for message in slack.messages:
        print(f"   {'  ↳ ' if message.get('thread_ts') else ''}{message['text'][:300]}")
    if pagerduty.events:
        print(f"   PagerDuty: {[(e['event_action'], e['dedup_key']) for e in pagerduty.events]}")
    if state != "success" or record.state != "SUCCEEDED":
        raise DemoFailure(f"the DAG run ended {state}, the record is {record.state}: {record.reason or ''}")
    result = read_result_file(s3, submission.key)
    if result.state != "SUCCEEDED" or result.figures is None or result.plan is None:
        raise DemoFailure(f"the result file beside the config says {result.state}, not SUCCEEDED with figures")
    print(f"   result file beside the config: {result.state}, {result.figures.text(total_steps=result.plan.steps)}")
    stage("the backfill in the lineage graph, read back from Marquez")
    from backfill_local.lineage_report import LineageMissingError, backfill_lineage

    try:
        for line in backfill_lineage(marquez_url, namespace="backfill", backfill_id=submission.backfill_id):
            print(f"   {line}")
    except LineageMissingError as error:
        raise DemoFailure(str(error)) from None

    if airflow is not None:  # its memory is better spent on the comparison's Spark
        airflow.stop()
    stage("data check: the repaired warehouse equals the clean run")
    differences = processed_tables_equal(repaired=warehouse, reference=reference)
    if differences:
        raise DemoFailure("the repaired data differs from the clean run: " + "; ".join(differences))


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
        s3_client=s3, bucket=BUCKET, incoming_prefix="incoming/", results_prefix="results/", backfills_prefix="backfills/"
    )
    result_key = storage.result_key(Upload(BUCKET, key))
    body = s3.get_object(Bucket=BUCKET, Key=result_key)["Body"].read()
    return ResultFile.from_json(body, source=f"s3://{BUCKET}/{result_key}")


def invoke_trigger(s3: Any, key: str) -> Any:
    from backfill_orchestrator.trigger import handler as trigger_handler

    event = json.loads((REPO / "events" / "s3-put-valid.json").read_text())
    head = s3.head_object(Bucket=BUCKET, Key=key)
    record = event["Records"][0]
    record["eventTime"] = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    record["s3"]["bucket"].update({"name": BUCKET, "arn": f"arn:aws:s3:::{BUCKET}"})
    record["s3"]["object"].update({"key": key, "size": head["ContentLength"], "eTag": head["ETag"].strip('"')})

    class LambdaContext:
        function_name = "backfill-trigger"
        function_version = "$LATEST"
        memory_limit_in_mb = 512
        invoked_function_arn = f"arn:aws:lambda:{REGION}:123456789012:function:backfill-trigger"
        aws_request_id = "demo-request"
        log_group_name = "/aws/lambda/backfill-trigger"
        log_stream_name = "demo"

        def get_remaining_time_in_millis(self) -> int:
            return 120_000

    trigger_handler.reset()
    return trigger_handler.handler(event, LambdaContext())


def wait_for_dag_run(airflow_url: str, airflow: Any, run_id: str) -> str:
    if airflow is None:
        from backfill_local.airflow_local import LocalAirflow

        airflow = LocalAirflow(
            dags_folder=REPO / "dags",
            external_url=airflow_url,
            user=os.environ.get("DEMO_AIRFLOW_USER", "admin"),
            password=os.environ.get("DEMO_AIRFLOW_PASSWORD", "admin"),
        )
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
        time.sleep(3)


def print_timeline(timeline: list[tuple[str, str]], record: Any, airflow: Any, run_id: str) -> None:
    stage("timeline")
    events = list(timeline)
    names = {"RECEIVED": "received", "PLANNED": "validated and planned", "TRIGGERED": "triggered"}
    for entry in record.history:
        events.append((entry["at"], f"{names.get(entry['state'], entry['state'].lower())}: {entry.get('detail') or ''}"))
    if airflow is not None:
        for ti in airflow.task_instances("backfill", run_id):
            if ti["state"] == "skipped" or not ti.get("start_date"):
                continue
            label = ti.get("rendered_map_index") or ""
            events.append((ti["start_date"], f"step {ti['task_id']} {label} started".replace("  ", " ")))
            events.append((ti["end_date"] or ti["start_date"], f"step {ti['task_id']} {label} {ti['state']}".replace("  ", " ")))
    for at, what in sorted(events, key=lambda item: _instant(item[0])):
        print(f"   {at[:19]}  {what}")


def _instant(text: str) -> datetime:
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=UTC)


if __name__ == "__main__":
    raise SystemExit(main())
