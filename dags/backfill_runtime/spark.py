"""One Spark submission of the generic job (`spark_jobs.engine.backfill_job`) for one round: its
arguments and the local runner. Its run report is read through the contract
(`backfill_orchestrator.contracts.RunReport`).

Exit codes of the job: 0 every step succeeded, 1 some step failed or was blocked, 2 bad input
(retrying cannot help)."""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Mapping, Sequence

from backfill_orchestrator.errors import ServiceError, UserError

EXIT_OK, EXIT_STEP_FAILED, EXIT_BAD_INPUT = 0, 1, 2

log = logging.getLogger(__name__)


class SparkInputError(UserError, ValueError):
    """The job refused its input (exit 2): the sub-plan or warehouse is unusable; no retry helps."""


class SparkStepsFailedError(ServiceError, RuntimeError):
    """The job ran and some step failed (exit 1), or it died without a verdict."""


def job_arguments(*, plan_uri: str, warehouse_uri: str, report_uri: str) -> list[str]:
    return ["--plan", plan_uri, "--warehouse", warehouse_uri, "--report", report_uri]


STOP_GRACE_SECONDS = 60  # a commit under way finishes well within this


def stop_gracefully(process: subprocess.Popen, *, grace: float) -> None:
    """SIGTERM first: the job cancels its Spark jobs (aborting uncommitted writes) and lets a
    commit under way finish, so partitions are never half-written; SIGKILL after `grace`."""
    process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        log.warning("the Spark job did not stop within %.0f s of SIGTERM: killing it", grace)
        process.kill()
        process.wait()


def run_local(
    command: Sequence[str], arguments: Sequence[str], *, timeout: float, env: Mapping[str, str] | None = None
) -> None:
    """Run the job as a child process, its output going to the task log; raise on failure."""
    argv = [*command, *arguments]
    log.info("running %s", " ".join(argv))
    try:
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    except OSError as error:
        raise SparkInputError(f"cannot start the Spark job {argv[0]!r}: {error.strerror}") from error
    assert process.stdout is not None
    try:
        for line in process.stdout:
            log.info("spark: %s", line.rstrip())
        code = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise SparkStepsFailedError(
            f"the Spark job ran longer than {timeout:.0f} s and was stopped"
        ) from None
    finally:
        if process.poll() is None:  # the task was interrupted (a cancel): do not leave Spark running
            stop_gracefully(process, grace=STOP_GRACE_SECONDS)
    if code == EXIT_BAD_INPUT:
        raise SparkInputError("the Spark job refused its input (exit 2); see the log above")
    if code != EXIT_OK:
        raise SparkStepsFailedError(f"the Spark job exited {code}: some step failed; see the run report")
