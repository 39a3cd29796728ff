"""Test DAG (airflow): one no-op task, for the trigger's real-Airflow test
(tests/integration/test_trigger_real_airflow.py)."""

from datetime import datetime

from airflow.sdk import dag, task


@dag(dag_id="trigger_probe", schedule=None, start_date=datetime(2021, 1, 1), catchup=False)
def probe():
    @task
    def noop():
        return None

    noop()


probe()
