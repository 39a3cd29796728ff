"""Cancel and retry one backfill 3,000 times with long reasons: the status record's size and the
cost of a transition while its history moves out of it.

On moto in-process (the status table built from template.yaml), one record with a plan summary
as the trigger writes it goes TRIGGERED -> CANCELLED -> TRIGGERED ... (`CYCLES` cycles, so
6,000 transitions), each entry with a 1,000-character detail and a 200-character principal,
through `StatusStore.transition` (every tenth one also moves ten entries into a chunk item:
status/history.py). The item is read after every cycle: its size as the test harness counts it
(attribute names plus the JSON of their values) and the entries it holds. Then the whole history is read back
(`get(full_history=True)`). The last line is what tooling reads:

    BENCH status_history transitions=... max_item_kb=... final_item_kb=... items_in_record=... chunks=... cpu_ms_per_transition=... full_read_ms=... entries=...

`max_item_kb` is the largest the record got (DynamoDB's limit is 400 KB); `items_in_record`
the most history entries it held; `cpu_ms_per_transition` the process's CPU time per
transition, moto's included (on a shared machine the wall time says more about the
neighbours); `full_read_ms` the wall time of reading all `entries`.

    .venv/bin/python benchmarks/status_history.py
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import boto3
from moto import mock_aws

from backfill_local.template_tables import create_table
from backfill_orchestrator.status import BackfillState, StatusStore
from backfill_orchestrator.status.history import HISTORY_CHUNK

CYCLES = int(os.environ.get("CYCLES", "3000"))
TABLE = "status"
BACKFILL = "orders-outage-june-81a4673a"
LONG = "the partner feed for 2021-06-04 was re-sent after the first run; " * 15
PRINCIPAL = "role/data-platform-oncall-engineers/" + "jane.doe.with.a.very.long.session.name" * 5


def measured(client: Any, key: str) -> tuple[int, int]:
    """The item's size (names plus the JSON of their values) and the history entries it holds."""
    item = client.get_item(TableName=TABLE, Key={"backfill_id": {"S": key}})["Item"]
    return sum(len(name) + len(json.dumps(value)) for name, value in item.items()), len(item["history"]["L"])


def main() -> None:
    for name, value in (("AWS_ACCESS_KEY_ID", "bench"), ("AWS_SECRET_ACCESS_KEY", "bench")):
        os.environ.setdefault(name, value)
    os.environ.pop("AWS_ENDPOINT_URL", None)
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_table(client, "StatusTable", table_name=TABLE)
        store = StatusStore(table_name=TABLE, dynamodb_client=client)
        summary = {"waves": [["etl_orders"], ["etl_orders_7_days", "etl_delivery_7_days"]], "steps": 3}
        store.create(BACKFILL, detail="from s3://configs/incoming/orders.yaml", attributes={"mode": "batch"})
        store.transition(
            BACKFILL, BackfillState.TRIGGERED, detail="DAG run", attributes={"plan_summary": summary}
        )
        largest = most = 0
        cpu = 0.0
        for cycle in range(CYCLES):
            for target, verb in (
                (BackfillState.CANCELLED, "cancelled"),
                (BackfillState.TRIGGERED, "retried"),
            ):
                started = time.process_time()
                store.transition(
                    BACKFILL, target, detail=f"{verb} ({cycle}) by {PRINCIPAL}: {LONG}", by=PRINCIPAL
                )
                cpu += time.process_time() - started
            size, entries = measured(client, BACKFILL)
            largest, most = max(largest, size), max(most, entries)
        final, _ = measured(client, BACKFILL)
        started_wall = time.perf_counter()
        whole = store.get(BACKFILL, full_history=True)
        full_read_ms = (time.perf_counter() - started_wall) * 1000
        assert whole is not None and len(whole.history) == 2 + 2 * CYCLES
        transitions = 2 * CYCLES
        print(
            f"BENCH status_history transitions={transitions} max_item_kb={largest / 1000:.1f} "
            f"final_item_kb={final / 1000:.1f} items_in_record={most} chunks={whole.history_archived // HISTORY_CHUNK} "
            f"cpu_ms_per_transition={cpu / transitions * 1000:.1f} full_read_ms={full_read_ms:.0f} "
            f"entries={len(whole.history)}"
        )


if __name__ == "__main__":
    main()
