"""`make demo` end to end: moto, the Marquez double, receivers, a real Airflow 3, the real
Spark job and the sample DAGs; it must pass, end with the overlapping backfill that waited
for the first and then ran, and leave no process behind."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from .conftest import REPO

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def test_the_demo_repairs_the_data_then_runs_the_overlapping_backfill_it_queued(tmp_path: Path) -> None:
    env = {**os.environ, "DEMO_WORKDIR": str(tmp_path / "demo")}
    for name in ("DEMO_AWS_ENDPOINT_URL", "DEMO_MARQUEZ_URL", "DEMO_AIRFLOW_URL", "AWS_ENDPOINT_URL"):
        env.pop(name, None)
    result = subprocess.run(
        [sys.executable, "-m", "backfill_local.demo"], cwd=REPO, env=env, capture_output=True, text=True, timeout=1700
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    for expected in (
        "uploaded s3://backfill-configs-local/incoming/orders-outage-june-",
        "validated and planned",
        "step round_0.spark",
        "step round_1.dag_runs orders_popular_day_of_week",
        "== Slack messages",
        "result file beside the config: SUCCEEDED, ",
        "== result after ",
        "demo passed",
    ):
        assert expected in output, (expected, output[-4000:])
    # The data check found every processed table equal to the clean run.
    assert output.count("missing 0, unexpected 0") == output.count("rows in the clean run") == 4, output[-4000:]

    first = timeline(output, "orders-outage-june-")
    assert_in_order(first, ["uploaded", "validated and planned", "triggered", "step round_0.spark", "succeeded"])
    first_id = re.search(r"== timeline of (orders-outage-june-\w+)", output).group(1)
    # The second one waited for the first, was started by the `start` document its end dropped, and ran.
    second = timeline(output, "orders-recheck-")
    assert_in_order(second, ["uploaded", f"queued: waiting for {first_id}", "triggered", "step round_0.spark", "succeeded"])
    second_id = re.search(r"== timeline of (orders-recheck-\w+)", output).group(1)
    assert re.search(rf"\[trigger\] control/{second_id}/start-\S+\.json: accepted TRIGGERED", output), output[-4000:]
    listing = output[output.index("== backfill list") :]
    assert re.search(rf"{second_id}\s+SUCCEEDED", listing) and re.search(rf"{first_id}\s+SUCCEEDED", listing), listing
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
