"""`backfill local up` / `down`: the stand-ins of a deployment in one background process, to try
the CLI and the client without AWS, Airflow or Spark (`make demo` runs the real Airflow and Spark).

`up` starts `python -m backfill_local.stack serve --dir DIR`, waits until it is ready, and
prints the environment to export (also written to DIR/env.sh); `down` stops it. The process runs:

- moto as a server on 127.0.0.1 (S3, DynamoDB, SQS, Secrets Manager, IAM, STS), with the
  template's tables, the config bucket, the sample job catalog and a policy; it remembers which
  access key wrote each object, so each upload's S3 event names its uploader as S3's does
  (`userIdentity.principalId`, which moto leaves out);
- two people, `jane` and `ana`, as sessions of the IAM role `data-eng` (profiles in
  DIR/credentials): the policy lets both submit, approve, cancel and retry the food delivery
  jobs, and a plan over APPROVAL_PARTITIONS partitions waits for the other one's approval;
- the Marquez double seeded with the food delivery sample, the Airflow 3 double (runs are
  accepted and stay queued: nothing runs them), Slack and PagerDuty receivers (DIR/slack.log);
- the S3 event pump: the bucket's notifications (incoming/, control/) reach the trigger
  handler through a queue, as in a deployment."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from backfill_orchestrator.errors import ServiceError

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DIR = ".backfill-local"
REGION = "us-east-1"
ROLE = "data-eng"
PEOPLE = ("jane", "ana")
APPROVAL_PARTITIONS = 100  # a plan rewriting more waits for a second person (approval.max_partitions)
READY_TIMEOUT = 300.0  # seconds `up` waits for the stand-ins (a loaded machine imports slowly)
SESSION_SECONDS = 12 * 3600  # the people's credentials last this long
MAX_REMEMBERED_UPLOADS = 10_000
# Which access key signed a request: `AWS4-HMAC-SHA256 Credential=<key>/<date>/<region>/<service>/...`
_CREDENTIAL = re.compile(r"Credential=([A-Z0-9]+)/")


class StackError(ServiceError, RuntimeError):
    """The stand-ins could not be started or stopped; says why and where the log is."""


# -- moto, remembering who uploaded what ---------------------------------------------------------
class UploaderMotoServer:
    """moto's server app on 127.0.0.1, remembering the access key that wrote each object."""

    def __init__(self) -> None:
        self._uploaders: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._lock = threading.Lock()
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def start(self) -> str:
        from moto.moto_server.werkzeug_app import (
            DomainDispatcherApplication,
            MotoRequestHandler,
            create_backend_app,
        )
        from werkzeug.serving import make_server

        moto_app = DomainDispatcherApplication(create_backend_app)

        def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
            if environ.get("REQUEST_METHOD") in ("PUT", "POST"):
                self._remember(environ)
            return moto_app(environ, start_response)

        self._server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=MotoRequestHandler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="moto", daemon=True)
        self._thread.start()
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _remember(self, environ: dict[str, Any]) -> None:
        found = _CREDENTIAL.search(environ.get("HTTP_AUTHORIZATION", ""))
        bucket, _, key = unquote(environ.get("PATH_INFO", "")).lstrip("/").partition("/")
        if found and bucket and key:
            with self._lock:
                self._uploaders[(bucket, key)] = found.group(1)
                while len(self._uploaders) > MAX_REMEMBERED_UPLOADS:
                    self._uploaders.popitem(last=False)

    def uploader(self, bucket: str, key: str) -> str | None:
        """The access key that wrote the object last, if it was written through this server."""
        with self._lock:
            return self._uploaders.get((bucket, key))


@dataclass
class Uploaders:
    """`S3EventPump.principal_of`: an object's uploader as S3 names it, `AWS:<UserId>` of the
    access key that wrote it (STS answers who holds a key; moto does not check secrets)."""

    server: UploaderMotoServer
    endpoint: str

    def __post_init__(self) -> None:
        self._ids: dict[str, str] = {}

    def __call__(self, bucket: str, key: str) -> str | None:
        access_key = self.server.uploader(bucket, key)
        if access_key is None:
            return None
        if access_key not in self._ids:
            import boto3

            sts = boto3.client(
                "sts",
                endpoint_url=self.endpoint,
                region_name=REGION,
                aws_access_key_id=access_key,
                aws_secret_access_key="unchecked",
            )
            self._ids[access_key] = f"AWS:{sts.get_caller_identity()['UserId']}"
        return self._ids[access_key]


