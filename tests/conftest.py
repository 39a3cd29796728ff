"""Shared test helpers. Fixtures that need Spark, Airflow or servers live beside their tests."""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from moto import mock_aws

REPO_ROOT = Path(__file__).resolve().parents[1]

# Every Spark JVM of the test run (the tests' session, the Spark jobs tests and Airflow start, the
# demo) lives for seconds to minutes on kilobytes of data: the serial collector and the C1
# compiler alone take ~40% less CPU than the defaults (measured on the sample warehouse build).
# spark-submit adds SPARK_SUBMIT_OPTS to the driver's JVM options; child processes inherit it.
os.environ.setdefault("SPARK_SUBMIT_OPTS", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
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


# -- scheduling under pytest-xdist (`make test`: `-n N --dist loadgroup`) ---------------------
# Tests that share a session- or module-scoped server stay on one worker (one xdist_group), so
# the run starts each expensive thing once: every Spark test shares one SparkSession and one
# generated warehouse, the SAM tests one `sam build`, the wheel tests one built wheel, and each
# other slow module its own Airflow (their Airflows differ in configuration). The long groups
# are queued first (`--no-loadscope-reorder` keeps this order), so the fast tests fill the
# workers around them instead of waiting behind them at the end.
_SHARED_GROUPS = {
    "tests/spark/": "spark",
    "tests/integration/test_sam.py": "sam",
    "tests/integration/test_replay_template.py": "sam",
    "tests/integration/test_wheel_install.py": "wheel",
    "tests/integration/test_client_wheel_py310.py": "wheel",
}
# Longest first (measured): the demo, the Spark group, then every other slow group.
_FIRST = ("tests/airflow/test_demo.py", "spark")


def _group(item: pytest.Item) -> str | None:
    path = item.nodeid.split("::", 1)[0]
    for prefix, group in _SHARED_GROUPS.items():
        if path.startswith(prefix) and item.get_closest_marker("slow"):
            return group
    return path if item.get_closest_marker("slow") else None


@pytest.hookimpl(tryfirst=True)  # before xdist reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return  # one process: collection order as written
    groups = {}
    for item in items:
        group = groups[item] = _group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))

    def rank(item: pytest.Item) -> int:
        group = groups[item]
        if group in _FIRST:
            return _FIRST.index(group)
        return len(_FIRST) if group is not None else len(_FIRST) + 1

    items.sort(key=rank)  # stable: each module's tests stay together and in order
