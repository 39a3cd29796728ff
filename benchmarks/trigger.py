"""Trigger benchmark: the warm Lambda handler's time per config, and the handler module's
cold import time.

Warm: the real handler (functions/trigger/app.py) on S3 events for distinct valid configs,
everything on 127.0.0.1 (a moto server each for S3, DynamoDB and Secrets Manager, named by
the per-service AWS_ENDPOINT_URL_<SERVICE> variables boto3 reads, the
Marquez double with the food delivery sample, the strict Airflow double, the Slack and
PagerDuty receivers). Each config goes the whole way: read, validate, claim, plan (Marquez over
HTTP), store config + plan, trigger (Airflow over HTTP), record, Slack, result file. The
baseline beside it is the least any trigger must do per config against the same doubles:
S3 GET of the config, one DynamoDB conditional put, the Airflow trigger POST and one S3 PUT,
with plain boto3/requests; `ratio` = ours / baseline. The two alternate, one config each, so
both see the machine alike whatever else it runs meanwhile. A duplicate delivery is timed too.

Servers: each AWS service's moto server runs in a process of its own and the doubles in
another (`server_side`), as a Lambda shares no interpreter (no GIL) with S3, DynamoDB, Marquez
or Airflow, nor do those with each other: their work does not take the handler's turns, and
what the handler sends side by side (the claim and the lineage query, TRIGGERED and the result
file) overlaps as it does there. (One moto server for S3 and DynamoDB would answer TRIGGERED
and the result file one after the other, on its one interpreter.) Ours and the baseline run
against the same servers. `--servers-inline` runs them in
the benchmark's process instead, sharing its GIL, for comparison (docs/performance.md).
`cpu_ms_p50` and `baseline_cpu_ms_p50` (the `more:` line) are the benchmark process's CPU
time per config: with the servers apart, the handler's own (its threads included) and the
bare path's client.

Round trips: every AWS call attempt and HTTP request the handler makes per config, counted on
the wire (`RoundTrips`); the deployment is the one above (Slack with a bot token, PagerDuty,
a job catalog; no claims table, no policy, no OpenLineage events). `round_trips_cold` and
`round_trips` are the round trips a config waits for one after another (calls sent side by
side count once: `waits`, with every answer held LATENCY), for a new container's first config
(it reads the secrets, the catalog, Airflow's token and the jobs' run history) and for a
second config of the same jobs (warm: those are kept); `calls_cold` and `calls` count the
calls themselves (`calls` is the median over the timed configs).

Cold: `import app` in fresh interpreters (median of COLD_RUNS) with tracing off, beside
`import boto3` alone (what any Python Lambda that talks to AWS pays): the import's CPU time
(`cold_import_ms`; on a machine shared with other work the wall time says more about the
neighbours), bytecode cached as in a pip-built layer; and once more with every module
compiled from source. The last line is what tooling reads:

    BENCH trigger warm_ms_p50=... baseline_ms_p50=... round_trips=... cold_import_ms=... ratio=... round_trips_cold=... calls=... calls_cold=...

    .venv/bin/python benchmarks/trigger.py [--servers-inline]
"""

from __future__ import annotations

import collections
import contextlib
import http.client
import io
import json
import logging
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
CONFIGS = 40
COLD_RUNS = 7
LATENCY = 0.25  # seconds per answer while waits are counted: far above starting a thread
BUCKET = "bench-configs"
TABLE = "bench-status"
SLACK_TOKEN = "xoxb-bench"


@dataclass(frozen=True)
class Call:
    name: str  # e.g. s3.GetObject, "marquez GET /api/v1/lineage"
    sent: float  # time.monotonic() when it was sent


