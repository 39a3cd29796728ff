"""The runner interface and the loop that drives it.

A runner submits one Spark job (one round's sub-plan), tells its state, cancels it, and cleans
up what it created (an EMR cluster). The job's verdict per step is its run report, read
through the contract; the runner's state only says whether the job ran to its end."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from backfill_orchestrator.contracts import RunReport
from backfill_orchestrator.documents import DocumentNotFoundError, read_text
from backfill_orchestrator.errors import ServiceError, UserError

log = logging.getLogger(__name__)


class RunState(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        return self in (RunState.SUCCEEDED, RunState.FAILED, RunState.CANCELLED)


@dataclass(frozen=True, kw_only=True)
class JobSpec:
    """One submission of the generic job: its arguments and a name unique to the round."""

    name: str
    plan_uri: str
    warehouse_uri: str
    report_uri: str
    publish_policy_uri: str | None = (
        None  # the plan's publish policy (safe publish); None: the job's defaults
    )
    publish_root: str | None = None  # `[backfill] publish_root`; None: the job's default, WAREHOUSE/_backfill

    @property
    def arguments(self) -> list[str]:
        arguments = ["--plan", self.plan_uri, "--warehouse", self.warehouse_uri, "--report", self.report_uri]
        if self.publish_policy_uri:
            arguments += ["--publish-policy", self.publish_policy_uri]
        if self.publish_root:
            arguments += ["--publish-root", self.publish_root]
        return arguments


@dataclass(frozen=True, kw_only=True)
class RunHandle:
    runner: str
    run_id: str
    details: dict[str, Any] = field(default_factory=dict)  # cluster id, application id, process


@dataclass(frozen=True, kw_only=True)
class RunStatus:
    state: RunState
    detail: str = ""


class SparkRunner(Protocol):
    @property
    def name(self) -> str: ...  # the runner's kind, a class attribute

    def submit(self, spec: JobSpec) -> RunHandle: ...
    def poll(self, handle: RunHandle) -> RunStatus: ...
    def cancel(self, handle: RunHandle) -> None: ...
    def cleanup(self, handle: RunHandle) -> None: ...


class SparkSubmissionRefusedError(ServiceError):
    """The service refused the submission (bad role, quota, unknown application): nothing ran."""


class SparkJobInputError(UserError):
    """The job refused its input (exit 2): retrying cannot help."""


class SparkRunFailedError(ServiceError):
    """The job ended failed (some step failed, or it died); its run report says which steps."""


class SparkRunTimedOutError(ServiceError):
    """The job ran past its timeout; it was cancelled."""


class SparkRunCancelledError(ServiceError):
    """The job was cancelled (by the backfill's cancel, or by someone on the service)."""


def run_to_completion(
    runner: SparkRunner,
    spec: JobSpec,
    *,
    timeout_seconds: float,
    poll_seconds: float = 30.0,
    on_submitted: Callable[[RunHandle], None] = lambda handle: None,
    should_cancel: Callable[[], bool] = lambda: False,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> RunHandle:
    """Submit, wait for the end, clean up; returns on success, raises one of the errors above.

    `should_cancel` is asked at every poll (the backfill's cancel): the run is cancelled and
    SparkRunCancelledError raised. Any exception while waiting (the task being killed included)
    cancels the run first, so nothing is left running on the service."""
    handle = runner.submit(spec)
    log.info("%s: submitted %s as %s %s", runner.name, spec.name, handle.run_id, handle.details)
    on_submitted(handle)
    deadline = clock() + timeout_seconds
    finished = False
    try:
        while True:
            status = runner.poll(handle)
            if status.state.terminal:
                finished = True
                break
            if should_cancel():
                _cancel(runner, handle)
                finished = True
                raise SparkRunCancelledError(f"{runner.name} run {handle.run_id} cancelled with the backfill")
            if clock() >= deadline:
                _cancel(runner, handle)
                finished = True
                raise SparkRunTimedOutError(
                    f"{runner.name} run {handle.run_id} ran longer than {timeout_seconds:.0f} s and was cancelled"
                )
            sleep(poll_seconds)
    finally:
        if not finished:
            _cancel(runner, handle)
        runner.cleanup(handle)
    log.info("%s: run %s %s %s", runner.name, handle.run_id, status.state, status.detail)
    if status.state is RunState.CANCELLED:
        raise SparkRunCancelledError(
            f"{runner.name} run {handle.run_id} was cancelled: {status.detail}".rstrip(": ")
        )
    if status.state is RunState.FAILED:
        raise SparkRunFailedError(
            f"{runner.name} run {handle.run_id} failed: {status.detail or 'see its logs'}"
        )
    return handle


def _cancel(runner: SparkRunner, handle: RunHandle) -> None:
    try:
        runner.cancel(handle)
    except Exception:  # noqa: BLE001 - cancelling is best effort; the original failure matters more
        log.exception("%s: could not cancel run %s", runner.name, handle.run_id)


def read_run_report(report_uri: str, *, s3_client: Any = None) -> RunReport | None:
    """The job's run report, or None when it wrote none; InvalidDocumentError when unreadable."""
    try:
        return RunReport.from_json(read_text(report_uri, s3_client=s3_client), source=report_uri)
    except DocumentNotFoundError:
        return None
