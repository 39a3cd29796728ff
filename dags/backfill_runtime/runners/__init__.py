"""Where the generic Spark job runs: one interface (`SparkRunner`), one class per place
(local child process, EMR Serverless, EMR on EC2, Databricks), and `run_to_completion`, which
drives any of them and maps what happened to one of the step outcomes."""

from backfill_runtime.runners.base import (
    JobSpec,
    RunHandle,
    RunState,
    RunStatus,
    SparkRunCancelledError,
    SparkRunFailedError,
    SparkRunner,
    SparkRunTimedOutError,
    SparkSubmissionRefusedError,
    read_run_report,
    run_to_completion,
)

__all__ = [
    "JobSpec",
    "RunHandle",
    "RunState",
    "RunStatus",
    "SparkRunCancelledError",
    "SparkRunFailedError",
    "SparkRunTimedOutError",
    "SparkRunner",
    "SparkSubmissionRefusedError",
    "read_run_report",
    "run_to_completion",
]
