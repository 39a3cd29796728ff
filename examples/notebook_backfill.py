# Databricks notebook source
# MAGIC %md
# MAGIC # Backfill from a notebook
# MAGIC
# MAGIC Validate a backfill config, see what it would rerun, submit it, and follow it.
# MAGIC Install once per cluster: `%pip install backfill-orchestrator` (planning against
# MAGIC Marquez included). Credentials are the cluster's (its instance profile, boto3's default
# MAGIC chain); pass `session=boto3.Session(...)` to use others.
# MAGIC
# MAGIC The settings below come from the environment so the same notebook runs as plain Python
# MAGIC (the test suite runs it against moto and the Marquez double); on a cluster, set them in
# MAGIC the cluster's environment variables or replace them with literals.

# COMMAND ----------

import os

from backfill_orchestrator.client import (
    BackfillNotFoundError,
    backfill_status,
    list_backfills,
    plan_backfill,
    submit_backfill,
    validate_backfill,
)
from backfill_orchestrator.config import InvalidConfigError

BUCKET = os.environ.get("BACKFILL_BUCKET", "acme-backfill-configs-prod")
STATUS_TABLE = os.environ.get("STATUS_TABLE", "backfill-status")
MARQUEZ_URL = os.environ.get("MARQUEZ_URL", "https://marquez.internal.example.com")
# The job catalog: a local path, /Volumes/<catalog>/<schema>/<volume>/..., dbfs:/... or s3://...
CATALOG = os.environ.get("BACKFILL_JOB_CATALOG", "/Volumes/main/backfill/config/catalog.yaml")

# COMMAND ----------

# MAGIC %md
# MAGIC ## The config
# MAGIC A dict (as here), YAML or JSON text, or a path: `validate_backfill("/Volumes/main/ops/configs/orders.yaml")`.

# COMMAND ----------

config = {
    "version": 1,
    "name": "orders-outage-june",
    "owner": "jane.doe@example.com",
    "mode": "batch",
    "jobs": [{"namespace": "food_delivery", "name": "etl_orders"}],
    "dates": ["2021-06-04", {"start": "2021-06-10", "end": "2021-06-12"}],
    "hours": [0, 1, 2, 13],
}

try:
    validated = validate_backfill(config)
except InvalidConfigError as error:
    for issue in error.issues:  # every located problem at once
        print(f"{issue.location}: {issue.message}")
    raise
print(f"valid: {validated.name}, {len(validated.days)} days")

# COMMAND ----------

# MAGIC %md
# MAGIC ## The plan
# MAGIC What would rerun, for which dates, in which order. As a cell's last expression `plan`
# MAGIC renders as a table; `print(plan)` gives the text the CLI prints.

# COMMAND ----------

plan = plan_backfill(config, marquez_url=MARQUEZ_URL, catalog=CATALOG)
print(plan)

# COMMAND ----------

# MAGIC %md
# MAGIC ## Submit
# MAGIC `wait=True` would follow it here until it ends (as `backfill submit --wait` does).

# COMMAND ----------

submission = submit_backfill(config, bucket=BUCKET)
print(f"submitted {submission.backfill_id} to {submission.s3_uri}")

# COMMAND ----------

# MAGIC %md
# MAGIC ## Follow it
# MAGIC `watch_backfill(id, table=...)` prints a line per change until it ends;
# MAGIC `cancel_backfill(id, reason=..., bucket=...)` and `retry_backfill(...)` act on it.

# COMMAND ----------

for record in list_backfills(table=STATUS_TABLE, owner="jane.doe@example.com", limit=10):
    print(f"{record.backfill_id}  {record.state}  {record.created_at[:19]}")

try:
    status = backfill_status(submission.backfill_id, table=STATUS_TABLE)
    print(f"status of {status.backfill_id}: {status.state}")
except BackfillNotFoundError:
    print(f"{submission.backfill_id} has not been picked up yet; run this cell again")
