"""The SAM template: its shape (fast), then `sam validate --lint`, `sam build` and an import of
the built layer under the Lambda runtime's Python (slow; needs SAM_CLI and
LAMBDA_PYTHON_PREFIX, which `make test` sets)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.aws import TEMPLATE
from tests.support.aws import template as read_template
from tests.support.configs import REPO_ROOT

REPO = REPO_ROOT


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return read_template()


def test_config_bucket_is_encrypted_versioned_private_and_tls_only(template: dict[str, Any]) -> None:
    bucket = template["Resources"]["ConfigBucket"]["Properties"]
    assert bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"]
    assert bucket["VersioningConfiguration"] == {"Status": "Enabled"}
    assert (
        all(bucket["PublicAccessBlockConfiguration"].values())
        and len(bucket["PublicAccessBlockConfiguration"]) == 4
    )
    statements = template["Resources"]["ConfigBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    (statement,) = [s for s in statements if s.get("Sid") == "DenyInsecureTransport"]
    assert statement["Effect"] == "Deny" and statement["Condition"] == {
        "Bool": {"aws:SecureTransport": "false"}
    }


def test_layer_and_runtime_are_python_3_12(template: dict[str, Any]) -> None:
    assert template["Globals"]["Function"]["Runtime"] == "python3.12"
    layer = template["Resources"]["SharedLayer"]
    assert layer["Properties"]["ContentUri"] == "layers/shared/"
    assert layer["Metadata"] == {"BuildMethod": "python3.12"}


def test_function_has_its_s3_events_dlq_and_retries(template: dict[str, Any]) -> None:
    function = template["Resources"]["TriggerFunction"]["Properties"]
    # UploadEventSource picks the route: S3 notifications (one per suffix) or EventBridge.
    condition, via_eventbridge, via_s3 = template["Resources"]["ConfigBucket"]["Properties"][
        "NotificationConfiguration"
    ]["If"]
    assert condition == "UploadsViaEventBridge"
    assert template["Conditions"][condition] == {"Equals": [{"Ref": "UploadEventSource"}, "EventBridge"]}
    assert via_eventbridge == {"EventBridgeConfiguration": {"EventBridgeEnabled": True}}
    suffixes = sorted(
        rule["Value"]
        for notification in via_s3["LambdaConfigurations"]
        for rule in notification["Filter"]["S3Key"]["Rules"]
        if rule["Name"] == "suffix"
    )
    assert suffixes == [".json", ".json", ".yaml", ".yaml", ".yml", ".yml"]  # configs and control documents
    prefixes = sorted(
        rule["Value"]["Ref"]
        for notification in via_s3["LambdaConfigurations"]
        for rule in notification["Filter"]["S3Key"]["Rules"]
        if rule["Name"] == "prefix"
    )
    assert prefixes == ["ControlPrefix"] * 3 + ["IncomingPrefix"] * 3
    assert all(n["Function"] == {"GetAtt": "TriggerFunction.Arn"} for n in via_s3["LambdaConfigurations"])
    assert template["Resources"]["ConfigBucket"]["DependsOn"] == "TriggerInvokeFromS3Permission"
    invoke = function["EventInvokeConfig"]
    assert invoke["MaximumRetryAttempts"] == 2
    assert invoke["DestinationConfig"]["OnFailure"]["Type"] == "SQS"
    alarm = template["Resources"]["TriggerDeadLetterAlarm"]["Properties"]
    assert alarm["MetricName"] == "ApproximateNumberOfMessagesVisible"


def test_the_eventbridge_route_filters_on_the_incoming_prefix_and_keeps_failures(
    template: dict[str, Any],
) -> None:
    assert template["Parameters"]["UploadEventSource"]["AllowedValues"] == ["S3Notification", "EventBridge"]
    rule = template["Resources"]["TriggerUploadRule"]
    assert rule["Condition"] == "UploadsViaEventBridge"
    pattern = rule["Properties"]["EventPattern"]
    assert pattern["source"] == ["aws.s3"] and pattern["detail-type"] == ["Object Created"]
    assert pattern["detail"]["object"]["key"] == [
        {"prefix": {"Ref": "IncomingPrefix"}},
        {"prefix": {"Ref": "ControlPrefix"}},
    ]
    assert pattern["detail"]["bucket"]["name"] == [{"Ref": "ConfigBucketName"}]
    (target,) = rule["Properties"]["Targets"]
    assert target["Arn"] == {"GetAtt": "TriggerFunction.Arn"}
    assert target["DeadLetterConfig"]["Arn"] == {"GetAtt": "TriggerDeadLetterQueue.Arn"}
    permission = template["Resources"]["TriggerInvokeFromEventBridgePermission"]
    assert permission["Condition"] == "UploadsViaEventBridge"
    assert permission["Properties"]["SourceArn"] == {"GetAtt": "TriggerUploadRule.Arn"}


def test_malformed_events_and_the_on_failure_queue_have_alarms(template: dict[str, Any]) -> None:
    resources = template["Resources"]
    malformed = resources["TriggerMalformedEventsAlarm"]["Properties"]
    assert malformed["MetricName"] == "MalformedEvents" and malformed["Namespace"] == {
        "Ref": "MetricsNamespace"
    }
    # powertools Metrics adds the service dimension: the alarm must name the same one.
    service = template["Globals"]["Function"]["Environment"]["Variables"]["POWERTOOLS_SERVICE_NAME"]
    assert malformed["Dimensions"] == [{"Name": "service", "Value": service}]
    assert (
        "POWERTOOLS_SERVICE_NAME"
        not in resources["TriggerFunction"]["Properties"]["Environment"]["Variables"]
    )
    dead_letters = resources["TriggerDeadLetterAlarm"]["Properties"]
    assert dead_letters["Dimensions"][0]["Value"] == {"GetAtt": "TriggerDeadLetterQueue.QueueName"}


def test_function_environment_provides_what_settings_read(template: dict[str, Any]) -> None:
    import re

    from backfill_orchestrator.settings import DeploymentSettings

    variables = set(template["Resources"]["TriggerFunction"]["Properties"]["Environment"]["Variables"])
    read = set(re.findall(r"\b[A-Z][A-Z_]{3,}\b", DeploymentSettings.from_env.__doc__)) - {
        "SECRETS_MAX_AGE_SECONDS",
        "JSON",
    }
    assert read <= variables, read - variables
    # events/env.json (for `sam local invoke`) sets the same names, pointed at local endpoints.
    local = set(json.loads((REPO / "events" / "env.json").read_text())["TriggerFunction"])
    optional = {
        "INCOMING_PREFIX",
        "RESULTS_PREFIX",
        "BACKFILLS_PREFIX",
        "ALLOWED_NAMESPACES",
        "REPLAY_TARGETS",
        "MARQUEZ_API_KEY_SECRET_ID",
        "SPARK_PROFILES",
        "SPARK_PROFILES_URI",
        "OPENLINEAGE_TRANSPORT",
        "OPENLINEAGE_NAMESPACE",
    }
    assert read - optional <= local, (read - optional) - local


def test_the_trigger_reads_uploads_by_version_and_keeps_durations_warm(template: dict[str, Any]) -> None:
    """The DAG run's config_uri names the upload's version (s3://bucket/incoming/...?versionId=);
    the config bucket keeps versions, and the function may read them (GetObjectVersion)."""
    function = template["Resources"]["TriggerFunction"]["Properties"]
    statements = {
        statement["Sid"]: statement
        for policy in function["Policies"]
        if isinstance(policy, dict)
        for statement in policy.get("Statement", [])
    }
    assert "s3:GetObjectVersion" in statements["ReadIncomingConfigs"]["Action"]
    assert (
        template["Resources"]["ConfigBucket"]["Properties"]["VersioningConfiguration"]["Status"] == "Enabled"
    )
    assert function["Environment"]["Variables"]["HISTORY_CACHE_SECONDS"] == "600"


def test_the_trigger_may_publish_only_where_the_stack_names(template: dict[str, Any]) -> None:
    """Safe publish's controls run in the trigger: it may write the publish bucket, the table data
    buckets it is given and the Glue resources it is given, each only when set, and nothing else."""
    function = template["Resources"]["TriggerFunction"]["Properties"]
    by_condition = {
        policy["If"][0]: policy["If"][1]["Statement"]
        for policy in function["Policies"]
        if isinstance(policy, dict) and "If" in policy
    }
    root_objects, root_listing = by_condition["HasPublishBucket"]
    assert root_objects["Action"] == ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"]
    assert root_objects["Resource"] == {"Sub": "arn:${AWS::Partition}:s3:::${PublishBucketName}/*"}
    assert root_listing["Resource"] == {"Sub": "arn:${AWS::Partition}:s3:::${PublishBucketName}"}
    data_objects, data_listing = by_condition["HasWarehouseBuckets"]
    assert data_listing["Resource"] == {"Ref": "WarehouseBucketArns"}
    # the Split/Join gives each bucket ARN with "/*": evaluate it as CloudFormation would
    split = data_objects["Resource"]["Split"]
    inner = split[1]["Join"][1]
    buckets = ["arn:aws:s3:::warehouse-a", "arn:aws:s3:::warehouse-b"]
    joined = inner[0]["Join"][0].join(buckets) + inner[1]
    assert joined.split(split[0]) == ["arn:aws:s3:::warehouse-a/*", "arn:aws:s3:::warehouse-b/*"]
    (glue,) = by_condition["PublishViaGlue"]
    assert glue["Resource"] == {"Ref": "PublishGlueResourceArns"}
    assert all(
        action.startswith("glue:") and "Partition" in action or action == "glue:GetTable"
        for action in glue["Action"]
    )
    assert not any(
        action.endswith("*")
        for statements in by_condition.values()
        for s in statements
        for action in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    )
    conditions = template["Conditions"]
    assert conditions["PublishViaGlue"]["And"][0] == {"Equals": [{"Ref": "PublishCatalog"}, "glue"]}
    assert template["Parameters"]["PublishCatalog"]["AllowedValues"] == ["none", "glue"]
    assert function["Environment"]["Variables"]["PUBLISH_CATALOG"] == {"Ref": "PublishCatalog"}


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_sam_validate_build_and_import_the_layer_under_python_3_12(sam_build: Any, tmp_path: Path) -> None:
    sam, prefix, env, build_dir = sam_build.sam, sam_build.lambda_prefix, sam_build.env, sam_build.build_dir
    validate = subprocess.run(
        [sam, "validate", "--lint", "--template", str(TEMPLATE), "--region", "us-east-1"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert validate.returncode == 0, validate.stdout + validate.stderr
    # `sam build` itself ran once for the session (tests/integration/conftest.py: sam_build).

    layer = build_dir / "SharedLayer" / "python"
    native = list((layer / "pydantic_core").glob("_pydantic_core.*.so"))
    assert native and all("cpython-312" in path.name for path in native), native
    probe = f"""
import sys
sys.path[:0] = [{str(layer)!r}, {str(build_dir / "TriggerFunction")!r}]
assert sys.version_info[:2] == (3, 12), sys.version
import pydantic_core
assert pydantic_core.__file__.startswith({str(layer)!r}), pydantic_core.__file__
from backfill_orchestrator.config import InvalidConfigError, parse_config
config = parse_config(open({str(REPO / "examples" / "minimal-batch.yaml")!r}, "rb").read(), source="minimal-batch.yaml")
assert config.name == "etl-orders-0604"
try:
    parse_config(b"version: 2", source="bad.yaml")
except InvalidConfigError as error:
    assert any(issue.location == "version" for issue in error.issues)
else:
    raise AssertionError("an invalid config validated")
import app
assert callable(app.handler)
from backfill_orchestrator.interactivity.handler import handler as slack_handler  # slack_sdk is in the layer
assert callable(slack_handler)
print("layer ok", pydantic_core.__version__)
"""
    result = subprocess.run(
        [f"{prefix}/bin/python3.12", "-I", "-c", probe],
        cwd=tmp_path,
        env={"PATH": env["PATH"], "AWS_DEFAULT_REGION": "us-east-1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "layer ok" in result.stdout
