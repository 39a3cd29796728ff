"""The local runner: the job as a child process of the task (the demo and the tests).

Its output is copied to the task log by a thread. Cancel sends SIGTERM (the job stops between
partitions and leaves the warehouse consistent), waits a grace period, then SIGKILL."""

from __future__ import annotations

import logging
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
                argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=self.env
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
