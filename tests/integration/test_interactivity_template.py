"""The template's Slack interactivity pieces (fast): endpoint, least privilege, who may write
control documents and the policy, and the environment the function reads."""

from __future__ import annotations

import json
import re
from typing import Any

from backfill_orchestrator.settings import InteractivitySettings
from tests.support.aws import template
from tests.support.configs import REPO_ROOT


def _resources() -> dict[str, Any]:
    return template()["Resources"]


def test_function_sits_behind_an_http_api_post() -> None:
    function = _resources()["SlackInteractivityFunction"]
    assert function["Condition"] == "SlackInteractivityEnabled"
    (event,) = function["Properties"]["Events"].values()
    assert event == {"Type": "HttpApi", "Properties": {"Path": "/slack/interactivity", "Method": "POST"}}
    assert "SlackInteractivityUrl" in template()["Outputs"]


def test_function_policy_is_least_privilege() -> None:
    policies = _resources()["SlackInteractivityFunction"]["Properties"]["Policies"]
    statements = [s for p in policies if "Statement" in p for s in p["Statement"]]
    statements += [s for p in policies if "If" in p for s in p["If"][1]["Statement"]]
    actions = {s["Sid"]: s["Action"] for s in statements}
    assert actions == {
        "WriteControlDocuments": "s3:PutObject",
        "ReadStatus": "dynamodb:GetItem",
        "RememberRequestSignatures": "dynamodb:PutItem",
        "SigningSecret": "secretsmanager:GetSecretValue",
        "ReadPolicyDocument": "s3:GetObject",
        "ReadPolicyParameter": "ssm:GetParameter",
        "SlackSecret": "secretsmanager:GetSecretValue",
    }
    control = next(s for s in statements if s["Sid"] == "WriteControlDocuments")
    assert control["Resource"] == {"Sub": "arn:${AWS::Partition}:s3:::${ConfigBucketName}/${ControlPrefix}*"}
    assert all("*" != s["Resource"] for s in statements)


def test_only_the_orchestrator_writes_control_documents_and_only_admins_the_policy() -> None:
    statements = _resources()["ConfigBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    control = next(s for s in statements if s.get("Sid") == "OnlyOrchestratorWritesControlDocuments")
    assert control["Effect"] == "Deny" and control["Principal"] == "*"
    assert control["Condition"]["ArnNotLike"]["aws:PrincipalArn"] == [
        {"GetAtt": "TriggerFunctionRole.Arn"},
        {
            "If": [
                "SlackInteractivityEnabled",
                {"GetAtt": "SlackInteractivityFunctionRole.Arn"},
                {"Ref": "AWS::NoValue"},
            ]
        },
    ]
    (policy_key,) = [s["If"][1] for s in statements if "If" in s and s["If"][0] == "ProtectPolicyKey"]
    assert policy_key["Condition"]["ArnNotLike"]["aws:PrincipalArn"] == {"Ref": "PolicyAdminArns"}


def test_requests_table_expires_its_items() -> None:
    table = _resources()["SlackRequestsTable"]["Properties"]
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert table["KeySchema"] == [{"AttributeName": "id", "KeyType": "HASH"}]


def test_environment_provides_what_the_function_reads() -> None:
    from backfill_orchestrator.settings import interactivity

    read = set(re.findall(r"\b[A-Z][A-Z_]{3,}\b", interactivity.__doc__ or "")) - {
        "POLICY_CACHE_SECONDS",
        "SECRETS_MAX_AGE_SECONDS",
        "SLACK_RESPONSE_URL_PREFIX",
    }
    variables = set(_resources()["SlackInteractivityFunction"]["Properties"]["Environment"]["Variables"])
    assert read <= variables, read - variables
    local = json.loads((REPO_ROOT / "events" / "env.json").read_text())["SlackInteractivityFunction"]
    InteractivitySettings.from_env(local)  # the sam local invoke variables make a usable function
