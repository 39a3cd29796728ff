"""Each Spark runner against its service faked at the wire: EMR Serverless and EMR on moto
(`mock_aws`), Databricks on the local Jobs API double (requests checked against the SDK's
models). Per runner: submit with the profile's resources, success, failure, timeout (cancel),
the backfill's cancel, and a refused submission. Profiles: the example file, located errors."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from backfill_runtime.runners import (
    JobSpec,
    SparkRunCancelledError,
    SparkRunFailedError,
    SparkRunTimedOutError,
    SparkSubmissionRefusedError,
    run_to_completion,
)
from backfill_runtime.runners.aws import EmrRunner, EmrServerlessRunner
from backfill_runtime.runners.base import SparkJobInputError
from backfill_runtime.runners.databricks import DatabricksRunner
from backfill_runtime.runners.local import LocalRunner
from backfill_runtime.runners.remote import Artifacts
from moto import mock_aws

from backfill_local.databricks_double import DatabricksJobsDouble
from backfill_orchestrator.contracts import InvalidDocumentError
from backfill_orchestrator.errors import ServiceError, UserError
from backfill_orchestrator.spark_profiles import UnknownProfileError, parse_profiles

REPO = Path(__file__).resolve().parents[2]
PROFILES = parse_profiles(
    (REPO / "examples" / "spark" / "profiles.yaml").read_bytes(), source="profiles.yaml"
)
SPEC = JobSpec(
    name="backfill-0123456789abcdef-round-0",
    plan_uri="s3://bucket/backfills/b/rounds/0/plan.json",
    warehouse_uri="s3://warehouse/",
    report_uri="s3://bucket/backfills/b/rounds/0/run_report.json",
)
ARTIFACTS = Artifacts(
    entry_point="s3://artifacts/backfill_job.py",
    py_files=("s3://artifacts/spark_jobs.zip", "s3://artifacts/backfill_orchestrator.zip"),
)
ACCOUNT, REGION = "123456789012", "us-east-1"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/backfill-emr-job"


class Clock:
    """Fake time: each sleep advances it and runs `on_sleep` (a state change on the service)."""

    def __init__(self, on_sleep: Any = None):
        self.now = 0.0
        self.sleeps = 0
        self.on_sleep = on_sleep

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.sleeps += 1
        if self.on_sleep:
            self.on_sleep(self.sleeps)

    def __call__(self) -> float:
        return self.now


def drive(runner: Any, clock: Clock, *, timeout: float = 3600, should_cancel: Any = lambda: False) -> Any:
    return run_to_completion(
        runner,
        SPEC,
        timeout_seconds=timeout,
        poll_seconds=30,
        sleep=clock.sleep,
        clock=clock,
        should_cancel=should_cancel,
    )


# -- profiles ---------------------------------------------------------------------------------
def test_example_profiles_cover_every_runner() -> None:
    assert {p.runner for p in PROFILES.profiles.values()} == {"local", "emr_serverless", "emr", "databricks"}
    assert PROFILES.get("medium").resources["max_capacity"] == {"cpu": 64, "memory_gb": 256}


def test_profile_errors_are_located_without_the_union_tag() -> None:
    text = """
profiles:
  big:
    runner: emr
    instance_groups: [{role: CORE, instance_type: r6g.xlarge, count: 0}]
    managed_scaling: {minimum: 5, maximum: 2}
  Bad Name: {runner: local}
  db: {runner: databricks, spark_version: x, node_type_id: "y", num_workers: 2, max_workers: 4}