# -- the process ---------------------------------------------------------------------------------
def policy_document() -> str:
    people = {name: {"aws": [f"role/{ROLE}/{name}"]} for name in PEOPLE}
    return json.dumps(
        {
            "version": 1,
            "people": people,
            "grants": [
                {
                    "name": ROLE,
                    "members": list(PEOPLE),
                    "permissions": ["submit", "approve", "cancel", "retry"],
                    "jobs": ["food_delivery/*"],
                }
            ],
            "approval": {"max_partitions": APPROVAL_PARTITIONS, "expires_after_hours": 24},
        },
        indent=2,
    )


def people_credentials(endpoint: str) -> dict[str, dict[str, str]]:
    """Sessions of the role `data-eng` for each person (what AWS SSO hands out)."""
    import boto3

    session = boto3.session.Session(region_name=REGION)
    iam = session.client("iam", endpoint_url=endpoint)
    trust = json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}],
        }
    )
    role = iam.create_role(RoleName=ROLE, AssumeRolePolicyDocument=trust, MaxSessionDuration=SESSION_SECONDS)
    sts = session.client("sts", endpoint_url=endpoint)
    found = {}
    for name in PEOPLE:
        credentials = sts.assume_role(
            RoleArn=role["Role"]["Arn"], RoleSessionName=name, DurationSeconds=SESSION_SECONDS
        )["Credentials"]
        found[name] = {
            "aws_access_key_id": credentials["AccessKeyId"],
            "aws_secret_access_key": credentials["SecretAccessKey"],
            "aws_session_token": credentials["SessionToken"],
        }
    return found


def write_credentials(path: Path, people: dict[str, dict[str, str]]) -> None:
    lines = []
    for name, values in people.items():
        lines.append(f"[{name}]")
        lines += [f"{key} = {value}" for key, value in values.items()]
        lines.append("")
    path.write_text("\n".join(lines))
    path.chmod(0o600)


def user_environment(*, endpoint: str, marquez_url: str, directory: Path) -> dict[str, str]:
    """What a user exports to point the CLI and the client at the stand-ins, as jane."""
    from backfill_local.demo import BUCKET, TABLE

    return {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_SHARED_CREDENTIALS_FILE": str(directory / "credentials"),
        "AWS_PROFILE": PEOPLE[0],
        "CONFIG_BUCKET": BUCKET,
        "STATUS_TABLE": TABLE,
        "MARQUEZ_URL": marquez_url,
        "BACKFILL_JOB_CATALOG": str(REPO / "examples" / "catalog.yaml"),
    }


def exports(environment: dict[str, str]) -> str:
    """Shell lines: the variables, and the static keys unset so that the profile is used."""
    lines = ["unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN"]
    lines += [f"export {name}={shlex.quote(value)}" for name, value in environment.items()]
    return "\n".join(lines) + "\n"


