"""The generic Spark backfill engine: plan, scoped reads, transforms, dynamic overwrite, run report (docs/spark.md)."""
