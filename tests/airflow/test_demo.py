"""`make demo` end to end: moto, the Marquez double, receivers, a real Airflow 3, the real
Spark job and the sample DAGs; it must pass, end with the overlapping backfill that waited
for the first and then ran, and leave no process behind. Also, fast: the demo's pieces (S3
notifications delivered to a handler; the DAGs folder it parses)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus

import psutil
import pytest

from backfill_local.demo_spark import SampleShape
from tests.support.airflow import REPO


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_demo_repairs_the_data_then_runs_the_overlapping_backfill_it_queued(tmp_path: Path) -> None:
    env = {**os.environ, "DEMO_WORKDIR": str(tmp_path / "demo")}
    for name in (
        "DEMO_AWS_ENDPOINT_URL",
        "DEMO_MARQUEZ_URL",
        "DEMO_AIRFLOW_URL",
        "DEMO_SAMPLE_HOURS",
        "AWS_ENDPOINT_URL",
    ):
        env.pop(name, None)
    demo = subprocess.Popen(
        [sys.executable, "-m", "backfill_local.demo"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        output, _ = demo.communicate(timeout=1700)
    except subprocess.TimeoutExpired:
        demo.terminate()  # the demo stops what it started on TERM; a KILL would leave Airflow running
        output, _ = demo.communicate(timeout=120)
        pytest.fail(f"the demo did not finish in 1700 s:\n{output[-6000:]}")
    assert demo.returncode == 0, output[-6000:]
    for expected in (
        "uploaded s3://backfill-configs-local/incoming/orders-outage-june-",
        "validated, planned (",
        "(4 hours a day)",
        "step round_0.spark",
        # The downstream DAG reruns: a DAG-only round that fits one chunk runs in its `prepare`
        # task (docs/airflow.md, "Depth and width"), so they show in the report and the lineage.
        "30 DAG runs",
        "DAG rerun orders_popular_day_of_week: 15 run(s)",
        "== Slack messages",
        "result file beside the config: SUCCEEDED, ",
        "== result after ",
        "demo passed",
    ):
        assert expected in output, (expected, output[-4000:])
    # Each data check (after the repair, and after the re-run that follows the undo) found every
    # processed table equal to the clean run.
    checked = output.count("rows in the clean run")
    assert checked >= 4 and checked % 4 == 0, output[-4000:]
    assert output.count("missing 0, unexpected 0") == checked, output[-4000:]

    first = timeline(output, "orders-outage-june-")
    # no PLANNED on the way: the timeline's TRIGGERED line says it validated and planned it
    assert_in_order(first, ["uploaded", "validated, planned (", "step round_0.spark", "succeeded"])
    assert any("validated, planned (" in line and "and triggered: DAG run" in line for line in first), first
    first_id = re.search(r"== timeline of (orders-outage-june-\w+)", output).group(1)
    # The second one waited for the first, was started by the `start` document its end dropped, and ran.
    second = timeline(output, "orders-recheck-")
    assert_in_order(
        second,
        ["uploaded", f"queued: waiting for {first_id}", "triggered", "step round_0.spark", "succeeded"],
    )
    second_id = re.search(r"== timeline of (orders-recheck-\w+)", output).group(1)
    assert re.search(rf"\[trigger\] control/{second_id}/start-\S+\.json: accepted TRIGGERED", output), output[
        -4000:
    ]
    listing = output[output.index("== backfill list") :]
    # Both succeeded, then were undone (the later first); the held one was discarded; the re-run
    # of the outage days succeeded.
    for listed in (
        rf"{first_id}\s+UNDONE",
        rf"{second_id}\s+UNDONE",
        r"orders-feed-fix-\w+\s+DISCARDED",
        r"orders-rerun-\w+\s+SUCCEEDED",
    ):
        assert re.search(listed, listing), (listed, listing)
    assert leftover_processes(tmp_path) == []


def timeline(output: str, backfill_prefix: str) -> list[str]:
    """The lines of `== timeline of <backfill_prefix>...`, up to the next stage."""
    start = output.index(f"== timeline of {backfill_prefix}")
    section = output[start:].split("\n== ", 2)[0]
    return section.splitlines()[1:]


def assert_in_order(lines: list[str], wanted: list[str]) -> None:
    position = 0
    for text in wanted:
        found = next((i for i in range(position, len(lines)) if text in lines[i]), None)
        assert found is not None, (text, lines)
        position = found + 1


def leftover_processes(workdir: Path) -> list[list[str]]:
    """Processes of this demo still alive: Airflow's (their AIRFLOW_HOME is in the workdir) and
    Spark's (their command line names the workdir). Other people's processes do not count."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        try:
            cmdline = process.info["cmdline"] or []
            home = process.environ().get("AIRFLOW_HOME", "")
        except psutil.Error:
            continue
        if home.startswith(str(workdir)) or any(str(workdir) in part for part in cmdline):
            found.append(cmdline)
    return found