class RoundTrips:
    """Counts the round trips of the code under test, per kind: every AWS call attempt with
    botocore's `before-send` hook (retries included; registered first, so moto's in-process
    stub cannot answer before it), every other HTTP request at `http.client`'s `putrequest`,
    where requests/urllib3 (Marquez, Airflow, PagerDuty) and slack_sdk's urllib all end up.
    Requests to `aws_ports` (a moto server) are left to the botocore hook, so nothing counts
    twice. `names` labels the other servers by port.

    With a `latency`, every call waits that long before it is sent, as if each answer took
    that long to come back: calls sent side by side overlap, and `waits` tells how many round
    trips the code waited for one after another."""

    def __init__(
        self,
        *,
        aws_ports: set[int] | None = None,
        names: dict[int, str] | None = None,
        latency: float = 0.0,
    ):
        self.aws_ports = aws_ports or set()
        self.names = names or {}
        self.latency = latency
        self.calls: list[Call] = []
        self._lock = threading.Lock()
        self._original = http.client.HTTPConnection.putrequest

    def watch_events(self, events: object) -> None:
        """A botocore event emitter: a client's `meta.events`, or a session's (`boto3.DEFAULT_SESSION.events`,
        for clients made after this call)."""
        events.register_first("before-send", self._aws, unique_id="bench-round-trips")  # type: ignore[attr-defined]

    def __enter__(self) -> RoundTrips:
        counter, original = self, self._original

        def putrequest(
            connection: http.client.HTTPConnection, method: str, url: str, *args: object, **kwargs: object
        ) -> None:
            if connection.port not in counter.aws_ports:
                counter._sent(
                    f"{counter.names.get(connection.port, connection.port)} {method} {url.split('?')[0]}"
                )
            return original(connection, method, url, *args, **kwargs)

        http.client.HTTPConnection.putrequest = putrequest  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        http.client.HTTPConnection.putrequest = self._original  # type: ignore[method-assign]

    def take(self) -> list[str]:
        """The calls counted since the last take, in the order they were sent."""
        return [call.name for call in self.take_calls()]

    def take_calls(self) -> list[Call]:
        with self._lock:
            calls, self.calls = self.calls, []
        return sorted(calls, key=lambda call: call.sent)

    def _sent(self, name: str) -> None:
        with self._lock:
            self.calls.append(Call(name, time.monotonic()))
        if self.latency:
            time.sleep(self.latency)

    def _aws(self, event_name: str, **_: object) -> None:
        self._sent(event_name.removeprefix("before-send."))  # e.g. s3.GetObject
        return None


def waits(calls: list[Call], latency: float) -> int:
    """The round trips waited for one after another: the longest chain of calls each sent
    after the one before it had its answer (`latency` after it was sent). Calls sent side by
    side overlap, so they count once; `latency` must be far longer than starting a thread
    takes. The code's own work between two calls only delays the later one."""
    ordered = sorted(calls, key=lambda call: call.sent)
    chain: list[int] = []
    for index, call in enumerate(ordered):
        before = [chain[j] for j in range(index) if ordered[j].sent + latency <= call.sent]
        chain.append(1 + max(before, default=0))
    return max(chain, default=0)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


@dataclass(frozen=True)
class ColdImport:
    cpu_ms: float  # the interpreter's CPU time for the import: what it costs, whatever else the machine runs
    wall_ms: float


