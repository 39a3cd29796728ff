"""Test DAGs (airflow): rerun targets that cost nothing. Their only task is an EmptyOperator,
which the scheduler marks success without starting a process, so a backfill can rerun them
hundreds of times in a test (tests/airflow/test_deep_plans.py)."""

import pendulum
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG

for suffix in ("a", "b", "c"):
    with DAG(
        dag_id=f"noop_target_{suffix}",
        schedule=None,
        start_date=pendulum.datetime(2015, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1024,
    ):
        EmptyOperator(task_id="done")
