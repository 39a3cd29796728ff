"""Spark: `engine/` is the generic backfill job; `sample/` is the food delivery sample pipeline, its data generator and reconciliation (docs/spark.md)."""