def cold_import(code: str, *, pycache: str | None) -> ColdImport:
    """`code` in fresh interpreters (median of COLD_RUNS), with tracing off as in the benchmark.
    `pycache`: a bytecode cache directory, filled by one untimed run first, as a deployed layer
    whose packages were installed (compiled) by pip; None: every module compiled from source."""
    env = {**os.environ, "POWERTOOLS_LOG_LEVEL": "WARNING", "POWERTOOLS_TRACE_DISABLED": "true"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if pycache is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(
            prefix="bench-no-pycache-"
        )  # empty: nothing cached to read
    else:
        env["PYTHONPYCACHEPREFIX"] = pycache  # keeps the repository and the venv untouched
    script = f"import time; c, w = time.process_time(), time.perf_counter(); {code}; print(time.process_time() - c, time.perf_counter() - w)"
    runs = []
    for run in range(COLD_RUNS + (pycache is not None)):
        out = subprocess.run(
            [sys.executable, "-c", script],
            cwd=REPO / "functions" / "trigger",
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        if pycache is not None and run == 0:
            continue  # the run that wrote the cache
        cpu, wall = out.stdout.strip().splitlines()[-1].split()
        runs.append((float(cpu) * 1000, float(wall) * 1000))
    return ColdImport(statistics.median(c for c, _ in runs), statistics.median(w for _, w in runs))


# What a server side reports back: its endpoints, and a callable that counts what it received.
Served = tuple[dict[str, str], Callable[[], dict[str, int]]]


@contextlib.contextmanager
def aws_server() -> Iterator[Served]:
    """A moto server on 127.0.0.1 (it answers for any service; each server side is used for one)."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one log line per request otherwise
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    try:
        yield {"aws": f"http://{host}:{port}"}, dict
    finally:
        moto.stop()


@contextlib.contextmanager
def doubles() -> Iterator[Served]:
    """The Marquez double (food delivery sample), the strict Airflow double and the Slack and
    PagerDuty receivers on 127.0.0.1; counts: the DAG runs and Slack messages they received."""
    from backfill_local.airflow_double import AirflowDouble
    from backfill_local.marquez_double import MarquezDouble
    from backfill_local.receivers import PagerDutyReceiver, SlackReceiver

    with contextlib.ExitStack() as stack:
        marquez = stack.enter_context(MarquezDouble(seed="food_delivery"))
        airflow = stack.enter_context(AirflowDouble(dag_ids={"backfill"}))
        slack = stack.enter_context(SlackReceiver(token=SLACK_TOKEN))
        pagerduty = stack.enter_context(PagerDutyReceiver())
        urls = {
            "marquez": marquez.url,
            "airflow": airflow.url,
            "slack": slack.api_url,
            "pagerduty": pagerduty.events_url,
            "pagerduty_routing_key": pagerduty.routing_key,
        }
        yield urls, lambda: {"runs": len(airflow.runs), "messages": len(slack.messages)}


# Each AWS service on a moto server of its own, and the variable that points boto3 at it.
AWS_SERVICES = {
    "s3": "AWS_ENDPOINT_URL_S3",
    "dynamodb": "AWS_ENDPOINT_URL_DYNAMODB",
    "secretsmanager": "AWS_ENDPOINT_URL_SECRETS_MANAGER",
}
SERVER_SIDES: dict[str, Callable[[], contextlib.AbstractContextManager[Served]]] = {
    **{f"aws-{service}": aws_server for service in AWS_SERVICES},
    "doubles": doubles,
}


def _serve(conn: Any, side: str) -> None:
    """A child process's servers: sends their endpoints, then their counts when asked, until told to stop."""
    with SERVER_SIDES[side]() as (urls, counts):
        conn.send(urls)
        while conn.recv() != "stop":
            conn.send(counts())


@contextlib.contextmanager
def server_side(side: str, *, inline: bool) -> Iterator[Served]:
    """`side`'s servers in a process of their own (as a Lambda shares no interpreter with S3,
    DynamoDB, Marquez or Airflow), or with `inline` in this one, sharing its GIL."""
    if inline:
        with SERVER_SIDES[side]() as served:
            yield served
        return
    context = multiprocessing.get_context("spawn")
    conn, child = context.Pipe()
    process = context.Process(target=_serve, args=(child, side), daemon=True)
    process.start()

    def counts() -> dict[str, int]:
        conn.send("counts")
        return dict(conn.recv())

    try:
        yield conn.recv(), counts
    finally:
        conn.send("stop")
        process.join(timeout=10)
        if process.is_alive():
            process.kill()


WARMUP = (
    b"version: 1\nname: bench-warmup\nowner: '@bench'\nmode: batch\n"
    b"jobs: [{namespace: food_delivery, name: etl_drivers}]\ndates: [2021-06-04]\ndownstream: {enabled: false}\n"
)  # other jobs than the measured ones: their history stays unread until config 0


def config_body(index: int) -> bytes:
    return (
        f"version: 1\nname: bench-{index:04d}\nowner: '@bench'\nmode: batch\n"
        "jobs: [{namespace: food_delivery, name: etl_orders}]\ndates: [2021-06-04, 2021-06-05]\n"
    ).encode()


def main() -> int:
    os.environ.update(
        {
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_DEFAULT_REGION": "us-east-1",
            "POWERTOOLS_LOG_LEVEL": "WARNING",
            "POWERTOOLS_TRACE_DISABLED": "true",
            "POWERTOOLS_METRICS_NAMESPACE": "Bench",
        }
    )
    inline = "--servers-inline" in sys.argv[1:]
    import boto3
    import requests

    with contextlib.ExitStack() as servers:
        aws_ports = set()
        for service, variable in AWS_SERVICES.items():
            aws_urls, _ = servers.enter_context(server_side(f"aws-{service}", inline=inline))
            os.environ[variable] = aws_urls["aws"]
            aws_ports.add(urlsplit(aws_urls["aws"]).port)
        os.environ.pop("AWS_ENDPOINT_URL", None)
        urls, received = servers.enter_context(server_side("doubles", inline=inline))
        with contextlib.ExitStack() as stack:
            s3 = boto3.client("s3")
            dynamodb = boto3.client("dynamodb")
            secrets = boto3.client("secretsmanager")
            s3.create_bucket(Bucket=BUCKET)
            s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
            for table in (TABLE, "bench-baseline"):
                dynamodb.create_table(
                    TableName=table,
                    KeySchema=[{"AttributeName": "backfill_id", "KeyType": "HASH"}],
                    AttributeDefinitions=[{"AttributeName": "backfill_id", "AttributeType": "S"}],
                    BillingMode="PAY_PER_REQUEST",
                )
            s3.put_object(
                Bucket=BUCKET,
                Key="catalog/catalog.yaml",
                Body=(REPO / "examples" / "catalog.yaml").read_bytes(),
            )
            arn = {
                name: secrets.create_secret(Name=f"bench/{name}", SecretString=json.dumps(value))["ARN"]
                for name, value in (
                    ("airflow", {"username": "admin", "password": "admin"}),
                    ("slack", {"bot_token": SLACK_TOKEN}),
                    ("pagerduty", {"routing_key": urls["pagerduty_routing_key"]}),
                )
            }
            os.environ.update(
                {
                    "CONFIG_BUCKET": BUCKET,
                    "STATUS_TABLE": TABLE,
                    "MARQUEZ_URL": urls["marquez"],
                    "AIRFLOW_URL": urls["airflow"],
                    "AIRFLOW_SECRET_ID": arn["airflow"],
                    "SLACK_API_URL": urls["slack"],
                    "SLACK_SECRET_ID": arn["slack"],
                    "SLACK_CHANNEL": "#bench",
                    "PAGERDUTY_EVENTS_URL": urls["pagerduty"],
                    "PAGERDUTY_SECRET_ID": arn["pagerduty"],
                    "JOB_CATALOG_URI": f"s3://{BUCKET}/catalog/catalog.yaml",
                }
            )
            names = {urlsplit(urls[name]).port: name for name in ("marquez", "airflow", "slack", "pagerduty")}
            counter = stack.enter_context(RoundTrips(aws_ports=aws_ports, names=names))
            counter.watch_events(boto3.DEFAULT_SESSION.events)  # the clients the handler makes
            sys.path.insert(0, str(REPO / "functions" / "trigger"))
            import app

            class Context:
                function_name, memory_limit_in_mb, aws_request_id = "bench", 512, "bench"
                invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:bench"

                def get_remaining_time_in_millis(self) -> int:
                    return 300_000

            def event_for(key: str, body: bytes) -> dict:
                put = s3.put_object(Bucket=BUCKET, Key=key, Body=body)
                obj = {
                    "key": key,
                    "size": len(body),
                    "versionId": put["VersionId"],
                    "eTag": put["ETag"].strip('"'),
                }
                return {
                    "Records": [
                        {
                            "eventSource": "aws:s3",
                            "eventName": "ObjectCreated:Put",
                            "s3": {"bucket": {"name": BUCKET}, "object": obj},
                        }
                    ]
                }

            cpu_ms: list[float] = []  # this process's CPU time per invocation

            def invoke(event: dict) -> tuple[float, dict]:
                started, cpu = time.perf_counter(), time.process_time()
                with contextlib.redirect_stdout(io.StringIO()):  # EMF lines
                    answer = app.handler(event, Context())
                cpu_ms.append((time.process_time() - cpu) * 1000)
                return (time.perf_counter() - started) * 1000, answer

            # Round trips waited for, in a new container: every call held LATENCY before it is
            # sent, so what goes side by side overlaps (`waits`). Its first config (cold: the
            # secrets, the catalog, Airflow's token, the jobs' run history), then one of the
            # same jobs (warm).
            from backfill_orchestrator.trigger.handler import trigger_wiring

            waited: dict[str, tuple[list[str], int]] = {}
            counter.latency = LATENCY
            with trigger_wiring():  # a new container's wiring, built from the environment
                for label, index in (("cold", 9000), ("warm", 9001)):
                    event = event_for(f"incoming/waits-{label}.yaml", config_body(index))
                    counter.take()
                    _, answer = invoke(event)
                    assert answer["results"][0]["disposition"] == "accepted", answer
                    sent = counter.take_calls()
                    waited[label] = ([call.name for call in sent], waits(sent, LATENCY))
            counter.latency = 0.0

            # Baseline: the unavoidable round trips, done plainly.
            session = requests.Session()
            token = session.post(
                f"{urls['airflow']}/auth/token", json={"username": "admin", "password": "admin"}
            ).json()["access_token"]
            base_s3, base_dynamodb = (
                boto3.client("s3"),
                boto3.client("dynamodb"),
            )  # counted, like the handler's

            def bare_path(index: int) -> tuple[float, float, int]:
                """One config the bare way: its wall ms, this process's CPU ms, its calls."""
                key = f"incoming/base-{index}.yaml"
                s3.put_object(Bucket=BUCKET, Key=key, Body=config_body(index))
                counter.take()
                started, cpu = time.perf_counter(), time.process_time()
                body = base_s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
                base_dynamodb.put_item(
                    TableName="bench-baseline",
                    Item={"backfill_id": {"S": f"base-{index}"}, "state": {"S": "TRIGGERED"}},
                    ConditionExpression="attribute_not_exists(backfill_id)",
                )
                response = session.post(
                    f"{urls['airflow']}/api/v2/dags/backfill/dagRuns",
                    json={"dag_run_id": f"base-{index}", "logical_date": None, "conf": {}},
                    headers={"Authorization": f"Bearer {token}"},
                )
                assert response.status_code == 200, response.text
                base_s3.put_object(
                    Bucket=BUCKET, Key=f"results/base-{index}.yaml.result.json", Body=body[:10]
                )
                elapsed, cpu = (time.perf_counter() - started) * 1000, (time.process_time() - cpu) * 1000
                return elapsed, cpu, len(counter.take())

            first_ms, _ = invoke(event_for("incoming/warmup.yaml", WARMUP))
            first_calls = counter.take()
            bare_path(-1)  # its clients' first call
            ours, duplicates, trips, duplicate_trips = [], [], [], []
            ours_cpu: list[float] = []
            baseline, baseline_trips, baseline_cpu = [], [], []
            # Each config of ours, then one the bare way: both see the machine alike, whatever
            # else it runs meanwhile (its load moves within a run).
            for index in range(CONFIGS):
                event = event_for(f"incoming/bench-{index}.yaml", config_body(index))
                counter.take()
                elapsed, answer = invoke(event)
                calls = counter.take()
                assert answer["results"][0]["disposition"] == "accepted", answer
                ours.append(elapsed)
                ours_cpu.append(cpu_ms[-1])
                trips.append(calls)
                elapsed, answer = invoke(event)
                duplicate_trips.append(counter.take())
                assert answer["results"][0]["disposition"] == "duplicate", answer
                duplicates.append(elapsed)
                elapsed, cpu, count = bare_path(index)
                baseline.append(elapsed)
                baseline_cpu.append(cpu)
                baseline_trips.append(count)
            ran = CONFIGS + 1 + len(waited)  # the timed configs, the warm-up, the waits' configs
            assert received() == {"runs": ran + CONFIGS + 1, "messages": ran}, received()

    with tempfile.TemporaryDirectory(prefix="bench-pycache-") as pycache:
        cold = cold_import("import app", pycache=pycache)
        cold_base = cold_import("import boto3", pycache=pycache)
    cold_source = cold_import("import app", pycache=None)

    ours_p50, base_p50 = statistics.median(ours), statistics.median(baseline)
    print(
        f"{CONFIGS} configs through the warm handler, doubles and moto server on 127.0.0.1 "
        f"({'in this process' if inline else 'each side in a process of its own'}); first invocation {first_ms:.0f} ms"
    )
    print(f"{'':<28}{'ours ms':>10}{'baseline ms':>13}{'ratio':>8}")
    print(f"{'warm per config p50':<28}{ours_p50:>10.1f}{base_p50:>13.1f}{ours_p50 / base_p50:>8.2f}")
    print(
        f"{'warm per config p90':<28}{percentile(ours, 0.9):>10.1f}{percentile(baseline, 0.9):>13.1f}"
        f"{percentile(ours, 0.9) / percentile(baseline, 0.9):>8.2f}"
    )
    print(
        f"{'duplicate delivery p50':<28}{statistics.median(duplicates):>10.1f}{base_p50:>13.1f}"
        f"{statistics.median(duplicates) / base_p50:>8.2f}"
    )
    print(
        f"{'cold import CPU ms':<28}{cold.cpu_ms:>10.0f}{cold_base.cpu_ms:>13.0f}{cold.cpu_ms / cold_base.cpu_ms:>8.2f}"
        f"   (median of {COLD_RUNS}, bytecode cached; baseline: import boto3)"
    )
    print(
        f"{'cold import wall ms':<28}{cold.wall_ms:>10.0f}{cold_base.wall_ms:>13.0f}{cold.wall_ms / cold_base.wall_ms:>8.2f}"
        f"   (with other work on the machine)"
    )
    print(
        f"{'cold import CPU, no bytecode':<28}{cold_source.cpu_ms:>10.0f}{'':>13}{'':>8}   (every module compiled from source)"
    )
    (cold_calls, round_trips_cold), (warm_calls, round_trips) = waited["cold"], waited["warm"]
    calls_warm = statistics.median(len(calls) for calls in trips)
    print(
        f"round trips waited for, one after another ({LATENCY * 1000:.0f} ms per answer): new container "
        f"{round_trips_cold}, warm {round_trips} (baseline {statistics.median(baseline_trips):g}, one by one)"
    )
    print(
        f"calls per valid config: warm median {calls_warm:g}, max {max(len(c) for c in trips)}; duplicate "
        f"delivery {statistics.median(len(c) for c in duplicate_trips):g}; new container {len(cold_calls)}"
    )
    for label, calls in (("warm", warm_calls), ("new container", cold_calls)):
        print(f"  {label}:")
        for name, count in collections.Counter(calls).items():
            print(f"    {count} x {name}")
    print(
        f"more: warm_ms_p90={percentile(ours, 0.9):.1f} duplicate_ms_p50={statistics.median(duplicates):.1f} "
        f"cold_import_wall_ms={cold.wall_ms:.0f} cold_import_boto3_ms={cold_base.cpu_ms:.0f} "
        f"cold_import_no_bytecode_ms={cold_source.cpu_ms:.0f} first_invocation_ms={first_ms:.0f} "
        f"first_invocation_calls={len(first_calls)} baseline_round_trips={statistics.median(baseline_trips):g} "
        f"cpu_ms_p50={statistics.median(ours_cpu):.1f} baseline_cpu_ms_p50={statistics.median(baseline_cpu):.1f} "
        f"servers={'inline' if inline else 'apart'}"
    )
    print(
        f"BENCH trigger warm_ms_p50={ours_p50:.1f} baseline_ms_p50={base_p50:.1f} round_trips={round_trips} "
        f"cold_import_ms={cold.cpu_ms:.0f} ratio={ours_p50 / base_p50:.2f} round_trips_cold={round_trips_cold} "
        f"calls={calls_warm:g} calls_cold={len(cold_calls)}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
