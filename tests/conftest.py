"""Shared test helpers. Fixtures that need Spark, Airflow or servers live beside their tests."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from moto import mock_aws

REPO_ROOT = Path(__file__).resolve().parents[1]
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


@pytest.fixture
def batch_config() -> dict[str, Any]:
    return copy.deepcopy(VALID_BATCH)


@pytest.fixture
def replay_config() -> dict[str, Any]:
    return copy.deepcopy(VALID_REPLAY)


@pytest.fixture
def mocked_aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """moto in-process, with fake credentials, and no endpoint or profile leaking in from the shell."""
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        yield
