"""What the `backfill` DAG runs, kept out of the DAG file so it can be tested without Airflow.

Lives in the DAGs folder (on `sys.path` in every Airflow component, MWAA included) and is
excluded from DAG parsing by `.airflowignore`."""
