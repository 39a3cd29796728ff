"""The local Airflow 3 runner boots a real api-server, scheduler and dag-processor, serves
`/auth/token`, parses the repository's DAGs with no import errors, and stops every process."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest
import requests

from backfill_local.airflow_local import LocalAirflow
from tests.support.airflow import DAGS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def test_boots_serves_tokens_parses_our_dags_and_stops_cleanly(tmp_path: Path) -> None:
    home = tmp_path / "home"
    airflow = LocalAirflow(dags_folder=DAGS, home=home)
    with airflow:
        token = airflow.token()
        assert token.count(".") == 2  # a JWT

        # Wrong password: refused, so the token above proves the configured user works.
        answer = requests.post(
            f"{airflow.url}/auth/token", json={"username": "admin", "password": "nope"}, timeout=10
        )
        assert answer.status_code in (401, 403)
        assert requests.get(f"{airflow.url}/api/v2/dags", timeout=10).status_code in (401, 403)

        dags = airflow.wait_for_dags(["backfill", "orders_popular_day_of_week", "email_discounts"])
        assert airflow.import_errors() == []
        assert not any(dag_id.startswith("example_") for dag_id in dags)  # no example DAGs
        assert dags["backfill"]["is_paused"] is False
        tasks = airflow.api("GET", "/dags/backfill/tasks")["tasks"]
        assert {"start", "round_0.prepare", "round_0.spark", "round_0.dag_runs", "finish"} <= {
            t["task_id"] for t in tasks
        }

        pids = airflow.pids()
        rss = airflow.memory_rss_bytes()
        print(f"\nlocal Airflow: boot {airflow.boot_seconds:.1f} s, RSS {rss / 2**20:.0f} MiB, pids {pids}")
        assert len(pids) == 3
        children = [c.pid for pid in pids for c in psutil.Process(pid).children(recursive=True)]
    for pid in [*pids, *children]:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, pid
    with pytest.raises(requests.ConnectionError):
        requests.get(f"{airflow.url}/api/v2/monitor/health", timeout=3)


def test_a_component_that_cannot_start_fails_the_boot_and_leaves_nothing_running(tmp_path: Path) -> None:
    from backfill_local.airflow_local import AirflowBootError

    airflow = LocalAirflow(
        dags_folder=DAGS,
        home=tmp_path / "home",
        boot_timeout=60,
        extra_env={"AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": "sqlite:////nonexistent-dir/airflow.db"},
    )
    with pytest.raises(AirflowBootError, match="migrate"):
        airflow.start()
    assert airflow.pids() == []
