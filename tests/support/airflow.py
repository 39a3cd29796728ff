"""Helpers for the tests that run a real Airflow 3 (tests/airflow/, tests/faults/, the trigger's
real-Airflow test): the local AWS (one moto server) and receivers beside it, the `[backfill]`
configuration, an `AirflowStack` that several test modules share, backfills stored as the
trigger leaves them, and what to show when a run ends unexpectedly.

A stack is one LocalAirflow with its moto server, Slack and PagerDuty receivers, warehouse and
outputs directories. `StackKeeper` boots one on first use and keeps it for the tests that
follow, until a test that does not use it comes next (`tests/conftest.py`): the modules that
share it form one xdist unit, so a worker boots one Airflow for all of them. moto's backends
are process-wide and `mock_aws` resets them, so a stack reseeds its bucket, table and secrets
when it is handed out again after such a reset."""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import boto3

from backfill_local.airflow_local import PARSE_ONCE_SETTINGS, LocalAirflow
from backfill_orchestrator.config import backfill_id, parse_config
from backfill_orchestrator.contracts import ResultFile, RunConf
from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.documents import s3_version_uri
from backfill_orchestrator.status import BackfillState, StatusStore
from tests.support.aws import create_table

REPO = Path(__file__).resolve().parents[2]
DAGS = REPO / "dags"
TEST_DAGS = REPO / "tests" / "airflow" / "dags"
FAKE_SPARK_JOB = REPO / "tests" / "airflow" / "fake_spark_job.py"
BUCKET = "backfill-test"
TABLE = "backfill-status-test"
SLACK_TOKEN = "xoxb-airflow-test"
PD_KEY = "R0UT1NGKEY0F32CHARACTERSAIRFLOW0"
AWS_ENV = {
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
}
RUN_TIMEOUT = 420  # one backfill run of the tests' small plans, on a loaded machine


