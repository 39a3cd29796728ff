"""The food delivery sample pipeline: its tables, transforms, data generator and reconciliation (docs/spark.md)."""
