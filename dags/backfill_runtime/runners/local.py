"""The local runner: the job as a child process of the task (the demo and the tests).

Its output is copied to the task log by a thread. Cancel sends SIGTERM (the job stops between
partitions and leaves the warehouse consistent), waits a grace period, then SIGKILL.

The job runs in its own session: Airflow stops a task by signalling its process group and
SIGKILLs the group 5 s later, which would catch a job in the middle of its commit (a dynamic
partition overwrite deletes each old partition, then moves the new one in) and lose partitions.
Only this runner signals the job; if the task process dies before it could, the job sees its
parent gone (BACKFILL_STOP_WITH_PARENT) and stops as on SIGTERM."""

from __future__ import annotations

import logging
import os
import subprocess
import threading
from collections.abc import Mapping, Sequence

from backfill_runtime.runners.base import (
    JobSpec,
    RunHandle,
    RunState,
    RunStatus,
    SparkJobInputError,
    SparkSubmissionRefusedError,
)

EXIT_OK, EXIT_STEP_FAILED, EXIT_BAD_INPUT = 0, 1, 2
STOP_WITH_PARENT_VARIABLE = "BACKFILL_STOP_WITH_PARENT"  # read by spark_jobs/engine/backfill_job.py
log = logging.getLogger(__name__)


class LocalRunner:
    name = "local"

    def __init__(
        self, *, command: Sequence[str], grace_seconds: float = 30.0, env: Mapping[str, str] | None = None
    ):
        self.command = list(command)
        self.grace_seconds = grace_seconds
        self.env = env
        self._processes: dict[str, subprocess.Popen[str]] = {}
        self._cancelled: set[str] = set()

    def submit(self, spec: JobSpec) -> RunHandle:
        argv = [*self.command, *spec.arguments]
        log.info("running %s", " ".join(argv))
        try:
            process = subprocess.Popen(
                argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                env={**(self.env if self.env is not None else os.environ), STOP_WITH_PARENT_VARIABLE: "1"},
                start_new_session=True,
            )
        except OSError as error:
            raise SparkSubmissionRefusedError(
                f"cannot start the Spark job {argv[0]!r}: {error.strerror}"
            ) from error
        threading.Thread(target=_copy_output, args=(process,), daemon=True).start()
        run_id = str(process.pid)
        self._processes[run_id] = process
        return RunHandle(runner=self.name, run_id=run_id, details={"pid": process.pid})

    def poll(self, handle: RunHandle) -> RunStatus:
        code = self._processes[handle.run_id].poll()
        if code is None:
            return RunStatus(state=RunState.RUNNING)
        if handle.run_id in self._cancelled:
            return RunStatus(state=RunState.CANCELLED, detail=f"stopped (exit {code})")
        if code == EXIT_OK:
            return RunStatus(state=RunState.SUCCEEDED)
        if code == EXIT_BAD_INPUT:
            raise SparkJobInputError("the Spark job refused its input (exit 2); see the log above")
        if code == EXIT_STEP_FAILED:
            return RunStatus(state=RunState.FAILED, detail="exit 1: some step failed; see the run report")
        return RunStatus(state=RunState.FAILED, detail=f"exit {code}: the job died without a verdict")

    def cancel(self, handle: RunHandle) -> None:
        process = self._processes[handle.run_id]
        if process.poll() is not None:
            return
        self._cancelled.add(handle.run_id)
        process.terminate()
        try:
            process.wait(timeout=self.grace_seconds)
        except subprocess.TimeoutExpired:
            log.warning("the Spark job did not stop within %.0f s of SIGTERM: killing it", self.grace_seconds)
            process.kill()
            process.wait()

    def cleanup(self, handle: RunHandle) -> None:
        process = self._processes.pop(handle.run_id, None)
        if process is not None and process.poll() is None:  # never leave Spark running
            process.kill()
            process.wait()


def _copy_output(process: subprocess.Popen[str]) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        log.info("spark: %s", line.rstrip())