# -- the demo's pieces (fast) -------------------------------------------------------------------
def test_the_sample_hours_come_from_the_environment_and_a_bad_value_starts_nothing(tmp_path: Path) -> None:
    from backfill_local.demo import SAMPLE, DemoUsageError, sample_shape

    assert sample_shape({}) == SAMPLE
    assert sample_shape({"DEMO_SAMPLE_HOURS": "24"}) == SampleShape(
        SAMPLE.start, SAMPLE.days, hours_per_day=24
    )
    assert sample_shape({"DEMO_SAMPLE_HOURS": " "}) == SAMPLE  # empty counts as unset, as in every setting
    for bad in ("0", "25", "-3", "four", "4.5", "²"):
        with pytest.raises(DemoUsageError) as refused_value:
            sample_shape({"DEMO_SAMPLE_HOURS": bad})
        assert str(refused_value.value) == (
            f"DEMO_SAMPLE_HOURS: expected a whole number of hours a day from 1 to 24, got '{bad}'"
        )
    work = tmp_path / "demo"
    env = {**os.environ, "DEMO_WORKDIR": str(work), "DEMO_SAMPLE_HOURS": "25"}
    refused = subprocess.run(
        [sys.executable, "-m", "backfill_local.demo"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert (
        refused.stdout.strip()
        == "demo: DEMO_SAMPLE_HOURS: expected a whole number of hours a day from 1 to 24, got '25'"
    )
    assert "Traceback" not in refused.stderr and not work.exists()  # nothing started, nothing cleared


@pytest.fixture
def s3_and_sqs() -> Iterator[tuple[Any, Any]]:
    import boto3
    import requests
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    kwargs = {
        "endpoint_url": endpoint,
        "region_name": "us-east-1",
        "aws_access_key_id": "x",
        "aws_secret_access_key": "x",
    }
    try:
        s3 = boto3.client("s3", **kwargs)
        s3.create_bucket(Bucket="demo-events")
        yield s3, boto3.client("sqs", **kwargs)
    finally:
        requests.post(f"{endpoint}/moto-api/reset", timeout=10)  # moto's backends are process-wide
        server.stop()


def wait_until(condition: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_uploads_under_the_watched_prefixes_reach_the_handler_as_s3_events(
    s3_and_sqs: tuple[Any, Any],
) -> None:
    from backfill_local.s3_events import S3EventPump

    s3, sqs = s3_and_sqs
    events: list[dict[str, Any]] = []

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        assert context.get_remaining_time_in_millis() > 0
        events.append(event)
        return {"results": []}

    with S3EventPump(
        s3_client=s3,
        sqs_client=sqs,
        bucket="demo-events",
        prefixes=["incoming/", "control/"],
        handler=handler,
        principal_id="AWS:AROADEMO:jane.doe",
    ) as pump:
        s3.put_object(Bucket="demo-events", Key="incoming/orders fix.json", Body=b"{}")
        s3.put_object(Bucket="demo-events", Key="results/orders fix.json.result.json", Body=b"{}")
        s3.put_object(Bucket="demo-events", Key="control/orders-fix-1/start-1.json", Body=b"{}")
        wait_until(lambda: len(pump.deliveries) == 2)
        time.sleep(1.5)  # nothing else arrives (results/ is not watched)
    assert sorted(d.key for d in pump.deliveries) == [
        "control/orders-fix-1/start-1.json",
        "incoming/orders fix.json",
    ]
    records = [r for e in events for r in e.get("Records", [])]
    assert {r["eventName"] for r in records} == {"ObjectCreated:Put"}
    assert {r["s3"]["bucket"]["name"] for r in records} == {"demo-events"}
    assert {r["userIdentity"]["principalId"] for r in records} == {
        "AWS:AROADEMO:jane.doe"
    }  # as real S3 names the uploader
    assert pump.failures == []


def test_a_failing_delivery_is_redelivered_then_reported(s3_and_sqs: tuple[Any, Any]) -> None:
    from backfill_local.s3_events import S3EventPump

    s3, sqs = s3_and_sqs
    calls: list[str] = []

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        keys = [
            unquote_plus(r["s3"]["object"]["key"]) for r in event.get("Records", [])
        ]  # URL-encoded, as S3 sends them
        calls.extend(keys)
        if any("broken" in key for key in keys):
            raise RuntimeError("trigger down")
        return {"results": []}

    with S3EventPump(
        s3_client=s3,
        sqs_client=sqs,
        bucket="demo-events",
        prefixes=["incoming/"],
        handler=handler,
        visibility_timeout=1,
        max_receives=2,
    ) as pump:
        s3.put_object(Bucket="demo-events", Key="incoming/broken.json", Body=b"{}")
        wait_until(lambda: pump.failures)
    assert calls == ["incoming/broken.json", "incoming/broken.json"]
    assert "RuntimeError: trigger down" in pump.failures[0]
    assert [d.key for d in pump.deliveries] == ["incoming/broken.json"]  # then dropped, as Lambda would


def test_the_demo_dags_folder_has_only_the_dags_it_runs(tmp_path: Path) -> None:
    from backfill_local.airflow_local import demo_dags_folder

    folder = demo_dags_folder(
        REPO / "dags", tmp_path / "dags", dag_files=["backfill_dag.py", "food_delivery"]
    )
    top = sorted(p.name for p in folder.iterdir())
    assert "reconciliation_dag.py" not in top and {
        "backfill_dag.py",
        "food_delivery",
        "backfill_runtime",
    } <= set(top)
    assert (folder / ".airflowignore").exists() and (folder / "backfill_runtime" / "reruns.py").exists()
    assert not list(folder.rglob("__pycache__"))
