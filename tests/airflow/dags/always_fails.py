"""Test DAG (airflow): a DAG-owned job whose every run fails, to see a failed airflow_dag step
stop its dependants."""

import pendulum
from airflow.sdk import DAG, task

with DAG(
    dag_id="always_fails", schedule=None, start_date=pendulum.datetime(2021, 1, 1, tz="UTC"), catchup=False
):

    @task(task_id="compute", retries=0)
    def compute() -> None:
        raise RuntimeError("always_fails: this DAG fails on purpose")

    compute()
