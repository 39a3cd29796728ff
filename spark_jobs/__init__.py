"""The generic Spark backfill job, the food delivery sample pipeline and reconciliation (docs/spark.md)."""
