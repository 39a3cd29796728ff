"""The food delivery sample's DAG-owned jobs (`orders_popular_day_of_week`, `email_discounts`):
stand-ins for another team's daily DAGs that a backfill reruns for some dates.

Each run writes what it did for its date to `<output dir>/<dag_id>/<YYYY-MM-DD>.json` (one
file per date, rewritten by a rerun), so the demo and the tests can see which dates ran, how
often, and for which backfill. Output dir: env `BACKFILL_SAMPLE_OUTPUT_DIR`, default
`$AIRFLOW_HOME/sample_outputs`."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pendulum
from airflow.sdk import DAG, get_current_context, task


def output_dir() -> Path:
    configured = os.environ.get("BACKFILL_SAMPLE_OUTPUT_DIR")
    if configured:
        return Path(configured)
    return Path(os.environ.get("AIRFLOW_HOME", Path.home() / "airflow")) / "sample_outputs"


def record_run(*, dag_id: str, inputs: list[str]) -> dict[str, Any]:
    context = get_current_context()
    day = context["logical_date"].date().isoformat()
    path = output_dir() / dag_id / f"{day}.json"
    previous = json.loads(path.read_text()) if path.exists() else {"runs": 0}
    record = {
        "dag_id": dag_id,
        "date": day,
        "run_id": context["run_id"],
        "backfill_id": (context["dag_run"].conf or {}).get("backfill_id"),
        "inputs": inputs,
        "runs": previous["runs"] + 1,
        "finished_at": datetime.now(UTC).isoformat(),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n")
    return record


def sample_dag(*, dag_id: str, inputs: list[str], description: str) -> DAG:
    """A daily DAG of one task; not scheduled here (schedule=None) so only reruns start it."""
    with DAG(
        dag_id=dag_id,
        description=description,
        schedule=None,
        start_date=pendulum.datetime(2021, 1, 1, tz="UTC"),
        catchup=False,
        tags=["food_delivery", "sample"],
    ) as dag:

        @task(task_id="compute")
        def compute() -> dict[str, Any]:
            return record_run(dag_id=dag_id, inputs=inputs)

        compute()
    return dag