"""
    with pytest.raises(InvalidDocumentError) as raised:
        parse_profiles(text, source="profiles.yaml")
    problems = "\n".join(raised.value.problems)
    assert "profiles.big.instance_groups[0].count: input should be greater than or equal to 1" in problems
    assert "profiles.big.managed_scaling: maximum is smaller than minimum" in problems
    assert "profiles.Bad Name.[key]" in problems
    assert "profiles.db: give num_workers, or min_workers and max_workers" in problems
    assert isinstance(raised.value, UserError)


def test_profile_file_is_strict_yaml() -> None:
    with pytest.raises(InvalidDocumentError, match="duplicate key"):
        parse_profiles("profiles:\n  a: {runner: local}\n  a: {runner: local}\n", source="p.yaml")


def test_unknown_profile_names_the_known_ones() -> None:
    with pytest.raises(UnknownProfileError) as raised:
        PROFILES.get("huge")
    assert str(
        raised.value
    ) == "spark.profile: unknown Spark profile 'huge'; this deployment has " + ", ".join(
        sorted(PROFILES.profiles)
    )
    assert isinstance(raised.value, UserError)


# -- local ------------------------------------------------------------------------------------
def _local(code: str, *, grace: float = 5.0) -> LocalRunner:
    return LocalRunner(command=[sys.executable, "-c", code], grace_seconds=grace)


def _real_time(runner: LocalRunner, **kwargs: Any) -> Any:
    return run_to_completion(runner, SPEC, poll_seconds=0.05, **kwargs)


def test_local_success_and_arguments(tmp_path: Path) -> None:
    seen = tmp_path / "argv"
    handle = _real_time(
        _local(f"import sys; open({str(seen)!r}, 'w').write(' '.join(sys.argv[1:]))"), timeout_seconds=30
    )
    assert handle.runner == "local"
    assert seen.read_text() == " ".join(SPEC.arguments)


@pytest.mark.parametrize(
    ("code", "error"),
    [
        ("raise SystemExit(1)", SparkRunFailedError),
        ("raise SystemExit(2)", SparkJobInputError),
        ("import os; os._exit(137)", SparkRunFailedError),
    ],
)
def test_local_failures(code: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        _real_time(_local(code), timeout_seconds=30)


def test_local_job_runs_in_its_own_session_out_of_reach_of_airflows_group_kill(tmp_path: Path) -> None:
    """Airflow SIGKILLs a stopped task's process group 5 s after SIGTERM: a job in that group
    could die mid-commit. Its own session (and the variable that makes it stop with its parent)."""
    seen = tmp_path / "seen"
    code = f"import json, os; open({str(seen)!r}, 'w').write(json.dumps([os.getsid(0), os.getpid(), os.environ.get('BACKFILL_STOP_WITH_PARENT')]))"
    _real_time(_local(code), timeout_seconds=30)
    session, pid, variable = json.loads(seen.read_text())
    assert session == pid != os.getsid(0)
    assert variable == "1"


def test_local_missing_command_is_refused() -> None:
    with pytest.raises(SparkSubmissionRefusedError, match="cannot start"):
        _real_time(LocalRunner(command=["/nonexistent/spark-submit"]), timeout_seconds=30)


def test_local_timeout_stops_with_sigterm(tmp_path: Path) -> None:
    stopped = tmp_path / "stopped"
    code = (
        "import signal, sys, time\n"
        f"def stop(*_): open({str(stopped)!r}, 'w').write('term'); sys.exit(1)\n"
        "signal.signal(signal.SIGTERM, stop)\n"
        "time.sleep(60)\n"
    )
    with pytest.raises(SparkRunTimedOutError):
        _real_time(_local(code), timeout_seconds=1.0)
    assert stopped.read_text() == "term"  # it got SIGTERM and stopped itself


def test_local_cancel_kills_after_the_grace_period() -> None:
    code = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('ready', flush=True)\ntime.sleep(60)\n"
    runner = _local(code, grace=0.5)
    polls = iter(range(1000))
    with pytest.raises(SparkRunCancelledError, match="cancelled with the backfill"):
        _real_time(runner, timeout_seconds=30, should_cancel=lambda: next(polls) >= 10)
    assert not runner._processes  # cleaned up: SIGKILLed and reaped


# -- EMR Serverless on moto -------------------------------------------------------------------
@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key, value in {
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        yield


def _serverless_runs(application_id: str) -> list[Any]:
    from moto.emrserverless.models import emrserverless_backends

    return emrserverless_backends[ACCOUNT][REGION].job_runs[application_id]


def _serverless(**kwargs: Any) -> tuple[EmrServerlessRunner, str]:
    client = boto3.client("emr-serverless", region_name=REGION)
    application_id = (
        kwargs.pop("application_id", None)
        or client.create_application(name="backfill", releaseLabel="emr-7.5.0", type="SPARK")["applicationId"]
    )
    runner = EmrServerlessRunner(
        client=client,
        application_id=application_id,
        execution_role_arn=ROLE,
        artifacts=ARTIFACTS,
        profile=PROFILES.get("medium"),
        log_uri="s3://logs/emr-serverless/",
    )
    return runner, application_id


def _start_in(runner: EmrServerlessRunner, application_id: str, state: str) -> None:
    """moto creates job runs in SUCCESS; a real run starts SUBMITTED and moves on."""
    submit = runner.submit

    def submit_then_set(spec: JobSpec) -> Any:
        handle = submit(spec)
        _serverless_runs(application_id)[-1].state = state
        return handle

    runner.submit = submit_then_set  # type: ignore[method-assign]


def test_emr_serverless_submits_the_profile_and_succeeds(aws: None) -> None:
    runner, application_id = _serverless()
    _start_in(runner, application_id, "SUBMITTED")

    def progress(sleeps: int) -> None:
        _serverless_runs(application_id)[0].state = "RUNNING" if sleeps < 3 else "SUCCESS"

    clock = Clock(progress)
    handle = drive(runner, clock)
    assert clock.sleeps == 3
    run = _serverless_runs(application_id)[0]
    assert handle.run_id == run.id and run.execution_role_arn == ROLE and run.client_token == SPEC.name
    driver = run.job_driver["sparkSubmit"]
    assert driver["entryPoint"] == ARTIFACTS.entry_point and driver["entryPointArguments"] == SPEC.arguments
    assert driver["sparkSubmitParameters"] == "--py-files " + ",".join(ARTIFACTS.py_files)
    properties = run.configuration_overrides["applicationConfiguration"][0]["properties"]
    assert properties["spark.driver.cores"] == "4" and properties["spark.executor.memory"] == "16g"
    assert properties["spark.dynamicAllocation.maxExecutors"] == "15"  # (64 - 4) // 4 vCPU
    assert properties["spark.sql.shuffle.partitions"] == "64"
    assert run.execution_timeout_minutes == PROFILES.get("medium").timeout_minutes


def test_emr_serverless_failure_carries_the_reason(aws: None) -> None:
    runner, application_id = _serverless()

    def fail(_: int) -> None:
        run = _serverless_runs(application_id)[0]
        run.state, run.state_details = "FAILED", "Job failed, ExitCode: 1"

    _start_in(runner, application_id, "RUNNING")
    with pytest.raises(SparkRunFailedError, match="ExitCode: 1"):
        drive(runner, Clock(fail))


def test_emr_serverless_timeout_cancels_the_run(aws: None) -> None:
    runner, application_id = _serverless()
    _start_in(runner, application_id, "RUNNING")
    with pytest.raises(SparkRunTimedOutError, match="longer than 120 s"):
        drive(runner, Clock(), timeout=120)
    assert _serverless_runs(application_id)[0].state == "CANCELLED"


def test_emr_serverless_backfill_cancel(aws: None) -> None:
    runner, application_id = _serverless()
    _start_in(runner, application_id, "RUNNING")
    clock = Clock()
    with pytest.raises(SparkRunCancelledError):
        drive(runner, clock, should_cancel=lambda: clock.sleeps >= 2)
    assert _serverless_runs(application_id)[0].state == "CANCELLED"


def test_emr_serverless_refused_submission(aws: None) -> None:
    runner, _ = _serverless(application_id="00fabcdefghijklm")
    with pytest.raises(
        SparkSubmissionRefusedError, match="EMR Serverless refused the job: ResourceNotFoundException"
    ) as raised:
        drive(runner, Clock())
    assert isinstance(raised.value, ServiceError)


# -- EMR on EC2 on moto -----------------------------------------------------------------------
def _emr_backend() -> Any:
    from moto.emr.models import emr_backends

    return emr_backends[ACCOUNT][REGION]


@pytest.fixture
def emr(aws: None) -> Iterator[dict[str, Any]]:
    """An EMR client that records every request's parameters, with CancelSteps (which moto
    lacks) answered at the wire the way EMR does: the step goes CANCELLED."""
    client = boto3.client("emr", region_name=REGION)
    calls: dict[str, Any] = {"client": client}

    def record(params: dict[str, Any], model: Any, **_: Any) -> None:
        calls.setdefault(model.name, []).append(params)

    def cancel_steps(**_: Any) -> tuple[Any, dict[str, Any]]:
        params = calls["CancelSteps"][-1]
        for step in _emr_backend().clusters[params["ClusterId"]].steps:
            if step.id in params["StepIds"]:
                step.state = "CANCELLED"
        answer = {"CancelStepsInfoList": [{"StepId": s, "Status": "SUBMITTED"} for s in params["StepIds"]]}
        return _Http(200), answer

    client.meta.events.register("provide-client-params.emr.*", record)
    client.meta.events.register("before-call.emr.CancelSteps", cancel_steps)
    yield calls


def _emr_runner(calls: dict[str, Any], **kwargs: Any) -> EmrRunner:
    return EmrRunner(
        client=calls["client"],
        artifacts=ARTIFACTS,
        profile=PROFILES.get("large"),
        log_uri="s3://logs/emr/",
        subnet_ids=("subnet-1",),
        **kwargs,
    )


def _set_step(state: str, reason: str | None = None) -> None:
    for cluster in _emr_backend().clusters.values():
        for step in cluster.steps:
            step.state = state


def test_emr_creates_the_profile_cluster_runs_the_step_and_terminates(emr: dict[str, Any]) -> None:
    handle = drive(_emr_runner(emr), Clock(lambda sleeps: _set_step("COMPLETED") if sleeps == 2 else None))
    (request,) = emr["RunJobFlow"]
    assert request["ManagedScalingPolicy"]["ComputeLimits"] == {
        "UnitType": "Instances",
        "MinimumCapacityUnits": 3,
        "MaximumCapacityUnits": 20,
    }
    groups = {
        g["InstanceRole"]: (g["InstanceType"], g["InstanceCount"], g["Market"])
        for g in request["Instances"]["InstanceGroups"]
    }  # noqa: E501
    assert groups == {
        "MASTER": ("m6g.xlarge", 1, "ON_DEMAND"),
        "CORE": ("r6g.2xlarge", 2, "ON_DEMAND"),
        "TASK": ("r6g.2xlarge", 2, "SPOT"),
    }
    assert request["ReleaseLabel"] == "emr-7.5.0" and request["Instances"]["Ec2SubnetId"] == "subnet-1"
    (steps,) = emr["AddJobFlowSteps"]
    argv = steps["Steps"][0]["HadoopJarStep"]["Args"]
    assert argv[:3] == ["spark-submit", "--deploy-mode", "cluster"]
    assert argv[-7:] == [ARTIFACTS.entry_point, *SPEC.arguments]
    assert ",".join(ARTIFACTS.py_files) in argv
    cluster = _emr_backend().clusters[handle.details["cluster_id"]]
    assert cluster.state == "TERMINATED"  # created for this run, so terminated after it


def test_emr_instance_fleets(emr: dict[str, Any]) -> None:
    profile = type(PROFILES.get("large")).model_validate(
        {
            **PROFILES.get("large").model_dump(),
            "instance_groups": None,
            "instance_fleets": [
                {"role": "MASTER", "instance_types": ["m6g.xlarge"], "on_demand_units": 1},
                {"role": "CORE", "instance_types": ["r6g.2xlarge", "r7g.2xlarge"], "spot_units": 8},
            ],
        }
    )
    runner = EmrRunner(
        client=emr["client"], artifacts=ARTIFACTS, profile=profile, subnet_ids=("subnet-1", "subnet-2")
    )
    request = runner.cluster_request(SPEC)
    fleets = request["Instances"]["InstanceFleets"]
    assert [f["InstanceFleetType"] for f in fleets] == ["MASTER", "CORE"]
    assert fleets[1]["TargetSpotCapacity"] == 8 and request["Instances"]["Ec2SubnetIds"] == [
        "subnet-1",
        "subnet-2",
    ]
    # botocore validates the request against EMR's model before it is sent (moto has no fleets)
    emr["client"].meta.events.register(
        "before-call.emr.RunJobFlow", lambda **_: (_Http(200), {"JobFlowId": "j-F"})
    )
    assert emr["client"].run_job_flow(**request)["JobFlowId"] == "j-F"


class _Http:
    def __init__(self, status_code: int):
        self.status_code = status_code
        self.headers: dict[str, str] = {}


def test_emr_failed_step_still_terminates_the_cluster(emr: dict[str, Any]) -> None:
    def fail(_: int) -> None:
        for cluster in _emr_backend().clusters.values():
            cluster.steps[0].state = "FAILED"

    with pytest.raises(SparkRunFailedError, match="emr run s-"):
        drive(_emr_runner(emr), Clock(fail))
    assert [c.state for c in _emr_backend().clusters.values()] == ["TERMINATED"]


def test_emr_timeout_cancels_the_step_and_terminates(emr: dict[str, Any]) -> None:
    with pytest.raises(SparkRunTimedOutError):
        drive(_emr_runner(emr), Clock(), timeout=90)
    (cancel,) = emr["CancelSteps"]
    assert cancel["StepCancellationOption"] == "SEND_INTERRUPT"
    (cluster,) = _emr_backend().clusters.values()
    assert cluster.steps[0].state == "CANCELLED" and cluster.state == "TERMINATED"


def test_emr_existing_cluster_is_used_and_left_running(emr: dict[str, Any]) -> None:
    cluster_id = emr["client"].run_job_flow(
        Name="shared",
        ReleaseLabel="emr-7.5.0",
        JobFlowRole="r",
        ServiceRole="s",
        Instances={
            "InstanceGroups": [{"InstanceRole": "MASTER", "InstanceType": "m5.xlarge", "InstanceCount": 1}],
            "KeepJobFlowAliveWhenNoSteps": True,
        },
    )["JobFlowId"]
    clock = Clock()
    with pytest.raises(SparkRunCancelledError):
        drive(_emr_runner(emr, cluster_id=cluster_id), clock, should_cancel=lambda: clock.sleeps >= 1)
    assert len(emr["RunJobFlow"]) == 1  # only the one above
    assert emr["CancelSteps"][0]["ClusterId"] == cluster_id
    assert _emr_backend().clusters[cluster_id].state != "TERMINATED"


def test_emr_cluster_lost_fails_the_run(emr: dict[str, Any]) -> None:
    def lose(_: int) -> None:
        for cluster in _emr_backend().clusters.values():
            cluster.state = "TERMINATED_WITH_ERRORS"

    with pytest.raises(SparkRunFailedError, match="TERMINATED_WITH_ERRORS"):
        drive(_emr_runner(emr), Clock(lose))


def test_emr_refused_submission(emr: dict[str, Any]) -> None:
    refusal = {
        "Error": {
            "Code": "ValidationException",
            "Message": "Service role EMR_DefaultRole has insufficient EC2 permissions",
        }
    }  # noqa: E501
    emr["client"].meta.events.register("before-call.emr.RunJobFlow", lambda **_: (_Http(400), refusal))
    with pytest.raises(
        SparkSubmissionRefusedError, match="EMR refused the job: ValidationException: Service role"
    ):
        drive(_emr_runner(emr), Clock())
    assert "AddJobFlowSteps" not in emr


# -- Databricks on the Jobs API double --------------------------------------------------------
@pytest.fixture
def databricks() -> Iterator[DatabricksJobsDouble]:
    with DatabricksJobsDouble() as double:
        yield double


def _databricks_runner(
    double: DatabricksJobsDouble, *, profile: str = "databricks-medium", token: str | None = None
) -> DatabricksRunner:  # noqa: E501
    from databricks.sdk import WorkspaceClient

    workspace = WorkspaceClient(host=double.host, token=token or double.token, auth_type="pat")
    return DatabricksRunner(
        workspace=workspace,
        artifacts=ARTIFACTS,
        profile=PROFILES.get(profile),
        instance_profile_arn=f"arn:aws:iam::{ACCOUNT}:instance-profile/backfill-databricks",
    )


def test_databricks_submits_a_job_cluster_from_the_profile(databricks: DatabricksJobsDouble) -> None:
    clock = Clock()
    handle = drive(_databricks_runner(databricks), clock)
    assert databricks.rejected == []
    run = databricks.runs[int(handle.run_id)]
    assert run.gets == 3 and clock.sleeps == 2  # PENDING, RUNNING, TERMINATED/SUCCESS
    (task,) = run.body["tasks"]
    assert task["new_cluster"]["autoscale"] == {"min_workers": 2, "max_workers": 8}
    assert (
        task["new_cluster"]["spark_version"] == "15.4.x-scala2.12"
        and task["new_cluster"]["node_type_id"] == "i3.xlarge"
    )
    assert task["new_cluster"]["aws_attributes"]["instance_profile_arn"].endswith(
        "instance-profile/backfill-databricks"
    )
    assert task["spark_python_task"] == {"python_file": ARTIFACTS.entry_point, "parameters": SPEC.arguments}
    assert [lib["whl"] for lib in task["libraries"]] == list(ARTIFACTS.py_files)
    assert run.body["idempotency_token"] == SPEC.name and run.body["timeout_seconds"] == 360 * 60


def test_databricks_runs_the_job_with_safe_publish_settings(databricks: DatabricksJobsDouble) -> None:
    """On Databricks the job stages, checks and publishes as everywhere (docs/spark.md, Delta
    tables): the run gets the plan's publish policy and the publish root as job parameters."""
    from dataclasses import replace

    spec = replace(
        SPEC,
        publish_policy_uri="s3://bucket/backfills/b/publish-policy.json",
        publish_root="s3://backfill-publish/",
    )
    runner = _databricks_runner(databricks)
    handle = runner.submit(spec)
    (task,) = databricks.runs[int(handle.run_id)].body["tasks"]
    parameters = task["spark_python_task"]["parameters"]
    assert parameters[parameters.index("--publish-policy") + 1] == spec.publish_policy_uri
    assert parameters[parameters.index("--publish-root") + 1] == "s3://backfill-publish/"