def serve(directory: Path) -> int:
    """Run every stand-in until SIGTERM; DIR/env.sh appears once they are all up."""
    signal.signal(signal.SIGTERM, _stop)
    directory.mkdir(parents=True, exist_ok=True)
    for stale in ("env.sh", "env.json"):
        (directory / stale).unlink(missing_ok=True)
    with ExitStack() as stack:
        try:
            environment = start(stack, directory)
        except KeyboardInterrupt:
            return 0
        (directory / "env.json").write_text(json.dumps(environment, indent=2))
        (directory / "env.sh").write_text(exports(environment))
        print(f"ready: {json.dumps(environment)}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            print("stopping", flush=True)
    return 0


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def start(stack: ExitStack, directory: Path) -> dict[str, str]:
    import logging
    import warnings

    import boto3

    from backfill_local.airflow_double import AirflowDouble
    from backfill_local.demo import BUCKET, prepare_aws, trigger_settings
    from backfill_local.marquez_double import MarquezDouble
    from backfill_local.receivers import PagerDutyReceiver, SlackReceiver
    from backfill_local.s3_events import S3EventPump

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    moto = UploaderMotoServer()
    endpoint = moto.start()
    stack.callback(moto.stop)
    # The stand-ins' own identity (the trigger's role, in a deployment).
    os.environ.update(
        {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ACCESS_KEY_ID": "local",
            "AWS_SECRET_ACCESS_KEY": "local",
        }
    )
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SHARED_CREDENTIALS_FILE"):
        os.environ.pop(name, None)
    secret_arns = prepare_aws(endpoint)
    s3 = boto3.client("s3")
    s3.put_object(Bucket=BUCKET, Key="policy/policy.yaml", Body=policy_document().encode())
    write_credentials(directory / "credentials", people_credentials(endpoint))

    marquez = stack.enter_context(MarquezDouble(seed="food_delivery"))
    airflow = AirflowDouble(dag_ids={"backfill", "email_discounts", "orders_popular_day_of_week"})
    airflow.start()
    stack.callback(airflow.stop)
    log = (directory / "slack.log").open("a")
    stack.callback(log.close)

    def record(kind: str, item: dict[str, Any]) -> None:
        log.write(json.dumps({"kind": kind, **item}, default=str)[:4000] + "\n")
        log.flush()

    slack = stack.enter_context(SlackReceiver(token="xoxb-demo-token", on_record=record))
    pagerduty = stack.enter_context(
        PagerDutyReceiver(routing_key="R0UT1NGKEY0F32CHARACTERSDEMO0000", on_record=record)
    )
    secrets = boto3.client("secretsmanager")
    secrets.put_secret_value(
        SecretId=secret_arns["backfill/airflow"],
        SecretString=json.dumps({"username": airflow.username, "password": airflow.password}),
    )
    os.environ.update(
        trigger_settings(
            airflow_url=airflow.url,
            marquez_url=marquez.url,
            secret_arns=secret_arns,
            slack=slack,
            pagerduty=pagerduty,
            lineage_transport=json.dumps({"type": "console"}),
        )
    )
    os.environ.update(
        {
            "POLICY_URI": f"s3://{BUCKET}/policy/policy.yaml",
            "POWERTOOLS_METRICS_NAMESPACE": "BackfillOrchestratorLocal",
            "OPENLINEAGE_TRANSPORT": json.dumps({"type": "console"}),
        }
    )
    os.environ.pop("_X_AMZN_TRACE_ID", None)

    from backfill_orchestrator.trigger import handler as trigger_handler

    warnings.filterwarnings("ignore", message="No application metrics to publish")
    stack.enter_context(trigger_handler.trigger_wiring())
    stack.enter_context(
        S3EventPump(
            s3_client=s3,
            sqs_client=boto3.client("sqs"),
            bucket=BUCKET,
            prefixes=["incoming/", "control/"],
            handler=trigger_handler.handler,
            principal_of=Uploaders(moto, endpoint),
            on_delivery=lambda delivery: print(f"trigger: {delivery.key}: {delivery.answer}", flush=True),
        )
    )
    return user_environment(endpoint=endpoint, marquez_url=marquez.url, directory=directory)


# -- up and down ---------------------------------------------------------------------------------
def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def running_pid(directory: Path) -> int | None:
    try:
        pid = int((directory / "stack.pid").read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    return pid if _alive(pid) else None


def up(directory: Path, *, timeout: float = READY_TIMEOUT) -> dict[str, str]:
    """Start the stand-ins (or find them running) and return the environment to export."""
    directory.mkdir(parents=True, exist_ok=True)
    environment_file = directory / "env.json"
    if running_pid(directory) is not None and environment_file.exists():
        return json.loads(environment_file.read_text())
    environment_file.unlink(missing_ok=True)
    log = directory / "stack.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "backfill_local.stack", "serve", "--dir", str(directory)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # outlives this command; `down` stops it
            cwd=directory.parent,
        )
    (directory / "stack.pid").write_text(f"{process.pid}\n")
    deadline = time.monotonic() + timeout
    while not environment_file.exists():
        if process.poll() is not None:
            raise StackError(
                f"the stand-ins stopped while starting (exit {process.returncode}):\n{_tail(log)}"
            )
        if time.monotonic() > deadline:
            down(directory)
            raise StackError(f"the stand-ins were not ready after {timeout:.0f} s; see {log}:\n{_tail(log)}")
        time.sleep(0.2)
    return json.loads(environment_file.read_text())


def down(directory: Path, *, timeout: float = 30.0) -> bool:
    """Stop the stand-ins; False when none were running."""
    pid = running_pid(directory)
    if pid is None:
        _forget(directory)
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _alive(pid) and time.monotonic() < deadline:
        _reap(pid)
        time.sleep(0.1)
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)
        _reap(pid)
    _forget(directory)
    return True


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)  # a child of this process (tests): collect it
    except ChildProcessError:
        pass


def _forget(directory: Path) -> None:
    for name in ("stack.pid", "env.sh", "env.json"):
        (directory / name).unlink(missing_ok=True)


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m backfill_local.stack", description=__doc__.splitlines()[0]
    )
    parser.add_argument("action", choices=("up", "down", "serve"))
    parser.add_argument("--dir", default=DEFAULT_DIR, help=f"where its files go (default {DEFAULT_DIR})")
    args = parser.parse_args(argv)
    directory = Path(args.dir).resolve()
    if args.action == "serve":
        return serve(directory)
    if args.action == "up":
        sys.stdout.write(exports(up(directory)))
        return 0
    return 0 if down(directory) else 1


if __name__ == "__main__":
    raise SystemExit(main())
