"""The Databricks runner: a one-time run (Jobs API runs/submit) of the generic job on a new job
cluster sized by the profile, through the databricks-sdk WorkspaceClient (passed in)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, ClassVar

from backfill_orchestrator.spark_profiles import DatabricksProfile
from backfill_runtime.runners.base import JobSpec, RunHandle, RunState, RunStatus, SparkSubmissionRefusedError
from backfill_runtime.runners.remote import RemoteRunner

log = logging.getLogger(__name__)
TASK_KEY = "backfill"

# life_cycle_state -> state, for the states that are not TERMINATED (result_state decides there).
LIFE_CYCLE_STATES = {
    "QUEUED": RunState.PENDING,
    "PENDING": RunState.PENDING,
    "BLOCKED": RunState.PENDING,
    "WAITING_FOR_RETRY": RunState.PENDING,
    "RUNNING": RunState.RUNNING,
    "TERMINATING": RunState.RUNNING,
    "SKIPPED": RunState.CANCELLED,
    "INTERNAL_ERROR": RunState.FAILED,
}
RESULT_STATES = {"SUCCESS": RunState.SUCCEEDED, "CANCELED": RunState.CANCELLED}


@dataclass(kw_only=True)
class DatabricksRunner(RemoteRunner[DatabricksProfile]):
    name: ClassVar[str] = "databricks"

    workspace: Any
    instance_profile_arn: str | None = None

    def task(self, spec: JobSpec) -> Any:
        from databricks.sdk.service import compute, jobs

        cluster = compute.ClusterSpec(
            spark_version=self.profile.spark_version,
            node_type_id=self.profile.node_type_id,
            spark_conf=dict(self.profile.spark_conf) or None,
        )
        if self.profile.num_workers is not None:
            cluster.num_workers = self.profile.num_workers
        else:
            cluster.autoscale = compute.AutoScale(
                min_workers=self.profile.min_workers, max_workers=self.profile.max_workers
            )
        if self.instance_profile_arn:  # how the cluster reaches s3:// (no keys in the job)
            cluster.aws_attributes = compute.AwsAttributes(instance_profile_arn=self.instance_profile_arn)
        return jobs.SubmitTask(
            task_key=TASK_KEY,
            new_cluster=cluster,
            spark_python_task=jobs.SparkPythonTask(
                python_file=self.artifacts.entry_point, parameters=spec.arguments
            ),
            libraries=[compute.Library(whl=path) for path in self.artifacts.py_files] or None,
        )

    def submit(self, spec: JobSpec) -> RunHandle:
        from databricks.sdk.errors import DatabricksError

        try:
            waiter = self.workspace.jobs.submit(
                run_name=spec.name,
                tasks=[self.task(spec)],
                idempotency_token=spec.name[:64],  # a retried task does not start the same round twice
                timeout_seconds=self.profile.timeout_minutes * 60,
            )
        except DatabricksError as error:
            raise SparkSubmissionRefusedError(f"Databricks refused the job: {error}") from error
        return RunHandle(runner=self.name, run_id=str(waiter.run_id))

    def poll(self, handle: RunHandle) -> RunStatus:
        state = self.workspace.jobs.get_run(run_id=int(handle.run_id)).state
        life_cycle = state.life_cycle_state.value if state and state.life_cycle_state else "PENDING"
        message = (state.state_message if state else "") or ""
        if life_cycle != "TERMINATED":
            return RunStatus(state=LIFE_CYCLE_STATES.get(life_cycle, RunState.RUNNING), detail=message)
        result = state.result_state.value if state.result_state else "FAILED"
        return RunStatus(
            state=RESULT_STATES.get(result, RunState.FAILED), detail=f"{result}: {message}".rstrip(": ")
        )

    def cancel(self, handle: RunHandle) -> None:
        self.workspace.jobs.cancel_run(run_id=int(handle.run_id))

    def cleanup(self, handle: RunHandle) -> None:
        """A job cluster ends with its run."""
