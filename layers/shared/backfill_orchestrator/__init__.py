"""Backfill orchestrator: config contract, lineage planner, triggers and notifications.

This package is what the Lambda layer ships; the CLI, the Python client, the Spark job
and the Airflow DAG import the same code.
"""

__version__ = "0.1.0"