def test_databricks_failure(databricks: DatabricksJobsDouble) -> None:
    databricks.result = "FAILED"
    with pytest.raises(SparkRunFailedError, match="FAILED: run ended FAILED"):
        drive(_databricks_runner(databricks), Clock())


def test_databricks_timeout_cancels(databricks: DatabricksJobsDouble) -> None:
    databricks.hold = True
    with pytest.raises(SparkRunTimedOutError):
        drive(_databricks_runner(databricks), Clock(), timeout=200)
    (run,) = databricks.runs.values()
    assert run.cancelled


def test_databricks_backfill_cancel(databricks: DatabricksJobsDouble) -> None:
    databricks.hold = True
    clock = Clock()
    with pytest.raises(SparkRunCancelledError):
        drive(_databricks_runner(databricks), clock, should_cancel=lambda: clock.sleeps >= 2)
    (run,) = databricks.runs.values()
    assert run.cancelled


def test_databricks_refused(databricks: DatabricksJobsDouble) -> None:
    with pytest.raises(SparkSubmissionRefusedError, match="Databricks refused the job"):
        drive(_databricks_runner(databricks, token="dapi-wrong"), Clock())
    assert databricks.runs == {}


def test_the_double_rejects_what_the_api_would() -> None:
    from backfill_local.databricks_double import InvalidRequest, check_submit

    good = {
        "run_name": "x",
        "tasks": [
            {"task_key": "t", "new_cluster": {"spark_version": "v", "node_type_id": "n", "num_workers": 1}}
        ],
    }  # noqa: E501
    check_submit(good)
    with pytest.raises(InvalidRequest, match="unknown fields"):
        check_submit({**good, "cluster": {}})
    with pytest.raises(InvalidRequest, match="does not follow SubmitTask"):
        check_submit({"tasks": [{"task_key": "t", "new_clusterr": {}}]})
    with pytest.raises(InvalidRequest, match="needs spark_version"):
        check_submit({"tasks": [{"task_key": "t", "new_cluster": {"num_workers": 1}}]})


