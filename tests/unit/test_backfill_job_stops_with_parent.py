"""The backfill job started by the DAG's local runner stops as on SIGTERM when its task process
is gone (runners/local.py starts it in its own session, out of reach of Airflow's group kill)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from spark_jobs.engine import backfill_job


class FakeContext:
    def __init__(self) -> None:
        self.cancelled = threading.Event()

    def cancelAllJobs(self) -> None:  # noqa: N802 - SparkContext's name
        self.cancelled.set()


class FakeSpark:
    def __init__(self) -> None:
        self.sparkContext = FakeContext()


@pytest.fixture
def restore_sigterm() -> Iterator[None]:
    previous = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, previous)


def test_a_gone_parent_cancels_the_running_jobs_and_stops_new_steps(
    restore_sigterm: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BACKFILL_STOP_WITH_PARENT", "1")
    monkeypatch.setattr(backfill_job, "PARENT_POLL_SECONDS", 0.05)
    parents = iter([4242])  # the parent when the job starts; later calls: the re-parenting (init)
    monkeypatch.setattr(backfill_job.os, "getppid", lambda: next(parents, 1))
    spark: Any = FakeSpark()
    stop = backfill_job.stop_on_sigterm(spark)
    assert spark.sparkContext.cancelled.wait(5)
    assert stop.is_set()
    assert "its task process is gone: cancelling the running Spark jobs" in capsys.readouterr().err


def test_without_the_variable_only_sigterm_stops_it(
    restore_sigterm: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BACKFILL_STOP_WITH_PARENT", raising=False)
    monkeypatch.setattr(backfill_job, "PARENT_POLL_SECONDS", 0.05)
    monkeypatch.setattr(backfill_job.os, "getppid", iter([4242, *[1] * 100]).__next__)
    spark: Any = FakeSpark()
    stop = backfill_job.stop_on_sigterm(spark)
    assert not spark.sparkContext.cancelled.wait(0.3) and not stop.is_set()
    signal.getsignal(signal.SIGTERM)(signal.SIGTERM, None)
    assert stop.is_set() and spark.sparkContext.cancelled.is_set()
