"""The AWS runners: EMR Serverless (a job run on an application) and EMR on EC2 (a step on a
cluster created from the profile, or on an existing one). Clients are passed in (boto3)."""

from __future__ import annotations

import logging
import shlex
from dataclasses import dataclass
from typing import Any, ClassVar

from botocore.exceptions import BotoCoreError, ClientError

from backfill_orchestrator.spark_profiles import EmrProfile, EmrServerlessProfile
from backfill_runtime.runners.base import JobSpec, RunHandle, RunState, RunStatus, SparkSubmissionRefusedError
from backfill_runtime.runners.remote import Artifacts, RemoteRunner

log = logging.getLogger(__name__)

EMR_SERVERLESS_STATES = {
    "SUBMITTED": RunState.PENDING,
    "PENDING": RunState.PENDING,
    "SCHEDULED": RunState.PENDING,
    "QUEUED": RunState.PENDING,
    "RUNNING": RunState.RUNNING,
    "CANCELLING": RunState.RUNNING,
    "SUCCESS": RunState.SUCCEEDED,
    "FAILED": RunState.FAILED,
    "CANCELLED": RunState.CANCELLED,
}
EMR_STEP_STATES = {
    "PENDING": RunState.PENDING,
    "CANCEL_PENDING": RunState.RUNNING,
    "RUNNING": RunState.RUNNING,
    "COMPLETED": RunState.SUCCEEDED,
    "FAILED": RunState.FAILED,
    "INTERRUPTED": RunState.FAILED,
    "CANCELLED": RunState.CANCELLED,
}


def spark_conf(profile: EmrServerlessProfile | EmrProfile, extra: dict[str, str]) -> dict[str, str]:
    conf = dict(extra)
    if isinstance(profile, EmrServerlessProfile):
        conf.update(
            {
                "spark.driver.cores": str(profile.driver.cores),
                "spark.driver.memory": f"{profile.driver.memory_gb}g",
                "spark.executor.cores": str(profile.executor.cores),
                "spark.executor.memory": f"{profile.executor.memory_gb}g",
                "spark.dynamicAllocation.maxExecutors": str(profile.max_executors),
            }
        )
        if profile.executor.instances:
            conf["spark.executor.instances"] = str(profile.executor.instances)
    conf.update(profile.spark_conf)
    return conf


def _submit_parameters(artifacts: Artifacts) -> str:
    py_files = f"--py-files {','.join(artifacts.py_files)}" if artifacts.py_files else ""
    return f"{py_files} {artifacts.submit_parameters}".strip()


def _refused(service: str, error: Exception) -> SparkSubmissionRefusedError:
    if isinstance(error, ClientError):
        info = error.response.get("Error", {})
        return SparkSubmissionRefusedError(
            f"{service} refused the job: {info.get('Code')}: {info.get('Message')}"
        )
    return SparkSubmissionRefusedError(f"{service} could not be reached: {error}")


@dataclass(kw_only=True)
class EmrServerlessRunner(RemoteRunner[EmrServerlessProfile]):
    name: ClassVar[str] = "emr_serverless"

    client: Any
    application_id: str
    execution_role_arn: str
    log_uri: str | None = None

    def submit(self, spec: JobSpec) -> RunHandle:
        overrides: dict[str, Any] = {
            "applicationConfiguration": [
                {"classification": "spark-defaults", "properties": spark_conf(self.profile, {})}
            ]
        }
        if self.log_uri:
            overrides["monitoringConfiguration"] = {"s3MonitoringConfiguration": {"logUri": self.log_uri}}
        driver: dict[str, Any] = {
            "entryPoint": self.artifacts.entry_point,
            "entryPointArguments": spec.arguments,
        }
        if _submit_parameters(self.artifacts):
            driver["sparkSubmitParameters"] = _submit_parameters(self.artifacts)
        try:
            answer = self.client.start_job_run(
                applicationId=self.application_id,
                clientToken=spec.name,  # a retried task does not start the same round twice
                executionRoleArn=self.execution_role_arn,
                name=spec.name,
                jobDriver={"sparkSubmit": driver},
                configurationOverrides=overrides,
                executionTimeoutMinutes=self.profile.timeout_minutes,
            )
        except (ClientError, BotoCoreError) as error:
            raise _refused("EMR Serverless", error) from error
        return RunHandle(
            runner=self.name, run_id=answer["jobRunId"], details={"application_id": self.application_id}
        )

    def poll(self, handle: RunHandle) -> RunStatus:
        run = self.client.get_job_run(applicationId=self.application_id, jobRunId=handle.run_id)["jobRun"]
        state = EMR_SERVERLESS_STATES.get(run["state"], RunState.RUNNING)
        return RunStatus(state=state, detail=run.get("stateDetails") or "")

    def cancel(self, handle: RunHandle) -> None:
        self.client.cancel_job_run(applicationId=self.application_id, jobRunId=handle.run_id)

    def cleanup(self, handle: RunHandle) -> None:
        """The application outlives the run (it stops itself when idle)."""


