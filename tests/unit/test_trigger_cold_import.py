"""The trigger handler's cold import: no X-Ray SDK unless tracing is on (building a powertools
Tracer imports it, 150-175 ms, even disabled), and nothing only some uploads need (control
documents, replay dispatch). Each case imports in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from backfill_orchestrator.tracing import tracing_enabled

REPO = Path(__file__).resolve().parents[2]
DEFERRED = [
    "aws_xray_sdk",
    "backfill_orchestrator.trigger.control_documents",
    "backfill_orchestrator.trigger.control_actions",
    "backfill_orchestrator.trigger.reconcile",
    "backfill_orchestrator.replay.dispatch",
]


def imported_after_handler(**env: str) -> dict[str, object]:
    """Import functions/trigger/app.py in a fresh interpreter; which DEFERRED modules it loaded."""
    code = (
        "import json, sys; import app; "
        f"print(json.dumps({{'loaded': [m for m in {DEFERRED!r} if m in sys.modules], "
        "'tracer': type(sys.modules['backfill_orchestrator.trigger.handler'].tracer).__name__}))"
    )
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("POWERTOOLS_TRACE", "LAMBDA_TASK_ROOT", "AWS_SAM_LOCAL"))
    }
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO / "functions" / "trigger",
        env={**base, "AWS_DEFAULT_REGION": "us-east-1", **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_tracing_disabled_imports_no_xray_sdk_and_nothing_deferred() -> None:
    seen = imported_after_handler(POWERTOOLS_TRACE_DISABLED="true", LAMBDA_TASK_ROOT="/var/task")
    assert seen == {"loaded": [], "tracer": "NoneType"}


def test_tracing_on_in_lambda_builds_the_tracer() -> None:
    seen = imported_after_handler(LAMBDA_TASK_ROOT="/var/task")
    assert seen == {"loaded": ["aws_xray_sdk"], "tracer": "Tracer"}


@pytest.mark.parametrize(
    ("environ", "enabled"),
    [
        ({"LAMBDA_TASK_ROOT": "/var/task"}, True),
        ({"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "true"}, False),
        ({"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "1"}, False),
        ({"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "false"}, True),
        ({"LAMBDA_TASK_ROOT": "/var/task", "AWS_SAM_LOCAL": "true"}, False),
        ({"LAMBDA_TASK_ROOT": "/var/task", "AWS_CHALICE_CLI_MODE": "true"}, False),
        ({}, False),
    ],
)
def test_tracing_enabled_follows_powertools_rule(environ: dict[str, str], enabled: bool) -> None:
    from aws_lambda_powertools import Tracer

    assert tracing_enabled(environ) is enabled
    # The same answer as powertools' own check, which reads the process environment.
    with pytest.MonkeyPatch.context() as patch:
        for name in (
            "LAMBDA_TASK_ROOT",
            "POWERTOOLS_TRACE_DISABLED",
            "AWS_SAM_LOCAL",
            "AWS_CHALICE_CLI_MODE",
        ):
            patch.delenv(name, raising=False)
        for name, value in environ.items():
            patch.setenv(name, value)
        assert (not Tracer._is_tracer_disabled()) is enabled