def test_extra_submit_parameters_reach_both_aws_runners() -> None:
    artifacts = Artifacts(
        entry_point="s3://a/job.py",
        py_files=("s3://a/p.zip",),
        submit_parameters="--archives s3://a/venv.tar.gz#environment",
    )  # noqa: E501
    step_argv = EmrRunner(client=None, artifacts=artifacts, profile=PROFILES.get("large")).step(SPEC)[
        "HadoopJarStep"
    ]["Args"]
    assert step_argv[3:7] == ["--py-files", "s3://a/p.zip", "--archives", "s3://a/venv.tar.gz#environment"]


def test_profile_description_for_the_status_record() -> None:
    from backfill_runtime.runners.select import describe_profile

    def described(name: str) -> str:
        return describe_profile({"name": name, **PROFILES.get(name).model_dump(mode="json")})

    assert described("medium") == (
        "profile medium on emr_serverless (driver 4 vCPU/16 GB, executors 4 vCPU/16 GB, max 64 vCPU/256 GB, $4.85/h)"
    )
    assert described("large") == "profile large on emr (3 instance groups, scaling 3..20 Instances, $9.8/h)"
    assert (
        described("databricks-medium")
        == "profile databricks-medium on databricks (2..8 x i3.xlarge, 15.4.x-scala2.12, $6/h)"
    )
    assert described("small") == "profile small on local"


def test_a_stopped_task_cancels_its_run_first(aws: None) -> None:
    """Airflow stops a task with SIGINT (KeyboardInterrupt) before SIGTERM/SIGKILL: the run
    on the service is cancelled on the way out."""
    runner, application_id = _serverless()
    _start_in(runner, application_id, "RUNNING")

    def interrupted(_: float) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_to_completion(runner, SPEC, timeout_seconds=3600, sleep=interrupted)
    assert _serverless_runs(application_id)[0].state == "CANCELLED"
