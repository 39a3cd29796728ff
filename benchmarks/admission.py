"""Admission benchmark: a burst of distinct, non-overlapping uploads delivered at once to 16
concurrent trigger containers, beside the same uploads handled one by one, and the time per
upload with 0, 100 and 1,000 backfills in flight.

Everything runs on 127.0.0.1: a `moto_server` process (S3, DynamoDB, Secrets Manager; its own
process, so the containers' AWS calls are not serialised under this interpreter's GIL), the
Marquez double with the food delivery sample and the Airflow double. A container is a worker
process running the real Lambda handler (functions/trigger/app.py) on S3 events, warmed by one
dry run first; the deployment has the template's claims table (overlap protection).

- burst: UPLOADS configs (each repairs etl_orders and its five dependants for one week; their
  weeks never meet, so no two overlap), all put in S3 first, then their events handed to
  CONTAINERS workers at once (each week runs Wednesday to Tuesday, so neighbours share a
  (step, ISO week) key of the claims index, on other days). `failed_first_delivery`: events
  whose handler raised (Lambda would deliver them again); `p99_s`: the 99th percentile of the
  handler's time per upload; `throughput_vs_sequential`: uploads per second of the burst over
  those of one container handling the same uploads one after the other (in fresh tables).
  The baseline: the same burst with no claims table (`p99_s_no_admission`,
  `throughput_vs_no_admission`), so that what admission costs stands apart from what 16
  processes on 2 cores cost anyway; `admit_p99_s`: the time in `ClaimRegistry.admit` per
  upload of the burst. Each way also prints the CPU its processes used per upload (the
  containers, this process with the doubles, and the moto server on its own).
- in flight: N other backfills already admitted (live status records, claim sets stored in S3
  like the trigger's), placed on the very steps and months of the measured uploads on the days
  those do not rewrite, so every measured admission meets them; then a fresh container handles
  MEASURED uploads one by one. `p50_ratio_1000_inflight`: the median per upload with 1,000 in
  flight over the median with none; `first_ms_1000`: a fresh container's first upload with
  1,000 in flight.

The last line is what tooling reads:

    BENCH admission failed_first_delivery=... throughput_vs_sequential=... p99_s=... p50_ratio_1000_inflight=... ...

    .venv/bin/python benchmarks/admission.py
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import multiprocessing
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
# Smaller figures for a quick look: ADMISSION_BENCH="uploads,containers,measured" (e.g. "20,4,5";
# measured 0: no in-flight part).
_QUICK = [int(n) for n in os.environ.get("ADMISSION_BENCH", "").split(",") if n]
UPLOADS, CONTAINERS, MEASURED = _QUICK or (200, 16, 25)  # MEASURED: uploads timed per in-flight count
IN_FLIGHT = (0, 100, 1000)
FIRST_DAY = date(2018, 1, 3)  # the burst's weeks: FIRST_DAY + 7 i, Wednesday to Tuesday
STEPS = (
    "etl_orders",
    "etl_orders_7_days",
    "etl_delivery_7_days",
    "delivery_times_7_days",
    "email_discounts",
    "orders_popular_day_of_week",
)
BASE_ENV = {
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_DEFAULT_REGION": "us-east-1",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_METRICS_NAMESPACE": "Bench",
}


def config_body(name: str, day: date, *, dry_run: bool = False) -> bytes:
    return (
        f"version: 1\nname: {name}\nowner: '@bench'\nmode: batch\n"
        + ("dry_run: true\n" if dry_run else "")
        + f"jobs: [{{namespace: food_delivery, name: etl_orders}}]\ndates: [{day.isoformat()}]\n"
    ).encode()


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


# -- a container: a worker process running the Lambda handler --------------------------------
class _Context:
    function_name, memory_limit_in_mb = "bench", 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:bench"

    def __init__(self, request_id: str):
        self.aws_request_id = request_id

    def get_remaining_time_in_millis(self) -> int:
        return 300_000


def container(env: dict[str, str], warmup: dict[str, Any], tasks: Any, results: Any) -> None:
    """One warm container: the handler on each event it takes from `tasks`, until None."""
    os.environ.update(env)
    logging.disable(logging.WARNING)
    sys.path.insert(0, str(REPO / "functions" / "trigger"))
    import app

    from backfill_orchestrator.claims.registry import ClaimRegistry

    admitting = [0.0]  # seconds spent in ClaimRegistry.admit during the current invocation
    admit = ClaimRegistry.admit

    def timed_admit(self: ClaimRegistry, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return admit(self, **kwargs)
        finally:
            admitting[0] += time.perf_counter() - started

    ClaimRegistry.admit = timed_admit  # type: ignore[method-assign]

    def invoke(index: int, event: dict[str, Any]) -> tuple[float, str, float]:
        admitting[0] = 0.0
        started = time.perf_counter()
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # EMF lines
                answer = app.handler(event, _Context(f"bench-{os.getpid()}-{index}"))
            outcome = str(answer["results"][0]["disposition"])
        except Exception as error:  # the platform would deliver the event again
            outcome = f"raised {type(error).__name__}: {str(error)[:200]}"
        return time.perf_counter() - started, outcome, admitting[0]

    invoke(-1, warmup)
    results.put(("ready", 0.0, "", 0.0))
    while (task := tasks.get()) is not None:
        index, event = task
        results.put((index, *invoke(index, event)))


@dataclass(frozen=True)
class Run:
    wall_s: float
    seconds: list[float]  # the handler's time per upload, in upload order
    outcomes: list[str]
    admit_seconds: list[float]  # of which in ClaimRegistry.admit
    cpu_s: float  # CPU seconds of the containers, the moto server and this process (the doubles)
    server_cpu_s: float  # of which the moto server's

    @property
    def failed(self) -> int:
        return sum(1 for outcome in self.outcomes if outcome not in ("accepted", "queued"))

    @property
    def per_second(self) -> float:
        return len(self.seconds) / self.wall_s


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a process so far (Linux: /proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def deliver(
    env: dict[str, str], warmups: list[dict[str, Any]], events: list[dict[str, Any]], *, server_pid: int
) -> Run:
    """Hand `events` at once to len(warmups) fresh containers (each warmed by its own event)."""
    spawn = multiprocessing.get_context("spawn")
    tasks, results = spawn.Queue(), spawn.Queue()
    workers = [spawn.Process(target=container, args=(env, warmup, tasks, results)) for warmup in warmups]
    for worker in workers:
        worker.start()
    try:
        for _ in workers:
            assert results.get(timeout=300)[0] == "ready"
        pids = [server_pid, os.getpid(), *(worker.pid for worker in workers if worker.pid is not None)]
        cpu_before, server_before = sum(map(cpu_seconds, pids)), cpu_seconds(server_pid)
        started = time.perf_counter()
        for index, event in enumerate(events):
            tasks.put((index, event))
        seconds, outcomes, admit_seconds = [0.0] * len(events), [""] * len(events), [0.0] * len(events)
        for _ in events:
            index, elapsed, outcome, admitting = results.get(timeout=900)
            seconds[index], outcomes[index], admit_seconds[index] = elapsed, outcome, admitting
        wall = time.perf_counter() - started
        cpu, server = sum(map(cpu_seconds, pids)) - cpu_before, cpu_seconds(server_pid) - server_before
        for _ in workers:
            tasks.put(None)
    finally:
        for worker in workers:
            worker.join(timeout=60)
            if worker.is_alive():
                worker.kill()
    return Run(wall, seconds, outcomes, admit_seconds, cpu, server)


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


# -- the world -------------------------------------------------------------------------------
class World:
    """The moto server and the doubles; `deployment(name)` makes a fresh bucket and tables."""

    def __init__(self, stack: contextlib.ExitStack):
        import boto3

        from backfill_local.airflow_double import AirflowDouble
        from backfill_local.marquez_double import MarquezDouble

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        moto = subprocess.Popen(
            [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        stack.callback(stop, moto)
        self.server_pid = moto.pid
        self.endpoint = f"http://127.0.0.1:{port}"
        os.environ.update({**BASE_ENV, "AWS_ENDPOINT_URL": self.endpoint})
        self.s3 = boto3.client("s3")
        self.dynamodb = boto3.client("dynamodb")
        for _ in range(100):
            with contextlib.suppress(Exception):
                self.s3.list_buckets()
                break
            time.sleep(0.1)
        self.marquez = stack.enter_context(MarquezDouble(seed="food_delivery"))
        self.airflow = stack.enter_context(AirflowDouble(dag_ids={"backfill"}))
        secrets = boto3.client("secretsmanager")
        self.airflow_secret = secrets.create_secret(
            Name="bench/airflow", SecretString=json.dumps({"username": "admin", "password": "admin"})
        )["ARN"]

    def deployment(self, name: str, *, admission: bool = True) -> dict[str, str]:
        """Without `admission`, no claims table: the trigger admits every upload unchecked."""
        from backfill_local.template_tables import create_table

        bucket, status, claims = f"bench-{name}", f"bench-status-{name}", f"bench-claims-{name}"
        self.s3.create_bucket(Bucket=bucket)
        self.s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
        self.s3.put_object(
            Bucket=bucket, Key="catalog/catalog.yaml", Body=(REPO / "examples" / "catalog.yaml").read_bytes()
        )
        create_table(self.dynamodb, "StatusTable", table_name=status)
        create_table(self.dynamodb, "ClaimsTable", table_name=claims)
        return {
            **BASE_ENV,
            "AWS_ENDPOINT_URL": self.endpoint,
            "CONFIG_BUCKET": bucket,
            "STATUS_TABLE": status,
            **({"CLAIMS_TABLE": claims} if admission else {}),
            "MARQUEZ_URL": self.marquez.url,
            "AIRFLOW_URL": self.airflow.url,
            "AIRFLOW_SECRET_ID": self.airflow_secret,
            "BACKFILL_DAG_ID": "backfill",
            "JOB_CATALOG_URI": f"s3://{bucket}/catalog/catalog.yaml",
        }

    def event(self, env: dict[str, str], key: str, body: bytes) -> dict[str, Any]:
        bucket = env["CONFIG_BUCKET"]
        put = self.s3.put_object(Bucket=bucket, Key=key, Body=body)
        obj = {"key": key, "size": len(body), "versionId": put["VersionId"], "eTag": put["ETag"].strip('"')}
        return {
            "Records": [
                {
                    "eventSource": "aws:s3",
                    "eventName": "ObjectCreated:Put",
                    "s3": {"bucket": {"name": bucket}, "object": obj},
                }
            ]
        }

    def uploads(self, env: dict[str, str], days: list[date], prefix: str) -> list[dict[str, Any]]:
        return [
            self.event(env, f"incoming/{prefix}-{i:04d}.yaml", config_body(f"{prefix}-{i:04d}", day))
            for i, day in enumerate(days)
        ]

    def warmups(self, env: dict[str, str], count: int) -> list[dict[str, Any]]:
        day = date(2021, 6, 4)
        return [
            self.event(env, f"incoming/warm-{i}.yaml", config_body(f"warm-{i:02d}", day, dry_run=True))
            for i in range(count)
        ]

    def seed_in_flight(self, env: dict[str, str], count: int, months: list[date]) -> None:
        """`count` admitted backfills, spread over `months` (each month's first week is a
        measured upload's): one step and one day each, on days 8-28 of those months."""
        from backfill_orchestrator.claims import ClaimSet, registry_for
        from backfill_orchestrator.status import StatusStore

        status = StatusStore(table_name=env["STATUS_TABLE"], dynamodb_client=self.dynamodb)
        registry = registry_for(
            dynamodb_client=self.dynamodb,
            table_name=env["CLAIMS_TABLE"],
            status_store=status,
            s3_client=self.s3,
        )
        slots = [
            (step, month + timedelta(days=offset))
            for offset in range(7, 28)
            for step in STEPS
            for month in months
        ]
        assert count <= len(slots)
        for n, (step, day) in enumerate(slots[:count]):
            backfill_id = f"inflight-{n:04d}-{n:08x}"
            status.create(backfill_id)
            claims = ClaimSet({step: frozenset({day})})
            key = f"backfills/{backfill_id}/claims.json"
            put = self.s3.put_object(Bucket=env["CONFIG_BUCKET"], Key=key, Body=claims.to_json().encode())
            uri = f"s3://{env['CONFIG_BUCKET']}/{key}?versionId={put['VersionId']}"
            admitted = registry.admit(
                backfill_id=backfill_id,
                claims=claims,
                claims_uri=uri,
                submitted_at=f"2026-01-01T00:00:00.{n:06d}+00:00",
                on_overlap="wait",
            )
            assert type(admitted).__name__ == "Admitted", admitted


def months_from(first: date, count: int) -> list[date]:
    months, year, month = [], first.year, first.month
    for _ in range(count):
        months.append(date(year, month, 1))
        year, month = (year, month + 1) if month < 12 else (year + 1, 1)
    return months


def main() -> int:
    os.environ.update(BASE_ENV)
    sys.path.insert(0, str(REPO))
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    burst_days = [FIRST_DAY + timedelta(days=7 * i) for i in range(UPLOADS)]
    medians: dict[int, float] = {}
    firsts: dict[int, float] = {}
    with contextlib.ExitStack() as stack:
        world = World(stack)

        def run(name: str, containers: int, *, admission: bool = True) -> Run:
            env = world.deployment(name, admission=admission)
            uploads = world.uploads(env, burst_days, name)
            return deliver(env, world.warmups(env, containers), uploads, server_pid=world.server_pid)

        sequential = run("sequential", 1)
        burst = run("burst", CONTAINERS)
        bare = run("bare", CONTAINERS, admission=False)  # the same burst with no admission at all

        months = months_from(date(2015, 1, 1), max(MEASURED, 8))  # 8 months hold 1,000 seeds
        for count in IN_FLIGHT if MEASURED else ():
            env = world.deployment(f"inflight-{count}")
            started = time.perf_counter()
            world.seed_in_flight(env, count, months)
            seeded_s = time.perf_counter() - started
            measured = deliver(
                env,
                world.warmups(env, 1),
                world.uploads(env, months[:MEASURED], f"m{count}"),
                server_pid=world.server_pid,
            )
            assert measured.failed == 0, measured.outcomes
            medians[count], firsts[count] = statistics.median(measured.seconds), measured.seconds[0]
            print(
                f"{count:>5} in flight (seeded in {seeded_s:.0f} s): p50 {medians[count] * 1000:.0f} ms, "
                f"p90 {percentile(measured.seconds, 0.9) * 1000:.0f} ms, "
                f"a fresh container's first {firsts[count] * 1000:.0f} ms"
            )

    cpus = os.cpu_count() or 1
    print(f"{UPLOADS} non-overlapping uploads, moto server and the doubles on 127.0.0.1, {cpus} CPUs")
    print(
        f"{'':<36}{'uploads/s':>10}{'p50 s':>8}{'p99 s':>8}{'max s':>8}{'failed':>8}"
        f"{'admit p50':>10}{'admit p99':>10}{'CPU busy':>9}{'CPU ms':>8}{'moto ms':>8}"
    )
    for label, measured in (
        ("one container, one by one", sequential),
        (f"{CONTAINERS} containers at once", burst),
        (f"{CONTAINERS} containers, no admission", bare),
    ):
        print(
            f"{label:<36}{measured.per_second:>10.2f}{statistics.median(measured.seconds):>8.2f}"
            f"{percentile(measured.seconds, 0.99):>8.2f}{max(measured.seconds):>8.2f}{measured.failed:>8}"
            f"{statistics.median(measured.admit_seconds):>10.3f}{percentile(measured.admit_seconds, 0.99):>10.3f}"
            f"{measured.cpu_s / measured.wall_s / cpus:>9.0%}{measured.cpu_s / UPLOADS * 1000:>8.0f}"
            f"{measured.server_cpu_s / UPLOADS * 1000:>8.0f}"
        )
    print(
        "  (CPU busy: the share of the machine's CPUs all these processes used; CPU ms and moto ms: "
        "CPU milliseconds per upload, all of them and the moto server's)"
    )
    failures = [outcome for outcome in burst.outcomes if outcome not in ("accepted", "queued")]
    causes = [re.sub(r"s3://\S+: ", "", outcome) for outcome in failures]  # one line per cause
    for cause in sorted(set(causes)):
        print(f"  failed: {causes.count(cause)} x {cause}")
    ratio = burst.per_second / sequential.per_second
    print(
        f"more: sequential_per_s={sequential.per_second:.2f} burst_per_s={burst.per_second:.2f} "
        f"bare_per_s={bare.per_second:.2f} burst_p50_s={statistics.median(burst.seconds):.2f} "
        f"sequential_failed={sequential.failed} bare_failed={bare.failed} "
        f"cpu_ms_per_upload_sequential={sequential.cpu_s / UPLOADS * 1000:.0f} "
        f"cpu_ms_per_upload_burst={burst.cpu_s / UPLOADS * 1000:.0f} "
        f"cpu_ms_per_upload_bare={bare.cpu_s / UPLOADS * 1000:.0f} "
        + " ".join(f"p50_ms_{count}_inflight={medians[count] * 1000:.0f}" for count in medians)
    )
    in_flight = (
        f" p50_ratio_1000_inflight={medians[1000] / medians[0]:.2f} p50_ms_0={medians[0] * 1000:.0f}"
        f" p50_ms_1000={medians[1000] * 1000:.0f} first_ms_1000={firsts[1000] * 1000:.0f}"
        if 1000 in medians
        else ""
    )
    print(
        f"BENCH admission failed_first_delivery={burst.failed} throughput_vs_sequential={ratio:.2f} "
        f"p99_s={percentile(burst.seconds, 0.99):.2f}{in_flight} "
        f"p99_s_no_admission={percentile(bare.seconds, 0.99):.2f} "
        f"throughput_vs_no_admission={burst.per_second / bare.per_second:.2f} "
        f"admit_p99_s={percentile(burst.admit_seconds, 0.99):.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
