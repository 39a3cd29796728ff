"""One Spark submission of the generic job (`spark_jobs.engine.backfill_job`) for one round: its
arguments, the local runner, and reading its run report.

Exit codes of the job: 0 every step succeeded, 1 some step failed or was skipped, 2 bad input
(retrying cannot help)."""

from __future__ import annotations

import json
import logging
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

from backfill_runtime.ledger import BLOCKED, FAILED, SUCCEEDED

EXIT_OK, EXIT_STEP_FAILED, EXIT_BAD_INPUT = 0, 1, 2
_STATUS = {"succeeded": SUCCEEDED, "failed": FAILED, "skipped": BLOCKED}
# The report's numbers worth showing in notifications and the backfill report.
FIGURES = ("seconds", "rows_in", "rows_out", "partitions_written_count")

log = logging.getLogger(__name__)


class SparkInputError(ValueError):
    """The job refused its input (exit 2): the sub-plan or warehouse is unusable; no retry helps."""


class SparkStepsFailedError(RuntimeError):
    """The job ran and some step failed (exit 1), or it died without a verdict."""


def job_arguments(*, plan_uri: str, warehouse_uri: str, report_uri: str) -> list[str]:
    return ["--plan", plan_uri, "--warehouse", warehouse_uri, "--report", report_uri]


def run_local(command: Sequence[str], arguments: Sequence[str], *, timeout: float, env: Mapping[str, str] | None = None) -> None:
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
        raise SparkStepsFailedError(f"the Spark job ran longer than {timeout:.0f} s and was stopped") from None
    finally:
        if process.poll() is None:  # the task was interrupted: do not leave Spark running
            process.kill()
            process.wait()
    if code == EXIT_BAD_INPUT:
        raise SparkInputError("the Spark job refused its input (exit 2); see the log above")
    if code != EXIT_OK:
        raise SparkStepsFailedError(f"the Spark job exited {code}: some step failed; see the run report")


def report_steps(report_text: str) -> dict[str, dict[str, Any]]:
    """step id -> {status, detail, figures} from the job's run report (report_version 1)."""
    report = json.loads(report_text)
    steps: dict[str, dict[str, Any]] = {}
    for step in report.get("steps", []):
        status = _STATUS.get(step.get("status"), FAILED)
        if status == BLOCKED:
            detail = f"not run: upstream {', '.join(step.get('blocked_by') or ['?'])} did not succeed"
        else:
            detail = step.get("error")
        figures = {key: step[key] for key in FIGURES if key in step}
        steps[step["id"]] = {"status": status, "detail": detail, "figures": figures}
    return steps
