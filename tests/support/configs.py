"""The repository's paths and the sample configs tests start from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from backfill_orchestrator.config import parse_config

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = REPO_ROOT / "examples"

VALID_BATCH: dict[str, Any] = {
    "version": 1,
    "name": "orders-outage-june",
    "owner": "jane.doe@example.com",
    "mode": "batch",
    "jobs": [{"namespace": "food_delivery", "name": "etl_orders"}],
    "dates": ["2021-06-04", {"start": "2021-06-10", "end": "2021-06-12"}],
}

VALID_REPLAY: dict[str, Any] = {
    "version": 1,
    "name": "replay-orders",
    "owner": "@orders-team",
    "mode": "replay",
    "dates": ["2021-06-04"],
    "feeds": ["orders"],
    "replay": {"target": "orders-ingest"},
}

# A batch config that asks for its own Slack channel and for pages (the notification tests').
NOTIFIED_CONFIG = parse_config(
    {
        "version": 1,
        "name": "orders-fix",
        "owner": "co@example.com",
        "mode": "batch",
        "jobs": [{"namespace": "food_delivery", "name": "etl_orders"}],
        "dates": ["2021-06-04", {"start": "2021-06-10", "end": "2021-06-12"}],
        "notify": {"slack_channel": "#orders", "pagerduty": True},
    },
    source="t.yaml",
)
