"""Which runner, with which profile: the deployment's `[backfill]` options and its profiles
file (`spark_profiles_uri`). The plan's `spark_profile` names a profile; the profile's
`runner` says where it runs. Without a profiles file every name resolves to one profile of
`[backfill] spark_runner` with no sizes, which only the local runner can use."""

from __future__ import annotations

from typing import Any

from backfill_orchestrator.documents import read_text
from backfill_orchestrator.spark_profiles import (
    MAX_PROFILES_BYTES,
    SparkProfile,
    SparkProfiles,
    parse_profiles,
)
from backfill_runtime.options import InvalidOptionError, get_option, spark_command
from backfill_runtime.runners.aws import EmrRunner, EmrServerlessRunner
from backfill_runtime.runners.base import SparkRunner
from backfill_runtime.runners.databricks import DatabricksRunner
from backfill_runtime.runners.local import LocalRunner
from backfill_runtime.runners.remote import Artifacts


def load_profiles() -> SparkProfiles | None:
    """The deployment's profiles, or None when `spark_profiles_uri` is not set. Raises
    DocumentError (cannot read) or InvalidDocumentError (located problems)."""
    uri = get_option("spark_profiles_uri", "")
    if not uri:
        return None
    return parse_profiles(read_text(uri, max_bytes=MAX_PROFILES_BYTES), source=uri)


def resolve_profile(name: str, profiles: SparkProfiles | None) -> dict[str, Any]:
    """The profile as a plain dict (it travels in XCom): `{"name": ..., **profile}`. Raises
    UnknownProfileError for a name the file does not define."""
    if profiles is None:
        runner = get_option("spark_runner", "local")
        if runner != "local":
            raise InvalidOptionError(
                f"[backfill] spark_runner = {runner} needs spark_profiles_uri: the profiles give its cluster sizes"
            )
        return {"name": name, "runner": "local"}
    return {"name": name, **profiles.get(name).model_dump(mode="json")}


def profile_from(resolved: dict[str, Any]) -> SparkProfile:
    document = {key: value for key, value in resolved.items() if key != "name"}
    return SparkProfiles.model_validate({"profiles": {"resolved": document}}).profiles["resolved"]


def _artifacts() -> Artifacts:
    entry_point = get_option("spark_entry_point", get_option("emr_entry_point", ""))
    if not entry_point:
        raise InvalidOptionError(
            "[backfill] spark_entry_point is not set: the job's entry point (s3:// or dbfs:/)"
        )
    py_files = tuple(p.strip() for p in get_option("spark_py_files", "").split(",") if p.strip())
    parameters = get_option("spark_submit_parameters", get_option("emr_spark_parameters", ""))
    return Artifacts(entry_point=entry_point, py_files=py_files, submit_parameters=parameters)


def _required(key: str) -> str:
    value = get_option(key, "")
    if not value:
        raise InvalidOptionError(f"[backfill] {key} is not set (AIRFLOW__BACKFILL__{key.upper()})")
    return value


def _aws_client(service: str) -> Any:
    from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook

    return AwsBaseHook(aws_conn_id=get_option("aws_conn_id", "aws_default"), client_type=service).conn


def build_runner(profile: SparkProfile, *, client: Any = None) -> SparkRunner:
    """The runner for `profile`, its settings from `[backfill]`; `client` overrides the service
    client (boto3 client or databricks WorkspaceClient) in tests."""
    if profile.runner == "local":
        return LocalRunner(
            command=spark_command(), grace_seconds=float(get_option("spark_grace_seconds", "60"))
        )
    if profile.runner == "emr_serverless":
        return EmrServerlessRunner(
            client=client or _aws_client("emr-serverless"),
            application_id=_required("emr_application_id"),
            execution_role_arn=_required("emr_execution_role_arn"),
            artifacts=_artifacts(),
            profile=profile,
            log_uri=get_option("spark_log_uri", "") or None,
        )
    if profile.runner == "emr":
        subnets = tuple(s.strip() for s in get_option("emr_subnet_ids", "").split(",") if s.strip())
        return EmrRunner(
            client=client or _aws_client("emr"),
            artifacts=_artifacts(),
            profile=profile,
            job_flow_role=get_option("emr_job_flow_role", "EMR_EC2_DefaultRole"),
            service_role=get_option("emr_service_role", "EMR_DefaultRole"),
            log_uri=get_option("spark_log_uri", "") or None,
            subnet_ids=subnets,
            cluster_id=get_option("emr_cluster_id", "") or None,
        )
    if client is None:
        from databricks.sdk import WorkspaceClient

        # Host and credentials through the SDK's unified auth (DATABRICKS_HOST / DATABRICKS_TOKEN,
        # OAuth M2M, ...): no secret in airflow.cfg.
        client = WorkspaceClient(host=get_option("databricks_host", "") or None)
    return DatabricksRunner(
        workspace=client,
        artifacts=_artifacts(),
        profile=profile,
        instance_profile_arn=get_option("databricks_instance_profile_arn", "") or None,
    )


def describe_profile(resolved: dict[str, Any]) -> str:
    """One line for the status record and Slack: the profile, its runner and its resources."""
    profile = profile_from(resolved)
    parts: list[str] = []
    if profile.runner == "emr_serverless":
        parts = [
            f"driver {profile.driver.cores} vCPU/{profile.driver.memory_gb} GB",
            f"executors {profile.executor.cores} vCPU/{profile.executor.memory_gb} GB",
            f"max {profile.max_capacity.cpu} vCPU/{profile.max_capacity.memory_gb} GB",
        ]
    elif profile.runner == "emr":
        if profile.cluster_id:
            parts = [f"cluster {profile.cluster_id}"]
        else:
            shape = profile.instance_groups or profile.instance_fleets or []
            parts = [f"{len(shape)} instance {'groups' if profile.instance_groups else 'fleets'}"]
        if profile.managed_scaling:
            scaling = profile.managed_scaling
            parts.append(f"scaling {scaling.minimum}..{scaling.maximum} {scaling.unit_type}")
    elif profile.runner == "databricks":
        workers = (
            str(profile.num_workers)
            if profile.num_workers is not None
            else f"{profile.min_workers}..{profile.max_workers}"
        )
        parts = [f"{workers} x {profile.node_type_id}", profile.spark_version]
    if profile.price is not None:
        parts.append(f"${profile.price.usd_per_hour:g}/h")
    return f"profile {resolved['name']} on {profile.runner}" + (f" ({', '.join(parts)})" if parts else "")
