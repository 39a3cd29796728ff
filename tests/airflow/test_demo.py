"""`make demo` end to end: moto, the Marquez double, receivers, a real Airflow 3, the real
Spark job and the sample DAGs; it must pass and leave no process behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from .conftest import REPO

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def test_the_demo_runs_the_whole_flow_and_repairs_the_data(tmp_path: Path) -> None:
    env = {**os.environ, "DEMO_WORKDIR": str(tmp_path / "demo")}
    for name in ("DEMO_AWS_ENDPOINT_URL", "DEMO_MARQUEZ_URL", "DEMO_AIRFLOW_URL", "AWS_ENDPOINT_URL"):
        env.pop(name, None)
    result = subprocess.run(
        [sys.executable, "-m", "backfill_local.demo"], cwd=REPO, env=env, capture_output=True, text=True, timeout=1700
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    for expected in (
        "== timeline",
        "uploaded s3://backfill-configs-local/incoming/orders-outage-june-",
        "validated and planned",
        "triggered",
        "step round_0.spark",
        "step round_1.dag_runs orders_popular_day_of_week",
        "succeeded",
        "== Slack messages",
        "result file beside the config: SUCCEEDED, ",
        "orders: ",
        "demo passed",
    ):
        assert expected in output, (expected, output[-4000:])
    assert "missing 0, unexpected 0" in output
    assert leftover_processes(tmp_path) == []


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