def dags_folder(tmp: Path) -> Path:
    """The repository's DAGs folder plus the test DAGs, as Airflow would get it deployed."""
    folder = tmp / "dags"
    shutil.copytree(DAGS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    for dag_file in TEST_DAGS.glob("*.py"):
        shutil.copy(dag_file, folder / dag_file.name)
    return folder


# -- local AWS and receivers -----------------------------------------------------------------
@dataclass
class AwsLocal:
    endpoint: str

    def client(self, service: str) -> Any:
        return boto3.client(service, endpoint_url=self.endpoint, **_boto_kwargs())

    def seed(self) -> None:
        """The bucket (versioned, as template.yaml's config bucket: the DAG reads configs by
        their uploaded version), the status table and the secrets, unless there already."""
        s3 = self.client("s3")
        if not any(b["Name"] == BUCKET for b in s3.list_buckets().get("Buckets", [])):
            s3.create_bucket(Bucket=BUCKET)
            s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
        dynamodb = self.client("dynamodb")
        if TABLE not in dynamodb.list_tables()["TableNames"]:
            create_table(dynamodb, "StatusTable", table_name=TABLE)
        secrets = self.client("secretsmanager")
        known = {s["Name"] for s in secrets.list_secrets().get("SecretList", [])}
        for name, value in (
            ("backfill/slack", {"bot_token": SLACK_TOKEN}),
            ("backfill/pagerduty", {"routing_key": PD_KEY}),
        ):
            if name not in known:
                secrets.create_secret(Name=name, SecretString=json.dumps(value))


def _boto_kwargs() -> dict[str, str]:
    return {
        "region_name": AWS_ENV["AWS_DEFAULT_REGION"],
        "aws_access_key_id": AWS_ENV["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": AWS_ENV["AWS_SECRET_ACCESS_KEY"],
    }


@contextmanager
def local_aws() -> Iterator[AwsLocal]:
    """A moto server on 127.0.0.1, seeded; its state is reset when it stops (moto's backends
    are process-wide: the next server in this process would find this one's table)."""
    import requests
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    local = AwsLocal(endpoint=f"http://{host}:{port}")
    try:
        local.seed()
        yield local
    finally:
        requests.post(f"{local.endpoint}/moto-api/reset", timeout=10)
        server.stop()


@contextmanager
def local_receivers() -> Iterator[tuple[Any, Any]]:
    from backfill_local.receivers import PagerDutyReceiver, SlackReceiver

    with SlackReceiver(token=SLACK_TOKEN) as slack, PagerDutyReceiver(routing_key=PD_KEY) as pagerduty:
        yield slack, pagerduty


def airflow_extra_env(
    *, aws: AwsLocal, slack: Any, pagerduty: Any, warehouse: Path, outputs: Path
) -> dict[str, str]:
    return {
        # every DAG file is in place before the boot: each is parsed once, not every 10 s
        **PARSE_ONCE_SETTINGS,
        **AWS_ENV,
        "AWS_ENDPOINT_URL": aws.endpoint,
        "AIRFLOW__BACKFILL__SPARK_COMMAND": f"{sys.executable} {FAKE_SPARK_JOB}",
        "AIRFLOW__BACKFILL__WAREHOUSE_URI": str(warehouse),
        "AIRFLOW__BACKFILL__MAX_ROUNDS": "3",
        "AIRFLOW__BACKFILL__TASK_RETRIES": "1",
        "AIRFLOW__BACKFILL__RETRY_DELAY_SECONDS": "1",
        "AIRFLOW__BACKFILL__MAX_PARALLEL_DAG_RUNS": "2",
        "AIRFLOW__BACKFILL__RERUN_POKE_SECONDS": "2",
        "AIRFLOW__BACKFILL__STATUS_TABLE": TABLE,
        "AIRFLOW__BACKFILL__SLACK_SECRET_ID": "backfill/slack",
        "AIRFLOW__BACKFILL__SLACK_API_URL": slack.api_url,
        "AIRFLOW__BACKFILL__SLACK_CHANNEL": "#backfills",
        "AIRFLOW__BACKFILL__PAGERDUTY_SECRET_ID": "backfill/pagerduty",
        "AIRFLOW__BACKFILL__PAGERDUTY_EVENTS_URL": pagerduty.events_url,
        "BACKFILL_SAMPLE_OUTPUT_DIR": str(outputs),
    }


SPARK_DISPATCHER = '''\
"""A `[backfill] spark_command` for tests: the real job for plans of the `large` profile, the
real job with etl_orders slowed (to stop it mid-write) for `small`, the fake job otherwise.
Records (backfill id, pid, profile) in {pids}; exec keeps the pid."""
import json, os, sys
from backfill_orchestrator.documents import read_text

arguments = sys.argv[1:]
plan = json.loads(read_text(arguments[arguments.index("--plan") + 1]))
with open({pids!r}, "a") as out:
    out.write(json.dumps({{"backfill_id": plan["backfill_id"], "pid": os.getpid(), "profile": plan.get("spark_profile")}}) + "\\n")
profile = plan.get("spark_profile")
if profile in ("small", "large"):
    os.environ["PYTHONPATH"] = os.pathsep.join([{repo!r}, {layer!r}, os.environ.get("PYTHONPATH", "")])
    extra = ["--registry", "tests.spark.slow_registry:SLOW"] if profile == "small" else []
    os.execv(sys.executable, [sys.executable, "-m", "spark_jobs.engine.backfill_job", *arguments, *extra])
os.execv(sys.executable, [sys.executable, {fake!r}, *arguments])
'''


def spark_dispatcher(path: Path, *, pids: Path) -> Path:
    """Write SPARK_DISPATCHER to `path` (its Spark jobs' pids go to `pids`); returns `path`."""
    path.write_text(
        SPARK_DISPATCHER.format(
            pids=str(pids), repo=str(REPO), layer=str(REPO / "layers" / "shared"), fake=str(FAKE_SPARK_JOB)
        )
    )
    return path


def spark_pid(pids: Path, backfill_id: str) -> int | None:
    """The pid of the last Spark job the dispatcher started for `backfill_id`."""
    if not pids.exists():
        return None
    entries = [json.loads(line) for line in pids.read_text().splitlines()]
    return next((e["pid"] for e in reversed(entries) if e["backfill_id"] == backfill_id), None)


# -- a stack several modules share -------------------------------------------------------------
@dataclass
class AirflowStack:
    """A real Airflow with what its DAGs talk to; `root` holds its home, DAGs and data."""

    airflow: LocalAirflow
    aws: AwsLocal
    slack: Any
    pagerduty: Any
    root: Path
    warehouse: Path
    outputs: Path
    extra_env: dict[str, str]

    def pages(self, backfill_id: str) -> list[str]:
        """The PagerDuty event actions the receiver got for a backfill, in order."""
        return self.pagerduty.actions(backfill_id)

    def posts(self, backfill_id: str) -> list[str]:
        """The texts of the Slack messages the receiver got that name a backfill, in order."""
        return [m["text"] for m in self.slack.messages if backfill_id in m["text"]]


StackOptions = Callable[[AwsLocal, Path], Mapping[str, str]]  # (aws, root) -> more environment


@dataclass
class StackKeeper:
    """Boots one AirflowStack on first use and hands it out until `stop()`: `options` adds
    the stack's own environment to `airflow_extra_env`; `wait_for` are the DAG ids to wait for."""

    name: str
    options: StackOptions = field(default=lambda aws, root: {})
    wait_for: tuple[str, ...] = ("backfill",)
    parallelism: int = 3
    _stack: AirflowStack | None = field(default=None, init=False)
    _exit: ExitStack | None = field(default=None, init=False)

    def get(self, base: Path) -> AirflowStack:
        """The stack, booted under `base` if it is not running."""
        if self._stack is not None:
            self._stack.aws.seed()  # a `mock_aws` test in this process may have reset moto
            return self._stack
        with ExitStack() as stack:
            root = base / self.name
            root.mkdir(parents=True, exist_ok=True)
            aws = stack.enter_context(local_aws())
            slack, pagerduty = stack.enter_context(local_receivers())
            warehouse, outputs = root / "warehouse", root / "outputs"
            warehouse.mkdir(exist_ok=True)
            outputs.mkdir(exist_ok=True)
            extra = {
                **airflow_extra_env(
                    aws=aws, slack=slack, pagerduty=pagerduty, warehouse=warehouse, outputs=outputs
                ),
                **self.options(aws, root),
            }
            airflow = stack.enter_context(
                LocalAirflow(
                    dags_folder=dags_folder(root),
                    home=root / "home",
                    parallelism=self.parallelism,
                    extra_env=extra,
                )
            )
            airflow.wait_for_dags(self.wait_for)
            self._stack = AirflowStack(
                airflow=airflow,
                aws=aws,
                slack=slack,
                pagerduty=pagerduty,
                root=root,
                warehouse=warehouse,
                outputs=outputs,
                extra_env=extra,
            )
            self._exit = stack.pop_all()
        return self._stack

    def stop(self) -> None:
        exit_stack, self._exit, self._stack = self._exit, None, None
        if exit_stack is not None:
            exit_stack.close()


def stop_unused_stacks(keepers: Mapping[str, StackKeeper], item: Any, nextitem: Any | None) -> None:
    """After `item`'s teardown: stop each kept stack (by its fixture's name) that `item` used
    and `nextitem` does not (call from a `pytest_runtest_teardown` hook wrapper)."""
    for fixture, keeper in keepers.items():
        if fixture in item.fixturenames and (nextitem is None or fixture not in nextitem.fixturenames):
            keeper.stop()


# -- plans -------------------------------------------------------------------------------------
def step(
    step_id: str, kind: str, *, dates: list[str], upstream: list[str] | None = None, dag_id: str | None = None
) -> dict[str, Any]:
    return {
        "id": step_id,
        "job": {"namespace": "food_delivery", "name": step_id},
        "dag_id": dag_id or (step_id if kind == "airflow_dag" else "food_delivery_etl"),
        "kind": kind,
        "transform": step_id if kind == "spark" else None,
        "dates": dates,
        "reason": "downstream" if upstream else "root",
        "upstream": upstream or [],
    }


@dataclass
class StoredBackfill:
    backfill_id: str
    conf: dict[str, Any]
    plan: Plan


def store_backfill(
    aws: AwsLocal,
    *,
    name: str,
    waves: list[list[dict[str, Any]]],
    days: list[str],
    record: bool = True,
    spark_profile: str | None = None,
) -> StoredBackfill:
    """Put a config and its plan in S3 and the status record in TRIGGERED, as the trigger
    function leaves them before starting the DAG."""
    config_doc: dict[str, Any] = {
        "version": 1,
        "name": name,
        "owner": "jane.doe@example.com",
        "mode": "batch",
        "jobs": [{"namespace": "food_delivery", "name": waves[0][0]["id"]}],
        "dates": days,
        "notify": {"slack_channel": "#backfills", "pagerduty": True},
    }
    config = parse_config(config_doc, source="<test>")
    bid = backfill_id(config)
    document: dict[str, Any] = {
        "backfill_id": bid,
        "name": name,
        "owner": config.owner,
        "created_at": datetime.now(UTC).isoformat(),
        "roots": [config.jobs[0].model_dump()],
        "dates": days,
        "waves": [{"index": i, "steps": steps} for i, steps in enumerate(waves)],
    }
    if spark_profile:
        document["spark_profile"] = spark_profile
    plan = Plan.model_validate(document)
    s3 = aws.client("s3")
    config_key, plan_key = f"incoming/{bid}.json", f"backfills/{bid}/plan.json"
    version = s3.put_object(Bucket=BUCKET, Key=config_key, Body=json.dumps(config_doc).encode())["VersionId"]
    s3.put_object(Bucket=BUCKET, Key=plan_key, Body=plan.to_json().encode())
    config_uri = s3_version_uri(BUCKET, config_key, version)
    if record:
        store = status_store(aws)
        store.create(bid, attributes={"name": name, "owner": config.owner, "mode": "batch"})
        store.transition(bid, BackfillState.PLANNED, detail="test plan")
        store.transition(
            bid,
            BackfillState.TRIGGERED,
            detail="test trigger",
            attributes={
                "config_uri": config_uri,
                "plan_uri": f"s3://{BUCKET}/{plan_key}",
                "dag_id": "backfill",
                "dag_run_id": bid,
            },
        )
    result_key = f"results/{bid}.json.result.json"
    result = ResultFile(
        source=f"s3://{BUCKET}/{config_key}",
        outcome="accepted",
        backfill_id=bid,
        state=BackfillState.TRIGGERED,
        status_id=bid,
        status_command=f"backfill status {bid}",
        written_at=datetime.now(UTC),
    )
    s3.put_object(Bucket=BUCKET, Key=result_key, Body=result.to_json().encode())
    conf = RunConf(
        backfill_id=bid,
        config_uri=config_uri,
        plan_uri=f"s3://{BUCKET}/{plan_key}",
        result_uri=f"s3://{BUCKET}/{result_key}",
    ).to_conf()
    return StoredBackfill(bid, conf, plan)


def status_store(aws: AwsLocal) -> StatusStore:
    return StatusStore(table_name=TABLE, dynamodb_client=aws.client("dynamodb"))


def read_s3_json(aws: AwsLocal, uri: str) -> Any:
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return json.loads(aws.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read())


def day(text: str) -> date:
    return date.fromisoformat(text)


# -- runs --------------------------------------------------------------------------------------
def run_backfill(
    airflow: LocalAirflow, conf: dict[str, Any], run_id: str, *, timeout: float = RUN_TIMEOUT
) -> str:
    airflow.trigger("backfill", run_id=run_id, conf=conf)
    return airflow.wait_for_run("backfill", run_id, timeout=timeout)


def task_states(airflow: LocalAirflow, run_id: str, *, dag_id: str = "backfill") -> dict[str, str]:
    """`task_id` (or `task_id[map index]`) -> state, for one run."""
    states = {}
    for ti in airflow.task_instances(dag_id, run_id):
        key = ti["task_id"] if ti["map_index"] < 0 else f"{ti['task_id']}[{ti['map_index']}]"
        states[key] = ti["state"]
    return states


def explain(airflow: LocalAirflow, run_id: str) -> str:
    """On an unexpected outcome: every task's state and the failed tasks' logs."""
    lines = [json.dumps(task_states(airflow, run_id), indent=1)]
    for ti in airflow.task_instances("backfill", run_id):
        if ti["state"] in ("failed", "up_for_retry"):
            lines.append(f"--- {ti['task_id']} [{ti['map_index']}]")
            lines.append(
                airflow.task_log(
                    "backfill",
                    run_id,
                    ti["task_id"],
                    map_index=ti["map_index"],
                    try_number=max(1, ti["try_number"]),
                )[-3000:]
            )
    return "\n".join(lines)


def wait_until(
    check: Callable[[], Any], *, timeout: float, what: Callable[[], str] | str, poll: float = 0.5
) -> Any:
    """`check()`'s first truthy value; AssertionError with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached in {timeout:.0f} s: {what() if callable(what) else what}")
        time.sleep(poll)


def dag_run_rows(airflow: LocalAirflow, dag_id: str) -> dict[str, dict[str, Any]]:
    """run id -> the metadata database's own columns of each run of `dag_id` (logical date,
    state, `clear_number`: how many times it was cleared, which the REST API does not show).
    Read-only, straight from the SQLite file, so it works while the API server is down."""
    assert airflow.home is not None
    with sqlite3.connect(f"file:{airflow.home / 'airflow.db'}?mode=ro", uri=True, timeout=30) as db:
        db.row_factory = sqlite3.Row
        rows = db.execute(
            "SELECT run_id, logical_date, state, clear_number FROM dag_run WHERE dag_id = ?", (dag_id,)
        ).fetchall()
    return {row["run_id"]: dict(row) for row in rows}


def gated_starts(stack: AirflowStack, days: list[str], *, dag_id: str = "gated_report") -> int:
    """How many times the task of a gated test DAG (tests/airflow/dags/gated_jobs.py) started
    for these days, in all runs."""
    folder = stack.outputs / dag_id
    return sum(
        len((folder / f"{day}.pid").read_text().split()) for day in days if (folder / f"{day}.pid").exists()
    )
