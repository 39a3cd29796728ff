"""Shared fixtures (helpers and fakes are in tests/support). Fixtures that need Spark, Airflow or
servers live beside their tests."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from moto import mock_aws

from backfill_local.local_spark import use_local_spark_defaults
from tests.support.airflow import BUCKET, REPO, AirflowStack, AwsLocal, StackKeeper, stop_unused_stacks
from tests.support.aws import parse_botocore_data_once
from tests.support.configs import VALID_BATCH, VALID_REPLAY

# Every Spark JVM of the test run (the tests' sessions, the Spark jobs that tests and Airflow
# start, the demo) reads the local tuning: file writes without a forked `chmod` per file, the
# serial collector and C1, Spark's classes from an archive (backfill_local.local_spark; the
# archive is dumped here, once per virtualenv). Set here, in the controller before any worker,
# JVM or Airflow starts, so every child process inherits it.
use_local_spark_defaults()
# moto gives each test a new botocore session: its data files parsed once per process instead
parse_botocore_data_once()


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


# -- one Airflow for the modules that share it ---------------------------------------------------
def _shared_options(aws: AwsLocal, root: Path) -> dict[str, str]:
    """One `[backfill]` configuration for test_backfill_dag, test_reconciliation_run and
    test_trigger_real_airflow (tests/support/airflow.py's defaults, plus the reconciliation
    DAG's own options and AWS connection)."""
    return {
        "AIRFLOW__BACKFILL__RECONCILIATION_RULES": str(REPO / "examples" / "reconciliation.yaml"),
        "AIRFLOW__BACKFILL__RECONCILIATION_CATALOG": str(REPO / "examples" / "catalog.yaml"),
        "AIRFLOW__BACKFILL__CONFIG_BUCKET": BUCKET,
        "AIRFLOW__BACKFILL__RECONCILIATION_WINDOW_DAYS": "4",
        "AIRFLOW__BACKFILL__RECONCILIATION_TIMEOUT_SECONDS": "600",
        # The reconciliation DAG's own identity; here a connection to moto with its own (fake) keys.
        "AIRFLOW_CONN_AWS_RECONCILIATION": json.dumps(
            {
                "conn_type": "aws",
                "login": "reconciler",
                "password": "reconciler-secret",
                "extra": {"endpoint_url": aws.endpoint, "region_name": "us-east-1"},
            }
        ),
    }


SHARED_AIRFLOW = StackKeeper(
    "shared-airflow",
    options=_shared_options,
    wait_for=(
        "backfill",
        "orders_popular_day_of_week",
        "email_discounts",
        "always_fails",
        "reconciliation",
        "trigger_probe",
    ),
)


@pytest.fixture(scope="module")
def shared_airflow(tmp_path_factory: pytest.TempPathFactory) -> AirflowStack:
    """The Airflow that test modules with compatible settings share (one xdist unit, below):
    booted for the first of them, stopped after the last (`pytest_runtest_teardown`)."""
    return SHARED_AIRFLOW.get(tmp_path_factory.getbasetemp())


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """After a test's own teardown: stop a kept stack that the next test does not use."""
    yield
    stop_unused_stacks(_KEEPERS, item, nextitem)


_KEEPERS: dict[str, StackKeeper] = {"shared_airflow": SHARED_AIRFLOW}


# -- scheduling under pytest-xdist (`make test`: `-n N --dist loadscope --no-loadscope-reorder`) --
# A worker runs whole units: each test module is one (its module-scoped Airflow, moto server or
# receivers start once), and modules sharing a session-scoped resource are one together: every
# Spark module shares one SparkSession and one generated warehouse, the SAM modules one `sam
# build`, the wheel modules one built wheel, the modules of `shared_airflow` one Airflow. (xdist's
# own `loadgroup` cannot do this with pytest >= 9.2: pytest-dev/pytest-xdist#1386.) The long
# units are queued first, so the fast modules fill the workers around them instead of waiting
# behind them at the end.
_SHARED_UNITS = {
    "tests/spark/": "spark",
    "tests/airflow/test_backfill_dag.py": "shared-airflow",
    "tests/airflow/test_reconciliation_run.py": "shared-airflow",
    "tests/integration/test_trigger_real_airflow.py": "shared-airflow",
    "tests/integration/test_sam.py": "sam",
    "tests/integration/test_replay_template.py": "sam",
    "tests/integration/test_wheel_install.py": "wheel",
    "tests/integration/test_client_wheel_py310.py": "wheel",
}
# Longest first. The real-Airflow fault modules lead: mostly waiting (outage budgets of 60 and 180 s,
# retry delays, components restarting; 322 and 416 s under `make test`), each on its own worker
# with its own Airflow (tests/faults/conftest.py), beside the CPU-bound
# rest. Queued after the others, they ran one after the other at the end with three workers
# idle. Then by CPU-s and wall alone, measured one at a time on an idle machine: the demo 175
# and 169 s, the Spark tests 183 and 219, the lifecycle 156 and 174, the deep plans 104 and
# 137; every other slow module next, then the fast ones. On 2 cores the rest is CPU-bound:
# what starts last must be short, or one core idles while it finishes.
_FIRST = (
    "tests/faults/test_airflow_api_outage.py",
    "tests/faults/test_airflow_restarts.py",
    "tests/airflow/test_demo.py",
    "spark",
    "tests/airflow/test_lifecycle_airflow.py",
    "tests/airflow/test_deep_plans.py",
)


def _unit(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    return next((unit for prefix, unit in _SHARED_UNITS.items() if path.startswith(prefix)), path)


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    if config.getoption("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedResourceScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _unit(nodeid)

    return SharedResourceScheduling(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On xdist workers: the order in which units are queued (the same on every worker)."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return  # one process: collection order as written

    def rank(item: pytest.Item) -> int:
        unit = _unit(item.nodeid)
        if unit in _FIRST:
            return _FIRST.index(unit)
        return len(_FIRST) + (0 if item.get_closest_marker("slow") else 1)

    items.sort(key=rank)  # stable: each module's tests stay together and in order
    # xdist hands each worker a second unit at the start when its first has at most 2 tests:
    # the worker that draws the demo (one long test) then holds a fast module, not a slow one
    # that another worker could have started at once.
    workers = getattr(config, "workerinput", {}).get("workercount", 1)
    starts = [i for i, item in enumerate(items) if i == 0 or _unit(item.nodeid) != _unit(items[i - 1].nodeid)]
    first_fast = next((i for i in starts if rank(items[i]) == len(_FIRST) + 1), None)
    if first_fast is not None and len(starts) > workers and first_fast > starts[workers]:
        fast_unit = _unit(items[first_fast].nodeid)
        moved = [item for item in items[first_fast:] if _unit(item.nodeid) == fast_unit]
        rest = [item for item in items if _unit(item.nodeid) != fast_unit]
        position = starts[workers]
        items[:] = rest[:position] + moved + rest[position:]