@dataclass(kw_only=True)
class EmrRunner(RemoteRunner[EmrProfile]):
    """A step on a cluster: the profile's cluster (created per submission, terminated after)
    or an existing cluster (the profile's or the deployment's `cluster_id`, left running)."""

    name: ClassVar[str] = "emr"

    client: Any
    job_flow_role: str = "EMR_EC2_DefaultRole"
    service_role: str = "EMR_DefaultRole"
    log_uri: str | None = None
    subnet_ids: tuple[str, ...] = ()
    cluster_id: str | None = None

    def __post_init__(self) -> None:
        self.cluster_id = self.cluster_id or self.profile.cluster_id

    def step(self, spec: JobSpec) -> dict[str, Any]:
        conf = [
            arg for key, value in spark_conf(self.profile, {}).items() for arg in ("--conf", f"{key}={value}")
        ]
        py_files = shlex.split(_submit_parameters(self.artifacts))
        argv = [
            "spark-submit",
            "--deploy-mode",
            "cluster",
            *conf,
            *py_files,
            self.artifacts.entry_point,
            *spec.arguments,
        ]
        log.info("EMR step: %s", shlex.join(argv))
        return {
            "Name": spec.name,
            "ActionOnFailure": "CONTINUE",
            "HadoopJarStep": {"Jar": "command-runner.jar", "Args": argv},
        }

    def cluster_request(self, spec: JobSpec) -> dict[str, Any]:
        instances: dict[str, Any] = {"KeepJobFlowAliveWhenNoSteps": True, "TerminationProtected": False}
        if self.profile.instance_groups:
            instances["InstanceGroups"] = [
                {
                    "Name": g.role.lower(),
                    "InstanceRole": g.role,
                    "InstanceType": g.instance_type,
                    "InstanceCount": g.count,
                    "Market": g.market,
                }
                for g in self.profile.instance_groups
            ]
            if self.subnet_ids:
                instances["Ec2SubnetId"] = self.subnet_ids[0]
        else:
            instances["InstanceFleets"] = [
                {
                    "Name": f.role.lower(),
                    "InstanceFleetType": f.role,
                    "TargetOnDemandCapacity": f.on_demand_units,
                    "TargetSpotCapacity": f.spot_units,
                    "InstanceTypeConfigs": [{"InstanceType": t} for t in f.instance_types],
                }
                for f in self.profile.instance_fleets or []
            ]
            if self.subnet_ids:
                instances["Ec2SubnetIds"] = list(self.subnet_ids)
        request: dict[str, Any] = {
            "Name": spec.name,
            "ReleaseLabel": self.profile.release_label,
            "Applications": [{"Name": "Spark"}],
            "Instances": instances,
            "JobFlowRole": self.job_flow_role,
            "ServiceRole": self.service_role,
            "VisibleToAllUsers": True,
            "Tags": [{"Key": "backfill-run", "Value": spec.name}],
        }
        if self.log_uri:
            request["LogUri"] = self.log_uri
        if self.profile.managed_scaling:
            scaling = self.profile.managed_scaling
            request["ManagedScalingPolicy"] = {
                "ComputeLimits": {
                    "UnitType": scaling.unit_type,
                    "MinimumCapacityUnits": scaling.minimum,
                    "MaximumCapacityUnits": scaling.maximum,
                }
            }
        return request

    def submit(self, spec: JobSpec) -> RunHandle:
        created = self.cluster_id is None
        try:
            cluster_id = (
                self.cluster_id or self.client.run_job_flow(**self.cluster_request(spec))["JobFlowId"]
            )
        except (ClientError, BotoCoreError) as error:
            raise _refused("EMR", error) from error
        try:
            step_id = self.client.add_job_flow_steps(JobFlowId=cluster_id, Steps=[self.step(spec)])[
                "StepIds"
            ][0]
        except (ClientError, BotoCoreError) as error:
            if created:
                self._terminate(cluster_id)
            raise _refused("EMR", error) from error
        return RunHandle(
            runner=self.name, run_id=step_id, details={"cluster_id": cluster_id, "created": created}
        )

    def poll(self, handle: RunHandle) -> RunStatus:
        cluster_id = handle.details["cluster_id"]
        status = self.client.describe_step(ClusterId=cluster_id, StepId=handle.run_id)["Step"]["Status"]
        state = EMR_STEP_STATES.get(status["State"], RunState.RUNNING)
        reason = status.get("FailureDetails", {}).get("Reason") or status.get("StateChangeReason", {}).get(
            "Message", ""
        )
        if not state.terminal:
            cluster = self.client.describe_cluster(ClusterId=cluster_id)["Cluster"]["Status"]
            if cluster["State"] in ("TERMINATING", "TERMINATED", "TERMINATED_WITH_ERRORS"):
                why = cluster.get("StateChangeReason", {}).get("Message", "")
                return RunStatus(
                    state=RunState.FAILED, detail=f"cluster {cluster_id} {cluster['State']}: {why}"
                )
        return RunStatus(state=state, detail=reason)

    def cancel(self, handle: RunHandle) -> None:
        cluster_id = handle.details["cluster_id"]
        try:
            self.client.cancel_steps(
                ClusterId=cluster_id, StepIds=[handle.run_id], StepCancellationOption="SEND_INTERRUPT"
            )
        except (ClientError, BotoCoreError) as error:
            # A cluster we created is terminated below anyway; one we share keeps the step.
            log.warning("EMR: could not cancel step %s on %s: %s", handle.run_id, cluster_id, error)
            if not handle.details.get("created"):
                raise

    def cleanup(self, handle: RunHandle) -> None:
        if handle.details.get("created"):
            self._terminate(handle.details["cluster_id"])

    def _terminate(self, cluster_id: str) -> None:
        log.info("EMR: terminating cluster %s", cluster_id)
        self.client.terminate_job_flows(JobFlowIds=[cluster_id])
