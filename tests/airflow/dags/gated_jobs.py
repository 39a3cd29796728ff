"""Test DAGs (airflow): DAG-owned jobs whose runs hold while <BACKFILL_SAMPLE_OUTPUT_DIR>/hold
exists (at most 120 s), so a test can cancel, kill or cut off Airflow while reruns of them
run. Each run's task records its pid (`<outputs>/<dag id>/<date>.pid`, one line per start),
then `<date>.done` when it ends. Its retries are a production DAG's: a restart of Airflow
costs the task it interrupts a try, and a task started before the api-server is back another."""

import os
import time
from datetime import timedelta
from pathlib import Path

import pendulum
from airflow.sdk import DAG, get_current_context, task

for dag_id in ("gated_report", "late_report"):
    with DAG(dag_id=dag_id, schedule=None, start_date=pendulum.datetime(2021, 1, 1, tz="UTC"), catchup=False):

        @task(task_id="compute", retries=2, retry_delay=timedelta(seconds=15))
        def compute() -> None:
            context = get_current_context()
            out = Path(os.environ["BACKFILL_SAMPLE_OUTPUT_DIR"])
            day = context["logical_date"].date().isoformat()
            mine = out / context["dag"].dag_id
            mine.mkdir(parents=True, exist_ok=True)
            with (mine / f"{day}.pid").open("a") as pids:
                pids.write(f"{os.getpid()}\n")
            give_up = time.monotonic() + 120
            while (out / "hold").exists() and time.monotonic() < give_up:
                time.sleep(0.3)
            (mine / f"{day}.done").write_text("done")

        compute()
