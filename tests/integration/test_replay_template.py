"""The replay part of the SAM template: event source, queues, alarm, table, least privilege
and environment (shape only; `sam validate --lint` and `sam build` run in test_sam.py)."""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

import pytest

from tests.support.aws import template
from tests.support.configs import REPO_ROOT as REPO


@pytest.fixture(scope="module")
def resources() -> dict[str, Any]:
    return template()["Resources"]


def statements(function: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for policy in function["Properties"]["Policies"]:
        if "If" in policy:
            policy = policy["If"][1]
        found.extend(policy["Statement"])
    return found


def test_replay_resources_exist_only_when_replay_is_configured(resources):
    replay = [name for name in resources if "Replay" in name or name == "IdempotencyTable"]
    assert len(replay) == 7  # DLQ, queue, alarm, table, trigger's policy, function, log group
    assert all(resources[name].get("Condition") == "ReplayEnabled" for name in replay)


def test_event_source_reports_item_failures_and_caps_concurrency(resources):
    event = resources["ReplayFunction"]["Properties"]["Events"]["ReplayTasks"]
    assert event["Type"] == "SQS"
    assert event["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert event["Properties"]["ScalingConfig"] == {"MaximumConcurrency": {"Ref": "ReplayMaxConcurrency"}}
    assert event["Properties"]["Queue"] == {"GetAtt": "ReplayTasksQueue.Arn"}


def test_tasks_queue_redrives_to_an_alarmed_dlq(resources):
    queue = resources["ReplayTasksQueue"]["Properties"]
    assert queue["RedrivePolicy"] == {
        "deadLetterTargetArn": {"GetAtt": "ReplayTasksDeadLetterQueue.Arn"},
        "maxReceiveCount": {"Ref": "ReplayMaxReceiveCount"},
    }
    timeout = resources["ReplayFunction"]["Properties"]["Timeout"]
    assert queue["VisibilityTimeout"] >= 6 * timeout
    alarm = resources["ReplayTasksDeadLetterAlarm"]["Properties"]
    assert alarm["Dimensions"] == [
        {"Name": "QueueName", "Value": {"GetAtt": "ReplayTasksDeadLetterQueue.QueueName"}}
    ]
    table = resources["IdempotencyTable"]["Properties"]
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expiration", "Enabled": True}


def test_policies_are_least_privilege(resources):
    granted = {s["Sid"]: s for s in statements(resources["ReplayFunction"])}
    assert all(s["Resource"] != "*" and "*" not in str(s["Action"]) for s in granted.values())
    assert granted["SendToAllowlistedTargets"]["Resource"] == {"Ref": "ReplayTargetQueueArns"}
    assert granted["ReadArchive"]["Action"] == "s3:GetObject"
    assert granted["IdempotencyTable"]["Resource"] == {"GetAtt": "IdempotencyTable.Arn"}
    trigger = resources["TriggerSendsReplayTasksPolicy"]["Properties"]
    assert trigger["Roles"] == [{"Ref": "TriggerFunctionRole"}]
    (statement,) = trigger["PolicyDocument"]["Statement"]
    assert (statement["Action"], statement["Resource"]) == (
        "sqs:SendMessage",
        {"GetAtt": "ReplayTasksQueue.Arn"},
    )


def test_environment_is_what_the_settings_read(resources):
    from backfill_orchestrator.replay import settings as replay_settings
    from backfill_orchestrator.settings import DeploymentSettings

    variables = set(resources["ReplayFunction"]["Properties"]["Environment"]["Variables"])
    text = DeploymentSettings.from_env.__doc__ + replay_settings.__doc__
    documented = set(re.findall(r"[A-Z][A-Z0-9_]+", text))
    assert variables - {"POWERTOOLS_SERVICE_NAME"} <= documented, variables - documented
    local = set(json.loads((REPO / "events" / "env.json").read_text())["ReplayFunction"])
    assert variables <= local | {"MWAA_ENVIRONMENT"}, variables - local


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_the_built_replay_function_imports_under_python_3_12(sam_build, tmp_path):
    """The ReplayFunction of the session's `sam build` (function and layer): its handler module
    and the powertools batch utility import under the Lambda runtime's Python."""
    prefix, env, build_dir = sam_build.lambda_prefix, sam_build.env, sam_build.build_dir
    probe = f"""
import sys
sys.path[:0] = [{str(build_dir / "SharedLayer" / "python")!r}, {str(build_dir / "ReplayFunction")!r}]
assert sys.version_info[:2] == (3, 12), sys.version
import app
from backfill_orchestrator.replay import handler as replay_handler
assert callable(app.handler) and app.handler is replay_handler.handler and replay_handler.processor is not None
from backfill_orchestrator.replay.task import parse_task
task = parse_task(open({str(REPO / "events" / "replay_task_direct.json")!r}).read().split('"task": ')[1].rsplit(',', 1)[0])
print("replay ok", task.task_id)
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
    assert "replay ok replay-orders-june-98e707f2/order_status/2021-06-01/10" in result.stdout
